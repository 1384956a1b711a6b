"""Points grouped by an integer code (a batch's series numbered first seen first): one stable
sort instead of a pass per group, shared by the store and the node's parts."""

from __future__ import annotations

import numpy as np

__all__ = ["code_groups"]


def code_groups(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The indices of points grouped by code (``0 <= code < size``), each group in order, and
    where each code's group starts in them, then the end (``size + 1`` bounds; a code without
    points has an empty group).

    Examples
    --------
    >>> order, bounds = code_groups(np.array([1, 0, 1, 1]), 3)
    >>> order.tolist(), bounds.tolist()
    ([1, 0, 2, 3], [0, 1, 4, 4])
    """
    small = np.uint16 if size < 2**16 else np.int64  # stable sort of uint16 is radix
    order = np.argsort(codes.astype(small), kind="stable")
    bounds = np.zeros(size + 1, dtype=np.intp)
    np.cumsum(np.bincount(codes, minlength=size), out=bounds[1:])
    return order, bounds
