"""The source-node part of bounded aggregates: an adaptive filter per series a bounded query
reads (Olston, Jiang & Widom 2003, §1.2.3, §3.1); the time it runs at:
:mod:`tsmon.kinds.bounded`."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tsmon.core.groups import code_groups
from tsmon.kinds.base import NodePart, Points, Row
from tsmon.protocols.filters.codec import from_dict, to_dict
from tsmon.protocols.filters.messages import Growth, Shrink, StreamedUpdate, WidthMessage
from tsmon.protocols.filters.source import SourceFilter

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.settings import HostSettings

__all__ = ["BoundedNode"]


class BoundedNode(NodePart):
    """A :class:`SourceFilter` per series a bounded query reads, created at the series' first
    width message (§3.4): the node keeps the newest value of every series, and no filter is
    stepped for a series no query reads. Width messages are applied at the node's time before
    the batch's points, which each filter takes in bulk (:meth:`SourceFilter.observe_many`);
    every filter is then moved to the node's time.

    A filter created after its series' points starts one millisecond before the node's time,
    with the series' value then, when it had one (and the message is not from later), and
    observes a value the series took at the node's time as a point: at a lag of 1 ms the
    coordinator's time stays below the node's time (:mod:`tsmon.kinds.bounded`), so a first
    update stamped at the node's time would wait for the source's next instant, which a
    finished input never brings, and the answer would stay unknown with every value at hand.
    Not earlier: the coordinator may be at the node's time − 1 already, and the update would
    be late (§4). A message stamped at the node's time (lag 0) starts the filter there.

    For the same reason a filter that exists applies a width message (a shrink, §3.4) as of
    one millisecond before the node's time, with the series' value then, when it had one
    (:meth:`SourceFilter.apply`'s ``before``): a query over a glob that a new series joined
    shrinks the filters of the others, and a reply stamped at the node's time would leave
    the coordinator assuming their wider widths for good on a finished input.
    """

    control_types = ("growth", "shrink")

    def __init__(self, settings: HostSettings, key: str) -> None:
        SourceFilter(key, settings.period_ms, settings.shrink)  # refuses a bad T or S
        # None: T is chosen online, and each filter learns it from its width messages
        self.period_ms = settings.period_ms
        self.shrink = float(settings.shrink)
        self.filters: dict[str, SourceFilter] = {}
        self.last: dict[str, float] = {}  # series -> its newest value
        # series -> (the node's time at its newest value, its value before that instant)
        self.since: dict[str, tuple[int, float | None]] = {}
        self.held: list[tuple[int, WidthMessage]] = []  # width messages not applied yet

    def parse_control(self, payload: Mapping[str, Any], where: str) -> WidthMessage:
        try:
            message = from_dict(payload)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(message, Growth | Shrink):
            raise ValueError(f"{where}: control carries growth or shrink messages, got {message}")
        return message

    def _start(self, message: WidthMessage, now_ms: int) -> list[StreamedUpdate]:
        """The filter of ``message``'s series, created by it (see the class docstring)."""
        name, before_now = message.object_id, now_ms - 1
        value = self._value_before(name, now_ms)
        if value is None or message.ts_ms > before_now:
            f = self.filters[name] = SourceFilter(
                name, self.period_ms, self.shrink, self.last.get(name)
            )
            return f.apply(message, now_ms)
        f = self.filters[name] = SourceFilter(name, self.period_ms, self.shrink, value)
        out = f.apply(message, before_now)
        if self.since[name][0] == now_ms:  # the value it took at the node's time, as a point
            out += f.observe(now_ms, self.last[name])
        return out

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        self.held = sorted([*self.held, *items], key=lambda x: (x[0], x[1].seq))
        return []

    def begin(self, now_ms: int) -> list[Row]:
        held, self.held = self.held, []
        out: list[StreamedUpdate] = []
        for _, message in held:
            f = self.filters.get(message.object_id)
            if f is None:
                out += self._start(message, now_ms)
            else:
                value = self._value_before(message.object_id, now_ms)
                before = None if value is None else (now_ms - 1, value)
                out += f.apply(message, now_ms, before)
        return _rows(out)

    def _value_before(self, name: str, now_ms: int) -> float | None:
        """The series' value one millisecond before the node's time, None if it had none."""
        at, before = self.since.get(name, (now_ms, None))
        return self.last[name] if at < now_ms else before

    def observe(self, points: Points) -> list[Row]:
        """Each series' newest value, the node's time at it and its value before that instant
        (the last point at an earlier time, else the newest before the batch unless that was
        at this instant too); the filtered series' points to their filters. Vectorized over
        series: the applied points grouped by series (in order), each group's instants
        non-decreasing."""
        keep = points.applied
        if not keep.any():
            return []
        every = bool(keep.all())
        if every:
            (order, bounds), at, values = points.groups, points.at_ms, points.value
        else:
            order, bounds = code_groups(points.codes[keep], len(points.names))
            at, values = points.at_ms[keep], points.value[keep]
        at, values = at[order].tolist(), values[order].tolist()  # by series, each in order
        groups = np.flatnonzero(bounds[1:] > bounds[:-1])  # the series with applied points
        if not every:  # in the order they first applied (codes are in order of first point)
            groups = groups[np.argsort(order[bounds[groups]])]
        sent: list[tuple[int, StreamedUpdate]] = []
        for code, a, b in zip(
            groups.tolist(), bounds[groups].tolist(), bounds[groups + 1].tolist(), strict=True
        ):
            name = points.names[code]
            f = self.filters.get(name)
            if f is not None:
                index = order[a:b].tolist()
                bulk = f.observe_many(at[a:b], values[a:b])
                sent += [(index[i], update) for i, update in bulk]
            now = at[b - 1]
            tail = bisect_left(at, now, a, b)  # its points at its newest instant
            if tail > a:  # a point at an earlier instant in the batch
                self.since[name] = (now, values[tail - 1])
            elif self.since.get(name, (None,))[0] != now:
                self.since[name] = (now, self.last.get(name))
            self.last[name] = values[b - 1]
        sent.sort(key=lambda x: x[0])  # stable: in the order the points sent them
        return _rows([update for _, update in sent])

    def advance(self, now_ms: int) -> list[Row]:
        out: list[StreamedUpdate] = []
        for f in self.filters.values():  # every boundary up to now_ms, for every series (§3.1)
            out += f.advance(now_ms)
        return _rows(out)


def _rows(updates: list[StreamedUpdate]) -> list[Row]:
    return [{"kind": "msg", "payload": to_dict(u)} for u in updates]
