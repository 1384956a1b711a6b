"""One series inside a monitor: its register, its shared windows and its late-point policy.

This is the unit a runtime hosts per series (in-process here, inside a source node on Spark):
it stores points, keeps every window its queries read (one per shape, reference-counted), and
hands back per-point window statistics (:func:`advance_together`: of many series with the same
windows at once). It knows nothing of queries or events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tsmon.core.register import DuplicatePolicy, Register, RegisterConfig
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import Window, WindowView, advance_many, open_window
from tsmon.engine.deadletters import Reason

Plan = Mapping[WindowSpec, frozenset[str]]  # the statistics each window must produce


class SeriesNode:
    """The stored points and shared windows of one series.

    Examples
    --------
    >>> import numpy as np
    >>> node = SeriesNode("cpu", RegisterConfig(retention_ms=None))
    >>> spec = WindowSpec.count(2)
    >>> node.acquire([spec])
    >>> span = node.register.append(np.array([0, 1000]), np.array([1.0, 3.0]))
    >>> views = advance_together([node], [span], {spec: frozenset({"mean"})})
    >>> views[spec].stat("mean").tolist()
    [1.0, 2.0]
    """

    def __init__(self, name: str, config: RegisterConfig) -> None:
        self.name = name
        self.config = config
        self.register = Register(name, config)
        self.windows: dict[WindowSpec, Window] = {}

    # -- shared windows ------------------------------------------------------------------------
    def acquire(self, specs: Iterable[WindowSpec]) -> None:
        """Take a reference on each window, creating (and populating from history) new ones."""
        for spec in specs:
            if spec not in self.windows:
                self.windows[spec] = open_window(spec, self.register)
            self.windows[spec].refcount += 1

    def release(self, specs: Iterable[WindowSpec]) -> None:
        """Drop a reference on each window; a window nobody uses is closed."""
        for spec in specs:
            window = self.windows[spec]
            window.refcount -= 1
            if window.refcount == 0:
                window.close()
                del self.windows[spec]

    def close(self) -> None:
        """Close every window (the series is being removed)."""
        for window in self.windows.values():
            window.close()
        self.windows.clear()

    # -- storing points ------------------------------------------------------------------------
    def rejection(self, ts: int) -> tuple[Reason, str] | None:
        """Why a point not newer than the newest stored one cannot be stored, if it cannot."""
        reg = self.register
        last = reg.last_ts if reg.last_ts is not None else ts
        if last - ts > self.config.allowed_lateness_ms:
            return Reason.TOO_LATE, (
                f"point is {last - ts} ms older than the newest point of {self.name!r}; "
                f"allowed lateness is {self.config.allowed_lateness_ms} ms"
            )
        pos = reg.position_of(ts)
        if pos is None and reg.complete_from_ts is not None and ts < reg.complete_from_ts:
            return Reason.TOO_LATE, (
                f"point at {ts} ms is older than the retained history of {self.name!r} "
                f"(complete from {reg.complete_from_ts} ms)"
            )
        if pos is not None and self.config.duplicates is DuplicatePolicy.KEEP_FIRST:
            stored = float(reg.values(pos, pos + 1)[0])
            return Reason.DUPLICATE, (
                f"timestamp {ts} ms already holds {stored!r}; policy keep_first keeps it"
            )
        return None

    def store_late(self, ts: int, value: float) -> tuple[int, bool]:
        """Insert a late point, or replace the value at its timestamp (keep_last); windows are
        rebuilt. Returns its position and whether it replaced a stored value."""
        reg = self.register
        pos = reg.position_of(ts)
        replaced = pos is not None
        if pos is None:
            pos = reg.insert(ts, value)
        else:
            reg.replace(pos, value)
        self.rebuild()
        return pos, replaced

    def rebuild(self) -> None:
        """Rebuild every window from the register (after history changed under them)."""
        for window in self.windows.values():
            window.populate(self.register.end)

    # -- views of the past ---------------------------------------------------------------------
    def views_as_of(self, p0: int, p1: int, plan: Plan) -> dict[WindowSpec, WindowView]:
        """Per-point statistics of the stored points ``[p0, p1)``, each with its windows as of
        itself: live windows are forked (a landmark keeps its evicted history), others built."""
        views = {}
        for spec, wanted in plan.items():
            live = self.windows.get(spec)
            window = live.fork(p0) if live is not None else open_window(spec, self.register, p0)
            try:
                views[spec] = window.advance(p0, p1, wanted)
            finally:
                window.close()
        return views


def advance_together(
    nodes: Sequence[SeriesNode], spans: Sequence[tuple[int, int]], plan: Plan
) -> dict[WindowSpec, WindowView]:
    """Advance the windows of series with the same windows over the points ``[p0, p1)`` just
    appended to each (at least one), all series at once; each window's per-point statistics,
    the series' points in turn. The registers evict what no window holds any more."""
    try:
        return {
            spec: advance_many([node.windows[spec] for node in nodes], spans, wanted)
            for spec, wanted in plan.items()
        }
    except BaseException:
        for node in nodes:
            node.rebuild()  # keep windows and registers consistent whatever went wrong
        raise
    finally:
        for node in nodes:
            node.register.evict()


def pack_nodes(nodes: Mapping[str, SeriesNode]) -> tuple:
    """A store's series (:attr:`~tsmon.engine.store.SeriesStore.nodes`) as what pickles them:
    the registers, and the windows of the series that have any by their rank; no object per
    series (a Spark host pickles every node each batch). A series' name and config are its
    register's; the registers come first, so the windows' references to them are to objects
    already pickled."""
    windows = {i: node.windows for i, node in enumerate(nodes.values()) if node.windows}
    return tuple(node.register for node in nodes.values()), windows or None


def unpack_nodes(packed: tuple) -> dict[str, SeriesNode]:
    """The series :func:`pack_nodes` packed, by name, in their order."""
    registers, windows = packed
    nodes = {}
    for i, register in enumerate(registers):
        node = nodes[register.name] = object.__new__(SeriesNode)
        node.name, node.config, node.register = register.name, register.config, register
        node.windows = windows.get(i, {}) if windows else {}
    return nodes
