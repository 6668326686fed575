"""CPU time of this process and the children it has waited for, for benchmarks whose work runs
in worker processes (a pool shut down before the reading counts in full)."""

from __future__ import annotations

import resource


def waited_cpu() -> float:
    """User and system CPU seconds of this process and its waited-for children (rusage)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
