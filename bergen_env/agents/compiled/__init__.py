"""The agents' policies compiled with numba (the ``[vector]`` extra) on the batched kernels of
:mod:`bergen_env.vector.kernels`: the same choices and values as the Python code, float for float.

- :mod:`~bergen_env.agents.compiled.heuristic_policy`: the ``heuristic`` agent's choice.
- :mod:`~bergen_env.agents.compiled.playouts`: ``search``'s playouts of one determinization
  (``playouts="compiled"``).
- :mod:`~bergen_env.agents.compiled.belief_weights`: ``search``'s ``belief=1`` deal weights and
  the whole weighted search.
- :mod:`~bergen_env.agents.compiled.opponent_moves`: the batched learner env's compiled opponents.
- :mod:`~bergen_env.agents.compiled.heuristic_matches`: whole matches between heuristics with
  different weights (the weight tuner's evaluation).

Importing this package imports nothing; each module imports numba.
"""
