"""The numba settings of the compiled kernels (``bergen_env.vector._numba``): kernels without
reference counting cannot allocate, and ordinary kernels they call keep the right to."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba.core.errors import TypingError  # noqa: E402

from bergen_env.vector._numba import njit, njit_borrowed  # noqa: E402


@njit
def _allocating_sum(n):
    return np.zeros(n).sum() + n


@njit_borrowed
def _borrowed_caller(n):
    return _allocating_sum(n)


@njit_borrowed
def _borrowed_allocation(n):
    return np.zeros(n).sum()


@njit_borrowed
def _borrowed_writer(out):
    for i in range(out.shape[0]):
        out[i] = 2 * i


def test_a_borrowed_kernel_may_call_one_that_allocates() -> None:
    # numba passes its reference-counting setting down to the functions a kernel calls unless
    # they set their own: ``njit`` sets it, so this compiles
    assert _borrowed_caller(3) == 3.0


def test_a_borrowed_kernel_that_allocates_fails_to_compile() -> None:
    with pytest.raises(TypingError, match="empty"):
        _borrowed_allocation(3)


def test_a_borrowed_kernel_writes_into_the_callers_array() -> None:
    out = np.zeros(4, dtype=np.int64)
    _borrowed_writer(out)
    assert out.tolist() == [0, 2, 4, 6]
