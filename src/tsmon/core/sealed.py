"""Sealed points: a run of a register's older points that never changes once made.

A register pickles its history as sealed runs of :data:`SEAL_POINTS` points plus the newer
points after them (:meth:`tsmon.core.register.Register.__getstate__`). A run never changes
once made, so a host that pickles every node each batch (the Spark host) can store each run
once, apart from the node, and pickle only a reference to it (:mod:`tsmon.spark.history`):
what a batch writes then grows with the new points, not with the retained history. A register
holds its runs as one :class:`Runs`, which keeps the runs a host loaded as references until
one is read, and the runs sealed since as objects. Pickled plainly, a run carries its points.

Timestamps are encoded compactly: as their first value and a constant step, or as deltas in
the narrowest unsigned type that holds them (:func:`encode_ts`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence

import numpy as np

__all__ = ["SEAL_POINTS", "Runs", "Sealed", "decode_ts", "encode_ts", "read_record"]

SEAL_POINTS = 64
"""Points per sealed run. Per series, a batch rewrites the unsealed points (fewer than this)
and one reference per run. 64 rather than 128: with 30 points per series per batch, the
unsealed points' saw tooth then averages ~32 points, not ~64, and a Spark checkpoint grows by
~1.4× the input per batch instead of ~2.1×; the twice as many runs (56 per series for an hour
of 1 s points) cost little since a run's points are read only when needed (:func:`read_record`
reads its header; ``benchmarks/README.md``, "A source node's pickle")."""

_DELTA_TYPES = (np.uint8, np.uint16, np.uint32)  # narrowest first
_DELTA_CODES = {1: "|u1", 2: "<u2", 4: "<u4", 8: "<i8"}  # by size: encode_ts's dtypes
_HEADER = struct.Struct("<qIBqq")  # start, points, delta size (0: even), first ts, step


class Sealed:
    """The points at absolute positions ``[start, start + len)`` of one register, read-only.

    A run read from a host's file (:func:`read_record`) decodes its points only when they are
    first read (``ts``, ``values``): its header gives ``start``, the length and ``first`` (the
    first timestamp), all a register needs to place, search past and evict it."""

    __slots__ = ("_code", "_n", "_record", "_ts", "_values", "first", "start")

    def __init__(self, start: int, ts: np.ndarray, values: np.ndarray) -> None:
        self.start = start
        self._ts = np.array(ts, dtype=np.int64)  # copies: the register's ring moves its points
        self._values = np.array(values, dtype=np.float64)
        self._ts.flags.writeable = False
        self._values.flags.writeable = False
        self._n, self._record, self._code = len(self._ts), None, None
        self.first = int(self._ts[0]) if self._n else 0

    def __len__(self) -> int:
        return self._n

    @property
    def end(self) -> int:
        """One past the last position held."""
        return self.start + self._n

    @property
    def ts(self) -> np.ndarray:
        """The timestamps (read-only), decoded on first read."""
        if self._record is not None:
            self._decode()
        return self._ts

    @property
    def values(self) -> np.ndarray:
        """The values (read-only), a view of the host's file when read from one."""
        if self._record is not None:
            self._decode()
        return self._values

    def _decode(self) -> None:
        data, offset = self._record  # type: ignore[misc]
        _, n, size, first, step = _HEADER.unpack_from(data, offset)
        at = offset + _HEADER.size
        if size == 0:
            ts = decode_ts((first, step, n))
        else:
            ts = decode_ts((first, _DELTA_CODES[size], memoryview(data)[at : at + (n - 1) * size]))
            at += (n - 1) * size
        self._ts = ts
        self._values = np.frombuffer(data, dtype=np.float64, count=n, offset=at)
        self._ts.flags.writeable = False
        self._record = None

    def ts_code(self) -> tuple[int, int, int] | tuple[int, str, bytes]:
        """:func:`encode_ts` of the timestamps, computed once (a run never changes, and a host
        pickles it every batch)."""
        if self._code is None:
            self._code = encode_ts(self.ts)
        return self._code

    def __reduce__(self) -> tuple[object, tuple[int, object, bytes]]:
        return _restore, (self.start, self.ts_code(), self.values.tobytes())

    def record(self) -> bytes:
        """The run as a binary record (:func:`read_record`), what a host stores apart: a
        header, the timestamps' deltas unless evenly spaced, then the values' raw bytes."""
        first, how, rest = self.ts_code()
        if isinstance(how, int):  # evenly spaced: the step, no deltas
            size, step, deltas = 0, how, b""
        else:
            size, step, deltas = np.dtype(how).itemsize, 0, rest
        header = _HEADER.pack(self.start, self._n, size, first, step)
        return header + deltas + self.values.tobytes()  # type: ignore[operator]


class Runs:
    """A register's sealed runs: ``len(self)`` runs of ``size`` points each, one after the
    other from position ``origin``. Runs a host stored apart stay references (``refs``, ints)
    until one is asked for (:meth:`at`, through ``read``: :func:`read_record` on a host's
    file), so loading a register makes no object per run; the runs sealed since (``made``)
    follow them. Never changed: a register replaces its runs. Pickled plainly, each run
    carries its points; a host pickles the references instead (:mod:`tsmon.spark.history`,
    :meth:`refs_with`)."""

    __slots__ = ("made", "origin", "read", "refs", "size")

    def __init__(
        self,
        origin: int,
        size: int,
        refs: tuple[int, ...] = (),
        read: Callable[[int], Sealed] | None = None,
        made: Sequence[Sealed] = (),
    ) -> None:
        self.origin, self.size, self.refs, self.read, self.made = origin, size, refs, read, made

    def __len__(self) -> int:
        return len(self.refs) + len(self.made)

    @property
    def end(self) -> int:
        """One past the last position held."""
        return self.origin + len(self) * self.size

    def at(self, start: int) -> Sealed:
        """The run that starts at position ``start``."""
        k = (start - self.origin) // self.size
        stored = len(self.refs)
        return self.read(self.refs[k]) if k < stored else self.made[k - stored]  # type: ignore[misc]

    def __iter__(self) -> Iterator[Sealed]:
        return map(self.at, range(self.origin, self.end, self.size))

    def until(self, pos: int) -> Runs:
        """The runs that end at or before ``pos``."""
        return self._slice(0, min(max(pos - self.origin, 0) // self.size, len(self)))

    def after(self, pos: int) -> Runs:
        """The runs that hold a position at or after ``pos`` (``pos`` >= ``origin``)."""
        return self._slice(min((pos - self.origin) // self.size, len(self)), len(self))

    def _slice(self, i: int, j: int) -> Runs:
        stored = len(self.refs)
        made = self.made[max(i - stored, 0) : max(j - stored, 0)]
        return Runs(self.origin + i * self.size, self.size, self.refs[i:j], self.read, made)

    def sealing(self, made: Sequence[Sealed]) -> Runs:
        """These runs and ``made`` after them."""
        return Runs(self.origin, self.size, self.refs, self.read, (*self.made, *made))

    def refs_with(self, ref: Callable[[Sealed], int]) -> tuple[int, ...]:
        """Every run's reference: a stored run's own, ``ref(run)`` for a run made since."""
        return (*self.refs, *map(ref, self.made)) if self.made else self.refs

    def __reduce__(self) -> tuple[object, tuple[int, int, tuple[Sealed, ...]]]:
        return _made, (self.origin, self.size, tuple(self))


def _made(origin: int, size: int, made: tuple[Sealed, ...]) -> Runs:
    """Runs pickled plainly, each with its points."""
    return Runs(origin, size, made=made)


def read_record(data: bytes, offset: int) -> Sealed:
    """The run whose :meth:`Sealed.record` starts at ``offset`` of ``data`` (a host's file of
    runs): no pickle, so no class lookup per run; only the header is read, the points when
    first needed (their values then a read-only view of ``data``)."""
    run = object.__new__(Sealed)
    run.start, run._n, _, run.first, _ = _HEADER.unpack_from(data, offset)
    run._record, run._code = (data, offset), None
    return run


def _restore(start: int, ts: tuple, values: bytes) -> Sealed:
    """A pickled run, its arrays read-only views as decoded (no copy: nothing else holds them)."""
    run = object.__new__(Sealed)
    run.start, run._ts, run._values = start, decode_ts(ts), np.frombuffer(values, np.float64)
    run._ts.flags.writeable = False
    run._n, run.first, run._record, run._code = len(run._ts), int(ts[0]), None, ts
    return run


def encode_ts(ts: np.ndarray) -> tuple[int, int, int] | tuple[int, str, bytes]:
    """Strictly increasing timestamps as ``(first, step, n)`` when evenly spaced, else as
    ``(first, dtype, deltas)`` in the narrowest unsigned type that holds every delta."""
    n = len(ts)
    if n < 2:
        return (int(ts[0]) if n else 0, 0, n)
    deltas = ts[1:] - ts[:-1]
    if deltas[1:].tobytes() == deltas[:-1].tobytes():  # every delta equals the next: even
        return (int(ts[0]), int(deltas[0]), n)
    top = int(deltas.max())
    kind = next((t for t in _DELTA_TYPES if top <= np.iinfo(t).max), np.int64)
    return (int(ts[0]), np.dtype(kind).str, deltas.astype(kind).tobytes())


def decode_ts(code: tuple[int, int, int] | tuple[int, str, bytes]) -> np.ndarray:
    """The timestamps :func:`encode_ts` encoded, as int64."""
    first, how, rest = code
    if isinstance(how, int):  # evenly spaced: (first, step, n)
        if rest < 2:  # type: ignore[operator]
            return np.full(rest, first, dtype=np.int64)  # type: ignore[arg-type]
        last = first + how * (rest - 1)  # type: ignore[operator]
        out = np.arange(first, last + 1, how, dtype=np.int64)  # one pass, no temporaries
        if len(out) == rest:  # numpy counts in floats: a span past 2**52 may miscount
            return out
        return first + how * np.arange(rest, dtype=np.int64)  # type: ignore[operator]
    deltas = np.frombuffer(rest, dtype=how).astype(np.int64)  # type: ignore[arg-type]
    out = np.empty(len(deltas) + 1, dtype=np.int64)
    out[0] = first
    np.cumsum(deltas, out=out[1:])
    out[1:] += first
    return out
