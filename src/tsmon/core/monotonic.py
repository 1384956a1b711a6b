"""Monotonic queues over positions, vectorized per batch: the sliding maximum of a window."""

from __future__ import annotations

import numpy as np

from tsmon.core.sealed import decode_ts, encode_ts


class MaxQueue:
    """Positions whose value exceeds every later value in the window, with those values.

    Values strictly decrease along the queue, so the window maximum over ``[start, end)`` is the
    value of the first queued position at or after ``start``. A minimum is a ``MaxQueue`` fed
    negated values.

    Examples
    --------
    >>> q = MaxQueue()
    >>> q.push(np.array([5.0, 2.0, 4.0]), p0=0, keep_from=0); q.values.tolist()
    [5.0, 4.0]
    >>> q.held_max(np.array([0, 1, 3])).tolist()
    [5.0, 4.0, -inf]
    >>> q.push(np.array([1.0]), p0=3, keep_from=1); q.values.tolist()
    [4.0, 1.0]
    """

    def __init__(self) -> None:
        self.positions = np.empty(0, dtype=np.int64)
        self.values = np.empty(0, dtype=np.float64)

    def __getstate__(self) -> tuple[object, bytes]:
        """Compact (a Spark host pickles every node each batch): the positions, strictly
        increasing, encoded as timestamps are, and the values as raw bytes."""
        return encode_ts(self.positions), self.values.tobytes()

    def __setstate__(self, state: tuple[object, bytes]) -> None:
        self.positions = decode_ts(state[0])  # type: ignore[arg-type]
        self.values = np.frombuffer(state[1], dtype=np.float64).copy()

    def reset(self, values: np.ndarray, p0: int) -> None:
        """Queue the points ``values`` stored at positions ``p0, p0 + 1, ...`` from scratch."""
        self.positions = np.empty(0, dtype=np.int64)
        self.values = np.empty(0, dtype=np.float64)
        self.push(values, p0, keep_from=p0)

    def held_max(self, starts: np.ndarray) -> np.ndarray:
        """Maximum of the queued points at or after each position in ``starts`` (-inf where
        none): with the maximum of a window's new points, the window's maximum."""
        idx = np.searchsorted(self.positions, starts, side="left")
        queued = np.concatenate((self.values, [-np.inf]))
        return queued[np.minimum(idx, len(self.values))]

    def push(self, values: np.ndarray, p0: int, keep_from: int) -> None:
        """Append the points at positions ``p0 ...`` and drop those before ``keep_from``."""
        if len(values) == 0:
            return
        skip = min(max(keep_from - p0, 0), len(values) - 1)  # points leaving at once: not queued
        values, p0 = values[skip:], p0 + skip
        later_max = np.maximum.accumulate(values[::-1])[::-1]
        dominant = values > np.concatenate((later_max[1:], [-np.inf]))
        new_pos = dominant.nonzero()[0] + p0
        new_pos = new_pos[new_pos >= keep_from]
        batch_max = later_max[0]
        stays_above = int(np.searchsorted(-self.values, -batch_max, side="left"))
        first_kept = int(np.searchsorted(self.positions, keep_from, side="left"))
        old = slice(first_kept, max(first_kept, stays_above))
        self.positions = np.concatenate((self.positions[old], new_pos))
        self.values = np.concatenate((self.values[old], values[new_pos - p0]))
