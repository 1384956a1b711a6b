"""A register: the stored points of one series, in event-time order (claim 1, "storing data").

The buffer is a ring whose live region is kept contiguous: points are written at the head and
evicted at the tail; when the head reaches the end of the array, the live points move to the
front (or the array doubles when more than half of it is live), so every append costs O(1)
amortized and every window reads its points as a plain numpy slice, never a gather. The array
starts small and grows with the data.

A register pickles compactly (a Spark host pickles every node each batch): only the live
points, as :class:`~tsmon.core.sealed.Runs` of older points, made once and kept from one
pickle to the next (a host may store them apart, :mod:`tsmon.spark.history`), and the newer
points after them, values as raw bytes and timestamps encoded.

Positions are absolute: the n-th point ever stored has position n for as long as it is retained,
whatever the buffer does underneath. A late insert shifts the positions after it by one; the
owner of the register rebuilds windows that depend on them.

Retention is by points (``capacity_points``) and/or by event time (``retention_ms``). Windows
*pin* the points they still hold (``pin``), so a register keeps at least what its sliding
windows cover: the historical values held by present windows stay available to populate inserted
windows (claim 3) even when the register's own retention is shorter.
"""

from __future__ import annotations

import bisect
import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from numbers import Integral

import numpy as np

from tsmon.core.moments import MAX_ABS_VALUE, value_in_range
from tsmon.core.sealed import SEAL_POINTS, Runs, Sealed, decode_ts, encode_ts

_INITIAL_CAPACITY = 8


class DuplicatePolicy(str, Enum):
    """What a point whose timestamp is already stored does."""

    KEEP_LAST = "keep_last"  # replaces the stored value (counted as replaced)
    KEEP_FIRST = "keep_first"  # is rejected to the dead letters


@dataclass(frozen=True)
class RegisterConfig:
    """Retention and ordering policy shared by the registers of one monitor.

    ``allowed_lateness_ms``: a point older than the newest stored point of its series by at most
    this much is inserted in order; older ones are rejected as too late.
    """

    capacity_points: int | None = None
    retention_ms: int | None = 86_400_000
    allowed_lateness_ms: int = 0
    duplicates: DuplicatePolicy = DuplicatePolicy.KEEP_LAST

    def __post_init__(self) -> None:
        for option in ("capacity_points", "retention_ms", "allowed_lateness_ms"):
            value = getattr(self, option)
            if value is not None and (not isinstance(value, Integral) or isinstance(value, bool)):
                raise TypeError(
                    f"{option} must be a whole number, got {value!r}; pass an int"
                    + (" or None" if option != "allowed_lateness_ms" else "")
                )
        if self.capacity_points is not None and self.capacity_points <= 0:
            raise ValueError(
                f"capacity_points must be > 0, got {self.capacity_points}; "
                "pass a positive count or None for no point limit"
            )
        if self.retention_ms is not None and self.retention_ms <= 0:
            raise ValueError(
                f"retention_ms must be > 0, got {self.retention_ms} ms; "
                "pass a positive duration or None for no time limit"
            )
        if self.allowed_lateness_ms < 0:
            raise ValueError(
                f"allowed_lateness_ms must be >= 0, got {self.allowed_lateness_ms} ms; "
                "pass 0 to reject every out-of-order point"
            )
        if not isinstance(self.duplicates, DuplicatePolicy):
            object.__setattr__(self, "duplicates", DuplicatePolicy(self.duplicates))

    def __reduce__(self) -> tuple[object, tuple]:
        """Its four fields, loaded as one shared object per distinct config (:func:`_config`):
        every register of a node holds an equal one, and a host loads every node each batch."""
        fields = (self.capacity_points, self.retention_ms, self.allowed_lateness_ms)
        return _config, (*fields, self.duplicates._value_)


@functools.lru_cache(maxsize=64)
def _config(capacity: int | None, retention: int | None, lateness: int, dup: str) -> RegisterConfig:
    """A pickled :class:`RegisterConfig`, made once per process and distinct config (frozen)."""
    return RegisterConfig(capacity, retention, lateness, DuplicatePolicy(dup))


class Register:
    """The retained points of one series, ordered by strictly increasing timestamp.

    Examples
    --------
    >>> reg = Register("cpu", RegisterConfig(capacity_points=3, retention_ms=None))
    >>> reg.append(np.array([10, 20, 30, 40]), np.array([1.0, 2.0, 3.0, 4.0]))
    (0, 4)
    >>> reg.evict()
    >>> reg.start, reg.end, reg.ts(reg.start, reg.end).tolist()
    (1, 4, [20, 30, 40])
    >>> reg.complete_from_ts  # every point after ts 10 is held
    11
    """

    def __init__(self, name: str, config: RegisterConfig) -> None:
        self.name = name
        self.config = config
        self._ts = np.empty(_INITIAL_CAPACITY, dtype=np.int64)
        self._values = np.empty(_INITIAL_CAPACITY, dtype=np.float64)
        self._lo = 0  # array index of the oldest live point
        self._hi = 0  # array index one past the newest live point
        self._base = 0  # absolute position of array index 0
        # keyed by the owner itself (not its id(), which pickling changes)
        self._pins: dict[object, int] = {}
        self._watchers: dict[object, Callable[[int, int], None]] = {}
        self.complete_from_ts: int | None = None  # None: nothing was ever evicted
        self.first_ts: int | None = None  # the series' first point, evicted or not
        # runs of older points as last pickled, contiguous (see __getstate__)
        self._runs = Runs(0, SEAL_POINTS)
        # the first positions of the unpickled runs whose points are not yet copied into the
        # ring (see _fill), in order
        self._pending: list[int] = []

    # -- positions and reads -------------------------------------------------------------------
    @property
    def start(self) -> int:
        """Absolute position of the oldest retained point."""
        return self._base + self._lo

    @property
    def end(self) -> int:
        """Absolute position one past the newest point."""
        return self._base + self._hi

    def __len__(self) -> int:
        return self._hi - self._lo

    @property
    def last_ts(self) -> int | None:
        """Timestamp of the newest point, or None when empty."""
        return None if self._hi == self._lo else self._newest_ts()

    def _newest_ts(self) -> int:
        """Timestamp of the newest point (not empty)."""
        if self._pending and self._pending[-1] + self._runs.size == self.end:  # in a run not read
            self._fill(self.end - 1, self.end)
        return int(self._ts[self._hi - 1])

    def _oldest_ts(self) -> int:
        """Timestamp of the oldest retained point (not empty): a run not yet read starting
        there gives it from its header, undecoded (:attr:`~tsmon.core.sealed.Sealed.first`)."""
        i = bisect.bisect_left(self._pending, self.start)  # evicted runs stay until pickled
        if self._pending[i : i + 1] == [self.start]:
            return self._runs.at(self.start).first
        self._fill(self.start, self.start + 1)
        return int(self._ts[self._lo])

    def ts(self, p0: int, p1: int) -> np.ndarray:
        """Timestamps of positions ``[p0, p1)`` (a read-only view)."""
        if self._pending:
            self._fill(p0, p1)
        view = self._ts[p0 - self._base : p1 - self._base]
        view.flags.writeable = False
        return view

    def values(self, p0: int, p1: int) -> np.ndarray:
        """Values of positions ``[p0, p1)`` (a read-only view)."""
        if self._pending:
            self._fill(p0, p1)
        view = self._values[p0 - self._base : p1 - self._base]
        view.flags.writeable = False
        return view

    def search(self, ts_ms: np.ndarray | int, side: str = "left") -> np.ndarray | int:
        """Absolute position where ``ts_ms`` would be inserted among the retained points."""
        a, b = self.start, self.end
        if self._pending:
            if not isinstance(ts_ms, np.ndarray):
                a, b = self._bounds(ts_ms, ts_ms, side)
            elif ts_ms.size:
                a, b = self._bounds(ts_ms.min(), ts_ms.max(), side)
            self._fill(a, b)
        found = np.searchsorted(self._ts[a - self._base : b - self._base], ts_ms, side=side)  # type: ignore[call-overload]
        return found + a

    def _bounds(self, low: int, high: int, side: str) -> tuple[int, int]:
        """Positions ``[a, b)`` outside of which no timestamp in ``[low, high]`` is inserted,
        from the first timestamps of the runs not yet read: every point before a run whose
        first timestamp precedes ``low`` precedes them all, and every point from a run whose
        first timestamp does not precede ``high`` on."""
        before = operator.lt if side == "left" else operator.le  # a point at f precedes x
        a, b = self.start, self.end
        runs, last = self._runs, self._pending[-1]
        if before(runs.at(last).first, low):  # past every run not yet read: the usual search
            after = last + runs.size  # a position in the ring
            if after < b and before(self._ts[after - self._base], low):
                return max(after, a), b
            return max(last, a), b
        for start in self._pending:
            first = runs.at(start).first
            if before(first, low):
                a = max(a, start)
            elif not before(first, high):
                return a, max(start, self.start)
        return a, b

    def position_of(self, ts_ms: int) -> int | None:
        """Position of the point stored at exactly ``ts_ms``, if any."""
        pos = int(self.search(ts_ms))
        return pos if pos < self.end and self.ts(pos, pos + 1)[0] == ts_ms else None

    # -- writes --------------------------------------------------------------------------------
    def append(
        self, ts_ms: np.ndarray, values: np.ndarray, checked: bool = False
    ) -> tuple[int, int]:
        """Store points newer than every stored one; return their positions ``[p0, p1)``.
        ``checked``: the caller's reader already refused values beyond ``MAX_ABS_VALUE``
        (:func:`~tsmon.engine.points.read_batch`), which are otherwise refused here."""
        count = len(ts_ms)
        if not checked:
            _check_values(values)
        if count and self.first_ts is None:
            self.first_ts = int(ts_ms[0])
        self._make_room(count)
        p0 = self.end
        self._ts[self._hi : self._hi + count] = ts_ms
        self._values[self._hi : self._hi + count] = values
        self._hi += count
        return p0, self.end

    def insert(self, ts_ms: int, value: float) -> int:
        """Insert a late point in timestamp order; return its position (later ones shift by 1)."""
        _check_values(np.array([value], dtype=np.float64))
        pos = int(self.search(ts_ms))
        self.first_ts = int(ts_ms) if self.first_ts is None else min(self.first_ts, int(ts_ms))
        self._unseal(pos)  # the positions from pos on shift
        self._make_room(1)
        at = pos - self._base
        self._ts[at + 1 : self._hi + 1] = self._ts[at : self._hi].copy()
        self._values[at + 1 : self._hi + 1] = self._values[at : self._hi].copy()
        self._ts[at] = ts_ms
        self._values[at] = value
        self._hi += 1
        return pos

    def replace(self, pos: int, value: float) -> None:
        """Overwrite the value stored at ``pos`` (a keep-last duplicate)."""
        _check_values(np.array([value], dtype=np.float64))
        self._unseal(pos)
        self._values[pos - self._base] = value

    def _unseal(self, pos: int) -> None:
        """Forget the sealed runs that hold ``pos`` or later positions (they change)."""
        if self._pending:
            self._fill(pos, self.end)
        if self._runs.end > pos:
            self._runs = self._runs.until(pos)

    # -- retention -----------------------------------------------------------------------------
    def pin(self, owner: object, pos: int) -> None:
        """Keep every point at or after ``pos`` for ``owner`` (a window)."""
        self._pins[owner] = pos

    def unpin(self, owner: object) -> None:
        """Forget ``owner``'s pin."""
        self._pins.pop(owner, None)

    def watch(self, owner: object, before_evict: Callable[[int, int], None]) -> None:
        """Call ``before_evict(p0, p1)`` with each range of positions about to be evicted
        (a landmark window folds them into its summary of older history)."""
        self._watchers[owner] = before_evict

    def unwatch(self, owner: object) -> None:
        """Forget ``owner``'s eviction callback."""
        self._watchers.pop(owner, None)

    def evict(self) -> None:
        """Drop points outside the retention policy that no window pins."""
        if self._within_retention():
            return
        capacity, retention = self.config.capacity_points, self.config.retention_ms
        last_ts = self._newest_ts()  # not empty: it keeps every point
        keep_from = self.end
        if capacity is not None:
            keep_from = min(keep_from, self.end - capacity)
        if retention is not None:
            keep_from = min(keep_from, int(self.search(last_ts - retention, side="right")))
        # late points may still arrive within the lateness
        horizon = last_ts - self.config.allowed_lateness_ms
        keep_from = min(keep_from, int(self.search(horizon, side="left")))
        if self._pins:
            keep_from = min(keep_from, min(self._pins.values()))
        keep_from = max(keep_from, self.start)
        if keep_from > self.start:
            for before_evict in self._watchers.values():
                before_evict(self.start, keep_from)
            self.complete_from_ts = int(self.ts(keep_from - 1, keep_from)[0]) + 1
            self._lo = keep_from - self._base

    def _within_retention(self) -> bool:
        """Whether the policy keeps every stored point (the common case, checked in O(1)):
        a register keeps what either limit keeps."""
        capacity, retention = self.config.capacity_points, self.config.retention_ms
        if len(self) == 0 or (capacity is None and retention is None):
            return True
        if capacity is not None and len(self) <= capacity:
            return True
        return retention is not None and self._oldest_ts() > self._newest_ts() - retention

    def _fill(self, p0: int, p1: int) -> None:
        """Copy into the ring the points of the unpickled runs that hold positions in
        ``[p0, p1)``, reading them only now (a host's file of runs, :mod:`tsmon.spark.history`):
        a batch that reads no older point reads no run, and eviction reads only the oldest."""
        pending, size = self._pending, self._runs.size
        if not pending or p0 >= pending[-1] + size or p1 <= pending[0]:
            return
        p0 = max(p0, self.start)  # runs wholly evicted need no copy (nor are pickled again)
        i = bisect.bisect_right(pending, p0 - size)  # the runs that end after p0
        j = bisect.bisect_left(pending, p1)  # and start before p1
        for start in pending[i:j]:
            run = self._runs.at(start)
            lo = max(start, self.start)
            a, b = lo - self._base, start + size - self._base
            self._ts[a:b] = run.ts[lo - start :]
            self._values[a:b] = run.values[lo - start :]
        del pending[i:j]

    def _make_room(self, count: int) -> None:
        """Ensure ``count`` free slots after the head, compacting or doubling the array."""
        if self._hi + count <= len(self._ts):
            return
        live = self._hi - self._lo
        capacity = len(self._ts)
        while live + count > capacity // 2:
            capacity *= 2
        if capacity != len(self._ts):
            new_ts = np.empty(capacity, dtype=np.int64)
            new_values = np.empty(capacity, dtype=np.float64)
        else:
            new_ts, new_values = self._ts, self._values
        new_ts[:live] = self._ts[self._lo : self._hi]
        new_values[:live] = self._values[self._lo : self._hi]
        self._ts, self._values = new_ts, new_values
        self._base += self._lo
        self._lo, self._hi = 0, live

    # -- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> tuple:
        """The live points: sealed runs of :data:`~tsmon.core.sealed.SEAL_POINTS` older
        points, the same runs from one pickle to the next until evicted, then the newer
        points, values as bytes and timestamps encoded (:func:`~tsmon.core.sealed.encode_ts`);
        a tuple, not a dict of attributes (a Spark host pickles every register each batch)."""
        start, end = self._base + self._lo, self._base + self._hi
        runs = self._runs
        sealed_end, size, made = runs.end, runs.size, []
        if sealed_end <= start:  # none, or every one evicted
            runs = Runs(start, SEAL_POINTS)
        elif runs.origin + size <= start:  # drop evicted runs, the oldest
            runs = runs.after(start)
        if runs is not self._runs:
            del self._pending[: bisect.bisect_left(self._pending, runs.origin)]
            sealed_end, size = runs.end, runs.size
        while end - sealed_end >= size:
            a = sealed_end - self._base
            made.append(Sealed(sealed_end, self._ts[a : a + size], self._values[a : a + size]))
            sealed_end += size
        if made:
            runs = runs.sealing(made)
        self._runs = runs
        a = sealed_end - self._base
        return (
            self.name, self.config, runs, encode_ts(self._ts[a : self._hi]),
            self._values[a : self._hi].tobytes(), start, self._pins or None,
            self._watchers or None, self.complete_from_ts, self.first_ts,
        )  # fmt: skip

    def __setstate__(self, state: tuple) -> None:
        (self.name, self.config, runs, ts_code, values, start, pins, watchers,
         self.complete_from_ts, self.first_ts) = state  # fmt: skip
        newer_ts = decode_ts(ts_code)
        origin, sealed_end = runs.origin, runs.end
        sealed = sealed_end - origin
        held = sealed + len(newer_ts)
        capacity = max(_INITIAL_CAPACITY, 2 * held)  # room to grow
        self._ts = np.empty(capacity, dtype=np.int64)
        self._values = np.empty(capacity, dtype=np.float64)
        self._ts[sealed:held] = newer_ts
        self._values[sealed:held] = np.frombuffer(values, dtype=np.float64)
        self._base, self._lo, self._hi = origin, start - origin, held
        self._pins = {} if pins is None else pins
        self._watchers = {} if watchers is None else watchers
        self._runs = runs
        self._pending = list(range(origin, sealed_end, runs.size))  # copied when first read


def _check_values(values: np.ndarray) -> None:
    """Windows take only values within ``MAX_ABS_VALUE``: readers reject the others first."""
    if len(values) and not np.abs(values).max() <= MAX_ABS_VALUE:  # NaN fails it too
        bad = values[~value_in_range(values)][0]
        raise ValueError(
            f"value {bad!r} is outside +-{MAX_ABS_VALUE:g} (or not finite); reject such points "
            "before storing them (tsmon.core.moments.value_in_range)"
        )
