"""Sealed points: a run of a register's older points that never changes once made.

A register pickles its history as sealed runs of :data:`SEAL_POINTS` points plus the newer
points after them (:meth:`tsmon.core.register.Register.__getstate__`). A run stays the same
object from one pickle to the next, so a host that pickles every node each batch (the Spark
host) can store each run once, apart from the node, and pickle only a reference to it
(:mod:`tsmon.spark.history`): what a batch writes then grows with the new points, not with
the retained history. Pickled plainly, a run carries its points, as before.

Timestamps are encoded compactly: as their first value and a constant step, or as deltas in
the narrowest unsigned type that holds them (:func:`encode_ts`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SEAL_POINTS", "Sealed", "decode_ts", "encode_ts"]

SEAL_POINTS = 128
"""Points per sealed run. Per series, a batch rewrites the unsealed points (fewer than this)
and one reference per run: 128 minimizes their sum for an hour of 1 s points (~0.6 KB of
points and ~28 references of ~20 bytes), against ~32 KB when the whole hour is pickled."""

_DELTA_TYPES = (np.uint8, np.uint16, np.uint32)  # narrowest first


class Sealed:
    """The points at absolute positions ``[start, start + len)`` of one register, read-only."""

    __slots__ = ("start", "ts", "values")

    def __init__(self, start: int, ts: np.ndarray, values: np.ndarray) -> None:
        self.start = start
        self.ts = np.array(ts, dtype=np.int64)  # copies: the register's ring moves its points
        self.values = np.array(values, dtype=np.float64)
        self.ts.flags.writeable = False
        self.values.flags.writeable = False

    def __len__(self) -> int:
        return len(self.ts)

    @property
    def end(self) -> int:
        """One past the last position held."""
        return self.start + len(self.ts)

    def __reduce__(self) -> tuple[object, tuple[int, object, bytes]]:
        return _restore, (self.start, encode_ts(self.ts), self.values.tobytes())


def _restore(start: int, ts: tuple, values: bytes) -> Sealed:
    """A pickled run, its arrays read-only views as decoded (no copy: nothing else holds them)."""
    run = object.__new__(Sealed)
    run.start, run.ts, run.values = start, decode_ts(ts), np.frombuffer(values, dtype=np.float64)
    run.ts.flags.writeable = False
    return run


def encode_ts(ts: np.ndarray) -> tuple[int, int, int] | tuple[int, str, bytes]:
    """Strictly increasing timestamps as ``(first, step, n)`` when evenly spaced, else as
    ``(first, dtype, deltas)`` in the narrowest unsigned type that holds every delta."""
    if len(ts) == 0:
        return (0, 0, 0)
    deltas = np.diff(ts)
    if len(deltas) == 0 or (deltas == deltas[0]).all():
        return (int(ts[0]), int(deltas[0]) if len(deltas) else 0, len(ts))
    top = int(deltas.max())
    kind = next((t for t in _DELTA_TYPES if top <= np.iinfo(t).max), np.int64)
    return (int(ts[0]), np.dtype(kind).str, deltas.astype(kind).tobytes())


def decode_ts(code: tuple[int, int, int] | tuple[int, str, bytes]) -> np.ndarray:
    """The timestamps :func:`encode_ts` encoded, as int64."""
    first, how, rest = code
    if isinstance(how, int):  # evenly spaced: (first, step, n)
        return first + how * np.arange(rest, dtype=np.int64)  # type: ignore[operator]
    deltas = np.frombuffer(rest, dtype=how).astype(np.int64)  # type: ignore[arg-type]
    out = np.empty(len(deltas) + 1, dtype=np.int64)
    out[0] = first
    np.cumsum(deltas, out=out[1:])
    out[1:] += first
    return out
