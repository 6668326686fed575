"""The one import of numba: a clear error when the ``[vector]`` extra is missing."""

from __future__ import annotations

try:
    import numba
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "bergen_env.vector needs numba: install the extra with `pip install 'bergen_env[vector]'` "
        "(or `pip install numba`)"
    ) from exc

#: ``@njit`` with the project's settings: compiled at first call, cached on disk next to the
#: module (so a second process loads the machine code instead of compiling), no Python objects.
njit = numba.njit(cache=True, nogil=True)
#: The same, inlined into its callers at the Numba IR level: for the small functions of the
#: per-step path, where a call's argument handling costs more than the function's body.
njit_inline = numba.njit(cache=True, nogil=True, inline="always")

__all__ = ["njit", "njit_inline", "numba"]
