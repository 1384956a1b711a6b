"""A replayable update stream for the adaptive-filter experiments (Olston, Jiang, Widom 2003).

A :class:`Workload` is the input of every experiment of §3.3 and §5: objects spread over
sources, their updates in time order, the registered queries, and (for random walks, App. E/F)
the step size of each object.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import numpy as np
import pandas as pd

from tsmon.protocols.filters.queries import Query


def _frozen(array: object, dtype: type, name: str) -> np.ndarray:
    """A read-only copy; an array already frozen here (read-only, owning its data) is reused."""
    if (
        isinstance(array, np.ndarray)
        and array.dtype == dtype
        and array.ndim == 1
        and not array.flags.writeable
        and array.flags.owndata
    ):
        return array
    out = np.array(array, dtype=dtype, copy=True)
    if out.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {out.shape}")
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Workload:
    """Updates ``(ts_ms[k], objects[obj[k]], values[k])`` in time order, and the queries over them.

    Arrays are copied and made read-only. Several updates may share a timestamp; they are
    applied in array order. A value is an object's new exact value ``V_i`` (§1.2).

    Parameters
    ----------
    objects
        Distinct object ids ``O_1..O_n``.
    source_of
        The source node of every object (several objects may share a source, §5.2).
    ts_ms
        Update times in milliseconds, non-decreasing (int64).
    obj
        Index into ``objects`` of each update's object.
    values
        The new value of each update (finite float64).
    queries
        Registered queries; every object they read must be in ``objects``.
    step_sizes
        Random-walk step size ``s_i`` per object (App. E, F) when known, else ``None``.
    time_unit_ms
        One paper "time unit" in milliseconds (the walk step, the traffic resolution).

    Examples
    --------
    >>> w = Workload(("a", "b"), {"a": "s0", "b": "s1"}, ts_ms=[0, 0, 1000],
    ...              obj=[0, 1, 0], values=[1.0, 5.0, 2.0],
    ...              queries=(Query.avg("q", ["a", "b"], 1.0),))
    >>> len(w), w.time_units
    (3, 1.0)
    >>> w.exact_values_at(0).tolist(), w.exact_values_at(2).tolist()
    ([1.0, nan], [2.0, 5.0])
    >>> Workload(("a",), {"a": "s"}, ts_ms=[5, 3], obj=[0, 0], values=[1.0, 2.0])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: ts_ms must be non-decreasing: update 1 at 3 ms follows 5 ms; ...
    """

    objects: tuple[str, ...]
    source_of: Mapping[str, str]
    ts_ms: np.ndarray
    obj: np.ndarray
    values: np.ndarray
    queries: tuple[Query, ...] = ()
    step_sizes: np.ndarray | None = None
    time_unit_ms: int = 1_000

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        objects = tuple(self.objects)
        if isinstance(self.objects, str) or not objects:
            raise ValueError(f"objects must be a non-empty sequence of ids, got {self.objects!r}")
        if len(set(objects)) != len(objects):
            dup = sorted({o for o in objects if objects.count(o) > 1})
            raise ValueError(f"object ids must be distinct; repeated: {dup[:10]!r}")
        setattr_(self, "objects", objects)
        missing = [o for o in objects if o not in self.source_of]
        extra = [o for o in self.source_of if o not in set(objects)]
        if missing or extra:
            raise ValueError(
                f"source_of must name the source of every object and nothing else; "
                f"missing {missing[:10]!r}, unknown {extra[:10]!r}"
            )
        setattr_(self, "source_of", MappingProxyType({o: str(self.source_of[o]) for o in objects}))
        ts = np.asarray(self.ts_ms)
        ix = np.asarray(self.obj)
        for name, arr in (("ts_ms", ts), ("obj", ix)):
            if arr.size and arr.dtype.kind not in "iu":
                raise ValueError(
                    f"{name} must hold integers, got dtype {arr.dtype}; pass an int64 array"
                )
        setattr_(self, "ts_ms", _frozen(ts, np.int64, "ts_ms"))
        setattr_(self, "obj", _frozen(ix, np.int64, "obj"))
        setattr_(self, "values", _frozen(self.values, np.float64, "values"))
        n_upd = len(self.ts_ms)
        if not len(self.obj) == len(self.values) == n_upd:
            raise ValueError(
                f"ts_ms, obj and values need one entry per update: lengths {n_upd}, "
                f"{len(self.obj)}, {len(self.values)}"
            )
        back = np.flatnonzero(np.diff(self.ts_ms) < 0)
        if back.size:
            k = int(back[0]) + 1
            raise ValueError(
                f"ts_ms must be non-decreasing: update {k} at {self.ts_ms[k]} ms follows "
                f"{self.ts_ms[k - 1]} ms; sort the updates by time (stable)"
            )
        bad = np.flatnonzero((self.obj < 0) | (self.obj >= len(objects)))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"obj must index objects (0..{len(objects) - 1}): update {k} has {self.obj[k]}"
            )
        bad = np.flatnonzero(~np.isfinite(self.values))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"values must be finite: update {k} ({objects[self.obj[k]]!r} at "
                f"{self.ts_ms[k]} ms) is {self.values[k]}; drop or repair it first"
            )
        self._check_queries(tuple(self.queries))
        setattr_(self, "queries", tuple(self.queries))
        if self.step_sizes is not None:
            steps = _frozen(self.step_sizes, np.float64, "step_sizes")
            if steps.shape != (len(objects),) or not np.all(np.isfinite(steps) & (steps >= 0)):
                raise ValueError(
                    f"step_sizes needs one finite s_i >= 0 per object ({len(objects)}), "
                    f"got shape {steps.shape}, min {steps.min() if steps.size else None}"
                )
            setattr_(self, "step_sizes", steps)
        unit = self.time_unit_ms
        if isinstance(unit, bool) or not isinstance(unit, (int, np.integer)) or unit <= 0:
            raise ValueError(f"time_unit_ms must be an int > 0 ms, got {unit!r}; e.g. pass 1000")
        setattr_(self, "time_unit_ms", int(unit))

    def _check_queries(self, queries: tuple[Query, ...]) -> None:
        for q in queries:
            if not isinstance(q, Query):
                raise TypeError(f"queries must be Query objects, got {type(q).__name__}")
        names = [q.name for q in queries]
        if len(set(names)) != len(names):
            raise ValueError(f"query names must be distinct, got {names!r}")
        known = set(self.objects)
        for q in queries:
            unknown = [o for o in q.weights if o not in known]
            if unknown:
                raise ValueError(
                    f"query {q.name!r} reads unknown objects {unknown[:10]!r}; "
                    f"known objects start {list(self.objects[:5])!r}"
                )

    def __len__(self) -> int:
        return len(self.ts_ms)

    def __repr__(self) -> str:
        return (
            f"Workload({len(self.objects)} objects on {len(set(self.source_of.values()))} "
            f"sources, {len(self)} updates over {self.time_units:g} time units of "
            f"{self.time_unit_ms} ms, queries {[q.name for q in self.queries]!r})"
        )

    @cached_property
    def index(self) -> Mapping[str, int]:
        """Object id → position in :attr:`objects`."""
        return MappingProxyType({o: i for i, o in enumerate(self.objects)})

    @property
    def duration_ms(self) -> int:
        """Time from the first to the last update (0 for fewer than two updates)."""
        return int(self.ts_ms[-1] - self.ts_ms[0]) if len(self) else 0

    @property
    def time_units(self) -> float:
        """:attr:`duration_ms` in time units: the divisor of a cost per time unit (§3.3)."""
        return self.duration_ms / self.time_unit_ms

    def update_counts(self) -> np.ndarray:
        """Number of updates of every object."""
        return np.bincount(self.obj, minlength=len(self.objects))

    @cached_property
    def _positions(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.obj, kind="stable")  # per object, its updates in time order
        starts = np.searchsorted(self.obj[order], np.arange(len(self.objects) + 1))
        return order, starts

    def object_updates(self, i: int) -> np.ndarray:
        """Positions (indices into the update arrays) of object ``i``'s updates, in order."""
        order, starts = self._positions
        return order[starts[i] : starts[i + 1]]

    def exact_values_at(self, k: int) -> np.ndarray:
        """Every object's exact value just after update ``k`` (NaN if not yet seen).

        Costs ``O(n log N)``; use :meth:`iter_exact_values` to visit every update.
        """
        if not -len(self) <= k < len(self):
            raise IndexError(f"update {k} out of range for {len(self)} updates")
        k = k % len(self)
        out = np.full(len(self.objects), np.nan)
        order, starts = self._positions
        for i in range(len(self.objects)):
            pos = order[starts[i] : starts[i + 1]]
            j = np.searchsorted(pos, k, side="right") - 1
            if j >= 0:
                out[i] = self.values[pos[j]]
        return out

    def iter_exact_values(self) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(k, values)`` after every update ``k``: the oracle's view of the sources.

        The same read-only array is updated in place between yields; copy it to keep it.

        Examples
        --------
        >>> w = Workload(("a", "b"), {"a": "s", "b": "s"}, [0, 1, 2], [0, 1, 0], [1.0, 2.0, 3.0])
        >>> [v.tolist() for _, v in w.iter_exact_values()]
        [[1.0, nan], [1.0, 2.0], [3.0, 2.0]]
        """
        current = np.full(len(self.objects), np.nan)
        view = current.view()
        view.setflags(write=False)
        for k, (i, v) in enumerate(zip(self.obj.tolist(), self.values.tolist(), strict=True)):
            current[i] = v
            yield k, view

    def estimate_step_sizes(self) -> np.ndarray:
        """Random-walk step size per object, ``s_i = sqrt(Σ ΔV² / Σ Δt)`` in time units (App. E).

        Exact for a ±``s_i`` walk that moves once per time unit; NaN for objects with fewer
        than two updates. A stand-in for :attr:`step_sizes` on real data.
        """
        out = np.full(len(self.objects), np.nan)
        for i in range(len(self.objects)):
            pos = self.object_updates(i)
            if len(pos) < 2:
                continue
            dt = np.diff(self.ts_ms[pos]).sum() / self.time_unit_ms
            dv2 = np.square(np.diff(self.values[pos])).sum()
            out[i] = math.sqrt(dv2 / dt) if dt > 0 else (0.0 if dv2 == 0 else np.inf)
        return out

    def with_queries(self, queries: Iterable[Query]) -> Workload:
        """The same updates with ``queries`` registered instead."""
        return dataclasses.replace(self, queries=tuple(queries))

    def with_step_sizes(self, step_sizes: Sequence[float] | np.ndarray | None) -> Workload:
        """The same workload with known (or estimated) step sizes ``s_i``."""
        return dataclasses.replace(self, step_sizes=step_sizes)

    def slice_time(
        self, start_ms: int | None = None, stop_ms: int | None = None, *, carry: bool = False
    ) -> Workload:
        """Updates with ``start_ms <= ts_ms < stop_ms``; ``None`` leaves that side open.

        With ``carry`` the slice first sets, at ``start_ms``, every object already seen to its
        value just before ``start_ms``, so that the replay starts from the true state.

        Examples
        --------
        >>> w = Workload(("a",), {"a": "s"}, [0, 1000, 2000], [0, 0, 0], [1.0, 2.0, 3.0])
        >>> w.slice_time(1000).values.tolist()
        [2.0, 3.0]
        >>> s = w.slice_time(1500, carry=True)
        >>> s.ts_ms.tolist(), s.values.tolist()
        ([1500, 2000], [2.0, 3.0])
        """
        lo = 0 if start_ms is None else int(np.searchsorted(self.ts_ms, start_ms, side="left"))
        hi = len(self) if stop_ms is None else int(np.searchsorted(self.ts_ms, stop_ms, "left"))
        hi = max(lo, hi)
        ts, ix, vs = self.ts_ms[lo:hi], self.obj[lo:hi], self.values[lo:hi]
        if carry and start_ms is not None and lo > 0:
            before = self.exact_values_at(lo - 1)
            seen = np.flatnonzero(~np.isnan(before))
            ts = np.concatenate([np.full(len(seen), start_ms, dtype=np.int64), ts])
            ix = np.concatenate([seen, ix])
            vs = np.concatenate([before[seen], vs])
        return dataclasses.replace(self, ts_ms=ts, obj=ix, values=vs)

    def to_frame(self) -> pd.DataFrame:
        """The updates as a ``(series, ts, value)`` frame, the layout of
        :mod:`tsmon.streams.csv_series`."""
        names = np.array(self.objects, dtype=object)
        return pd.DataFrame({"series": names[self.obj], "ts": self.ts_ms, "value": self.values})


def grid_workload(
    objects: Sequence[str],
    source_of: Mapping[str, str],
    values: np.ndarray,
    *,
    time_unit_ms: int = 1_000,
    start_ms: int = 0,
    queries: Iterable[Query] = (),
    step_sizes: np.ndarray | None = None,
) -> Workload:
    """A workload where every object updates once per time unit: ``values[t, i]`` at step ``t``.

    Within a step, updates come in object order.

    Examples
    --------
    >>> w = grid_workload(["a", "b"], {"a": "s", "b": "s"}, np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> w.ts_ms.tolist(), w.obj.tolist(), w.values.tolist()
    ([0, 0, 1000, 1000], [0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0])
    """
    grid = np.asarray(values, dtype=np.float64)
    if grid.ndim != 2 or grid.shape[1] != len(objects):
        raise ValueError(
            f"values must have shape (steps, {len(objects)} objects), got {grid.shape}"
        )
    steps, n = grid.shape
    ts = start_ms + np.repeat(np.arange(steps, dtype=np.int64) * time_unit_ms, n)
    return Workload(
        tuple(objects),
        source_of,
        ts,
        np.tile(np.arange(n, dtype=np.int64), steps),
        grid.reshape(-1),
        tuple(queries),
        step_sizes,
        time_unit_ms,
    )


def random_avg_queries(
    objects: Sequence[str],
    n_queries: int,
    sizes: tuple[int, int],
    delta_max: float,
    rng: np.random.Generator,
    *,
    prefix: str = "q",
) -> tuple[Query, ...]:
    """AVG queries over random subsets of ``objects`` (§3.3 Fig. 4, §3.2.2).

    Query set sizes are uniform in ``sizes[0]..sizes[1]`` (inclusive); ``δ_j`` is uniform in
    ``(0, delta_max]`` (a precision constraint must be > 0).

    Examples
    --------
    >>> qs = random_avg_queries(list("abcdef"), 3, (2, 4), 2.0, np.random.default_rng(0))
    >>> [2 <= len(q.weights) <= 4 and 0 < q.delta <= 2.0 for q in qs]
    [True, True, True]
    """
    lo, hi = sizes
    if not 1 <= lo <= hi <= len(objects):
        raise ValueError(
            f"sizes must satisfy 1 <= low <= high <= {len(objects)} objects, got {sizes}"
        )
    if not (math.isfinite(delta_max) and delta_max > 0):
        raise ValueError(f"delta_max must be a finite width > 0, got {delta_max}")
    out = []
    for j in range(n_queries):
        size = int(rng.integers(lo, hi, endpoint=True))
        members = np.sort(rng.choice(len(objects), size=size, replace=False))
        delta = delta_max * (1.0 - rng.random())  # §3.3: δ_j uniform in (0, δmax]
        out.append(Query.avg(f"{prefix}{j}", [objects[i] for i in members], delta))
    return tuple(out)
