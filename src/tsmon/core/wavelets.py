"""Haar wavelets for SWAT (Bulut & Singh 2003, §2.2): transforms and the node merge ``DWT(R, L)``.

The averaging (unnormalised) Haar transform is used, as in the paper's Fig. 2 trace where a node
stores ``14/2``: one step maps a pair ``(x, y)`` to the average ``(x + y) / 2`` and the detail
``(x - y) / 2``. Samples are ordered by position back in time (index 0 = most recent), so the
first element of a pair is the more recent one, matching ``DWT(R_{l-1}, L_{l-1})`` in Fig. 3a.

Keeping the first ``k`` coefficients (the average and the ``k - 1`` coarsest details, ``k`` a
power of two) of a length-``n`` signal is exactly the piecewise-constant signal of its ``k``
block averages. SWAT nodes therefore store block averages (cheap to merge and to read) and
convert to coefficients only when shipped (:func:`haar_forward`) or received
(:func:`haar_inverse`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["haar_forward", "haar_inverse", "is_power_of_two", "merge_blocks"]


def is_power_of_two(n: int) -> bool:
    """Whether ``n`` is a positive integral power of two (1 counts).

    Examples
    --------
    >>> is_power_of_two(1024), is_power_of_two(12), is_power_of_two(0)
    (True, False, False)
    """
    return isinstance(n, (int, np.integer)) and n > 0 and (n & (n - 1)) == 0


def haar_forward(x: np.ndarray) -> np.ndarray:
    """Averaging Haar transform along the last axis: ``[average, coarsest detail, ..., finest]``.

    Why: these are the "wavelet coefficients" a SWAT node keeps and ships (§2.2); the first ``k``
    of them describe the node at ``k``-block resolution.

    Parameters
    ----------
    x : np.ndarray
        Samples, last axis of power-of-two length, index 0 the most recent.

    Returns
    -------
    np.ndarray
        Coefficients, same shape. Level ``j`` details occupy ``[2**j, 2**(j+1))``.

    Examples
    --------
    >>> haar_forward(np.array([4.0, 10.0, 6.0, 2.0]))  # average 22/4, then (7 - 4)/2, ...
    array([ 5.5,  1.5, -3. ,  2. ])
    """
    a = np.asarray(x, dtype=float)
    n = a.shape[-1]
    if not is_power_of_two(n):
        raise ValueError(f"haar_forward needs a power-of-two length, got {n}; pad or trim")
    details = []
    while a.shape[-1] > 1:
        recent, older = a[..., 0::2], a[..., 1::2]
        details.append((recent - older) / 2.0)
        a = (recent + older) / 2.0
    return np.concatenate([a, *reversed(details)], axis=-1)


def haar_inverse(c: np.ndarray, n: int | None = None) -> np.ndarray:
    """Inverse of :func:`haar_forward`, padding missing (finer) details with zeros.

    Why: Fig. 3b reconstructs a level-``l`` node by applying the inverse transform ``l + 1``
    times "and at each step a zero vector is used as the detail coefficient"; with ``k``
    kept coefficients and ``n > k`` this repeats each of the ``k`` block averages ``n / k`` times.

    Parameters
    ----------
    c : np.ndarray
        The first ``k`` coefficients along the last axis (``k`` a power of two).
    n : int, optional
        Output length, a power of two ``>= k``; default ``k``.

    Examples
    --------
    >>> c = haar_forward(np.array([4.0, 10.0, 6.0, 2.0]))
    >>> haar_inverse(c)
    array([ 4., 10.,  6.,  2.])
    >>> haar_inverse(c[:2], 4)  # two coefficients: the two half averages
    array([7., 7., 4., 4.])
    """
    c = np.asarray(c, dtype=float)
    k = c.shape[-1]
    n = k if n is None else n
    if not (is_power_of_two(k) and is_power_of_two(n) and n >= k):
        raise ValueError(f"haar_inverse needs powers of two with n >= k, got k={k}, n={n}")
    a = c[..., :1]
    width = 1
    while width < n:
        # Fig. 3b: past the kept coefficients, a zero vector is the detail coefficient
        d = c[..., width : 2 * width] if width < k else np.zeros_like(a)
        out = np.empty((*a.shape[:-1], 2 * width))
        out[..., 0::2] = a + d
        out[..., 1::2] = a - d
        a = out
        width *= 2
    return a


def merge_blocks(recent: np.ndarray, older: np.ndarray, k: int, how: str = "mean") -> np.ndarray:
    """``DWT(R_{l-1}, L_{l-1})`` of Fig. 3a on block summaries: the parent's ``k`` blocks.

    The children's blocks (last axis) are concatenated, recent first, and adjacent pairs are
    combined until ``k`` remain: averaged for block averages (equal to the first ``k`` Haar
    coefficients of the parent, §2.2), or min/max for the block ranges that give the error
    bounds.

    Parameters
    ----------
    recent, older : np.ndarray
        Blocks of the two children, same shape, last axis a power of two.
    k : int
        Blocks wanted, ``<= 2 * recent.shape[-1]``.
    how : {"mean", "min", "max"}
        How two adjacent blocks combine.

    Examples
    --------
    >>> merge_blocks(np.array([5.0]), np.array([13.0]), 1)  # Fig. 2(c): R_1 = (10/2 + 26/2) / 2
    array([9.])
    >>> merge_blocks(np.array([9.0]), np.array([13.0]), 1, "max")
    array([13.])
    """
    out = np.concatenate([recent, older], axis=-1)
    while out.shape[-1] > k:
        a, b = out[..., 0::2], out[..., 1::2]
        if how == "mean":
            out = (a + b) / 2.0
        elif how == "min":
            out = np.minimum(a, b)
        elif how == "max":
            out = np.maximum(a, b)
        else:
            raise ValueError(f"how must be 'mean', 'min' or 'max', got {how!r}")
    return out
