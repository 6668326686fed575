"""The one import of numba: a clear error when the ``[vector]`` extra is missing."""

from __future__ import annotations

from bergen_env.errors import install_hint

try:
    import numba
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"bergen_env.vector needs numba, the [vector] extra: {install_hint('vector')}"
    ) from exc

#: ``@njit`` with the project's settings: compiled at first call, cached on disk next to the
#: module (so a second process loads the machine code instead of compiling), no Python objects.
#: Reference counting is on by name: numba otherwise inherits a caller's setting, and a kernel
#: called from a :data:`njit_borrowed` one would lose the right to allocate.
njit = numba.njit(cache=True, nogil=True, _nrt=True)
#: The same, inlined into its callers at the Numba IR level: for the small functions of the
#: per-step path, where a call's argument handling costs more than the function's body.
njit_inline = numba.njit(cache=True, nogil=True, inline="always")
#: ``@njit`` without numba's reference counting (its ``_nrt=False``), for the hot kernels: they
#: allocate nothing and only borrow the arrays their caller holds. With counting on, every array
#: argument of a function inlined at the Numba IR level (:data:`njit_inline`) is counted up on
#: entry and down on exit, an atomic operation each, and LLVM cannot remove the pairs across
#: branches: in a playout that was most of a move's cost. A kernel built with this decorator
#: that allocates an array fails to compile, loudly; callers allocate its scratch instead. It may
#: call :data:`njit` functions, which keep their counting (arrays it passes them have none).
njit_borrowed = numba.njit(cache=True, nogil=True, _nrt=False)
#: ``@njit`` whose ``numba.prange`` loops run their iterations on numba's threads (as many as
#: ``numba.set_num_threads`` allows).
njit_parallel = numba.njit(cache=True, nogil=True, parallel=True, _nrt=True)
#: :data:`njit_parallel` without reference counting (as :data:`njit_borrowed`), for the threaded
#: step: numba's ``prange`` loop of a function built with it counts no references either.
njit_parallel_borrowed = numba.njit(cache=True, nogil=True, parallel=True, _nrt=False)

try:
    #: ``random_interval(bit_generator, k)``: numpy's uniform draw in ``0..k``, the bounded draw
    #: of ``Generator.shuffle``; numba's own ``Generator.shuffle`` is made of it.
    from numba.np.random.random_methods import random_interval
except ImportError as exc:  # pragma: no cover - a numba without numpy Generator support
    raise ImportError(
        f"bergen_env.vector needs numba's numpy Generator support (numba>=0.60), found "
        f"numba {numba.__version__}"
    ) from exc

__all__ = [
    "njit",
    "njit_borrowed",
    "njit_inline",
    "njit_parallel",
    "njit_parallel_borrowed",
    "numba",
    "random_interval",
]
