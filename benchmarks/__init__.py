"""Throughput benchmarks of the engine, the envs and the agents: ``python -m benchmarks.run``."""
