"""The weights of a partition's linear aggregates ``A = Σ a_i S_i`` (Eq. 2), one sparse row per
query in registration order, with ``a_i²`` (for ``σ_A``, Eq. 6) and ``|a_i|`` (for ``ε_intr``
and "does the query touch this stream") derived on the same sparsity pattern, and each
stream's largest ``|a_i|`` (a cheap bound for the jump test).

Registering Q queries costs O(Q): new rows wait in a list and join the matrix in one block at
the next :meth:`QueryWeights.matrix`. A host may pickle the partition every batch, so the
derived matrices are not pickled (they are rebuilt from ``a_i`` in one pass over its data).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

__all__ = ["QueryWeights"]


class QueryWeights:
    """Sparse weight rows of the queries, appended and removed by row.

    Examples
    --------
    >>> qw = QueryWeights()
    >>> qw.append({0: 0.5, 2: -1.0})
    >>> qw.append({1: 2.0})
    >>> qw.matrix(3).toarray().tolist()
    [[0.5, 0.0, -1.0], [0.0, 2.0, 0.0]]
    >>> qw.squared.toarray()[0].tolist(), qw.absolute.toarray()[0].tolist()
    ([0.25, 0.0, 1.0], [0.5, 0.0, 1.0])
    >>> qw.column_max.tolist()
    [0.5, 2.0, 1.0]
    >>> qw.remove(0)
    >>> qw.matrix(3).toarray().tolist()
    [[0.0, 2.0, 0.0]]
    """

    def __init__(self) -> None:
        self.w: sp.csr_array | None = None  # a_i, rows of the queries built so far
        self.squared: sp.csr_array | None = None  # a_i², cached for Eq. 6
        self.absolute: sp.csr_array | None = None  # |a_i|
        self.column_max = np.zeros(0)  # ≥ max over rows of |a_i|, per stream
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # (streams, weights), new rows
        self._built = 0  # rows already in ``w``

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "squared": None, "absolute": None, "column_max": None}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.column_max = np.zeros(0)
        if self.w is not None:
            self.squared, self.absolute = _derived(self.w)
            self.column_max = _column_max(self.absolute)

    def append(self, weights: Mapping[int, float]) -> None:
        """Add a row for one more query (zero weights dropped)."""
        cols = np.fromiter(weights.keys(), dtype=np.int64, count=len(weights))
        w = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
        self._pending.append((cols[w != 0], w[w != 0]))

    def remove(self, r: int) -> None:
        """Drop row ``r``; the rows after it move up by one."""
        if r >= self._built:
            del self._pending[r - self._built]
            return
        assert self.w is not None and self.squared is not None and self.absolute is not None
        keep = np.ones(self._built, dtype=bool)
        keep[r] = False
        self.w, self.squared, self.absolute = self.w[keep], self.squared[keep], self.absolute[keep]
        self._built -= 1  # column_max stays an upper bound

    def matrix(self, n_streams: int) -> sp.csr_array:
        """The weights of every query, ``n_streams`` columns (new rows joined in one block)."""
        n = n_streams
        if self.w is not None and self.w.shape[1] != n:  # new streams: more columns
            self.w, self.squared, self.absolute = (
                sp.csr_array((m.data, m.indices, m.indptr), shape=(m.shape[0], n))
                for m in (self.w, self.squared, self.absolute)
            )
            self.column_max = np.r_[self.column_max, np.zeros(n - len(self.column_max))]
        if self.w is None or self._pending:
            new, self._pending = self._pending, []
            lens = np.fromiter((len(c) for c, _ in new), dtype=np.int64, count=len(new))
            cols = np.concatenate([c for c, _ in new]) if new else np.empty(0, np.int64)
            vals = np.concatenate([v for _, v in new]) if new else np.empty(0)
            indptr = np.r_[0, np.cumsum(lens)]
            block = sp.csr_array((vals, cols, indptr), shape=(len(new), n))
            block.sum_duplicates()
            w = block if self.w is None else sp.vstack([self.w, block], format="csr")
            self.w = sp.csr_array(w)
            self.squared, self.absolute = _derived(self.w)
            self.column_max = _column_max(self.absolute)
            self._built = self.w.shape[0]
        return self.w


def _column_max(absolute: sp.csr_array) -> np.ndarray:
    """Largest ``|a_i|`` of each column (0 where no row uses the stream)."""
    out = np.zeros(absolute.shape[1])
    np.maximum.at(out, absolute.indices, absolute.data)
    return out


def _derived(w: sp.csr_array) -> tuple[sp.csr_array, sp.csr_array]:
    """``a_i²`` (for Eq. 6) and ``|a_i|`` of a weight matrix, on its own sparsity pattern."""
    shape = w.shape
    return (
        sp.csr_array((w.data**2, w.indices, w.indptr), shape=shape),
        sp.csr_array((np.abs(w.data), w.indices, w.indptr), shape=shape),
    )
