"""Bounded aggregates (``QUERY q AS SUM|AVG|MIN|MAX(...) WITHIN δ``): adaptive filters at the
source nodes, the filter coordinator at the driver (Olston, Jiang & Widom, SIGMOD 2003).

Time (the choice, since the paper assumes a coordinator clock): the coordinator's time after
batch ``N`` is ``min over known sources of now_ms, minus 1 ms``, never going back. A source's
``now_ms`` is the newest timestamp it has processed; it has then sent every update stamped
before ``now_ms`` (it ran every period boundary up to ``now_ms`` for all its filters), but a
later batch may still hold points stamped exactly ``now_ms`` (a batch can end between two
points of one instant), hence the ``−1``. The updates of the batch go into the coordinator's
serializing queue (§4, latency ``λ = 0``), which releases them in timestamp order up to that
time, interleaved with the period boundaries; so answers are exact *as of* the coordinator's
time, and the coordinator never shrinks past a boundary a source has not reached. Width
messages are stamped with that time (or a boundary before it), which every source has passed:
a source applies them late, replaying the period shrinks since their stamp (§3.1), so both
sides hold the same width to the bit. Meanwhile a grown bound is narrower at the source than
the coordinator assumes, and a shrink is assumed only once the source confirms it (§3.4, §4):
the coordinator's view is never narrower than the source's.

Query changes (§3.4) between batches happen at the coordinator's time at once (before any
source reported a time, at the first step's time); their width messages go out with the next
step's control, so sources apply them a batch later. A width message for a series whose source
is not known yet waits until a row shows where the series lives.

Idle sources (docs/time.md): a source whose newest time is more than ``idle_timeout`` behind
the job's newest time no longer holds the coordinator's time back
(:meth:`~tsmon.engine.hub.CoordinatorNode.watermark`); its series keep their last reported
values, the answers over them name it in the progress (``waitingOn``), and its updates, when
it comes back, arrive late and are applied at the coordinator's time. A host with an
event-time watermark can also move an idle node with
:meth:`~tsmon.engine.node.SourceNode.advance`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tsmon.core.timestamps import format_instant_and_ms
from tsmon.core.units import format_value
from tsmon.engine.bounded import to_query
from tsmon.kinds.base import CoordinatorPart, NodePart, Part, Points, QueryKind, Row
from tsmon.protocols.filters.codec import from_dict, to_dict
from tsmon.protocols.filters.coordinator import Answer, Coordinator
from tsmon.protocols.filters.messages import (
    Growth,
    Shrink,
    StreamedUpdate,
    WidthMessage,
)
from tsmon.protocols.filters.queries import Query, check_delta
from tsmon.protocols.filters.source import SourceFilter
from tsmon.query import AggregateDef, AlterPrecision, format_terms, resolve_aggregate
from tsmon.query.patterns import is_glob, series_matches

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["KIND", "PART", "BoundedCoordinator", "BoundedNode"]


class BoundedNode(NodePart):
    """A :class:`SourceFilter` per series a bounded query reads, created at the series' first
    width message (§3.4): the node keeps the newest value of every series, and no filter is
    stepped for a series no query reads. Width messages are applied at the node's time before
    the batch's points, which each filter takes in bulk (:meth:`SourceFilter.observe_many`);
    every filter is then moved to the node's time.

    A filter created after its series' points starts one millisecond before the node's time,
    with the series' value then, when it had one (and the message is not from later), and
    observes a value the series took at the node's time as a point: the coordinator's time
    stays below the node's time (the module docstring), so a first update stamped at the
    node's time would wait for the source's next instant, which a finished input never
    brings, and the answer would stay unknown with every value at hand. Not earlier: the
    coordinator may be at the node's time − 1 already, and the update would be late (§4).
    """

    control_types = ("growth", "shrink")

    def __init__(self, settings: HostSettings, key: str) -> None:
        SourceFilter(key, settings.period_ms, settings.shrink)  # refuses a bad T or S
        self.period_ms = int(settings.period_ms)
        self.shrink = float(settings.shrink)
        self.filters: dict[str, SourceFilter] = {}
        self.last: dict[str, float] = {}  # series -> its newest value
        # series without a filter -> (the node's time at its newest value, its value before)
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
        at, value = self.since.pop(name, (now_ms, None))
        if at < now_ms:  # its newest value is older than the node's time
            value = self.last[name]
        if value is None or message.ts_ms > before_now:
            f = self.filters[name] = SourceFilter(
                name, self.period_ms, self.shrink, self.last.get(name)
            )
            return f.apply(message, now_ms)
        f = self.filters[name] = SourceFilter(name, self.period_ms, self.shrink, value)
        out = f.apply(message, before_now)
        if at == now_ms:  # the value it took at the node's time, as a point
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
            out += self._start(message, now_ms) if f is None else f.apply(message, now_ms)
        return _rows(out)

    def observe(self, points: Points) -> list[Row]:
        series, _, values, at_ms = points.in_order
        mine: dict[str, list[int]] = {}  # the points of each filtered series
        for i, name in enumerate(series):
            if name in self.filters:
                mine.setdefault(name, []).append(i)
                continue
            if self.since.get(name, (None,))[0] != at_ms[i]:  # a new instant: the value before
                self.since[name] = (at_ms[i], self.last.get(name))
            self.last[name] = values[i]
        for name, index in mine.items():
            self.last[name] = values[index[-1]]
        sent: list[tuple[int, StreamedUpdate]] = []
        for name, index in mine.items():
            bulk = self.filters[name].observe_many(
                [at_ms[i] for i in index], [values[i] for i in index]
            )
            sent += [(index[i], update) for i, update in bulk]
        sent.sort(key=lambda x: x[0])  # stable: in the order the points sent them
        return _rows([update for _, update in sent])

    def advance(self, now_ms: int) -> list[Row]:
        out: list[StreamedUpdate] = []
        for f in self.filters.values():  # every boundary up to now_ms, for every series (§3.1)
            out += f.advance(now_ms)
        return _rows(out)


def _rows(updates: list[StreamedUpdate]) -> list[Row]:
    return [{"kind": "msg", "payload": to_dict(u)} for u in updates]


class BoundedCoordinator(CoordinatorPart):
    """The filter :class:`Coordinator` with latency ``λ = 0``, stepped at the job's time (see
    the module docstring), with bounded aggregates over globs expanded as series appear."""

    row_kinds = ("msg",)

    def __init__(self, settings: HostSettings) -> None:
        self.coordinator = Coordinator(
            settings.period_ms,
            settings.shrink,
            np.random.default_rng(settings.seed),
            latency_ms=0,
            growth=settings.growth,
        )
        self.globbed: dict[str, AggregateDef] = {}  # bounded queries over globs, by name
        self.dropped: dict[str, str] = {}  # glob queries that cannot be evaluated, and why
        self._globs_expanded_over = -1  # how many series the glob queries were expanded over
        self.outbox: list[WidthMessage] = []  # from query changes, out with the next step
        self.deferred: list[tuple[Any, ...]] = []  # query changes waiting for a time
        self.parked: list[WidthMessage] = []  # width messages waiting for their series' source
        self.updates: list[StreamedUpdate] = []
        self.waiting: dict[str, list[str]] = {}  # query -> idle sources its answer lacks

    @property
    def started(self) -> bool:
        """Whether the coordinator has a time (some source reported one)."""
        return self.coordinator.settled_ms is not None

    # -- queries ----------------------------------------------------------------------------

    def planned(self) -> dict[str, Query]:
        """The queries once every deferred change is made."""
        queries = dict(self.coordinator.queries)
        for op in self.deferred:
            if op[0] == "add":
                queries[op[1].name] = op[1]
            elif op[0] == "alter":
                queries[op[1]] = queries[op[1]].with_delta(op[2])
            else:
                del queries[op[1]]
        return queries

    def names(self) -> list[str]:
        return list(dict.fromkeys([*self.planned(), *self.globbed]))

    def pinned_series(self) -> set[str]:
        return {o for q in self.planned().values() for o in q.objects}

    def reads(self) -> dict[str, tuple[tuple[str, ...], ...]]:
        """Each series of a query, or each term's glob of a query over globs (dropped ones
        are left out: they say why in ``droppedQueries``)."""
        out = {name: tuple((o,) for o in q.objects) for name, q in self.planned().items()}
        for name, statement in self.globbed.items():
            out[name] = tuple((t.series,) for t in statement.terms)
        return out

    def add_query(
        self, hub: CoordinatorNode, query: Query, source_of: Mapping[str, str] | None = None
    ) -> None:
        """Register ``query``; its width messages go out with the next step. ``source_of``
        names the source of series not seen in any row yet."""
        given = dict(source_of or {})
        wrong = [o for o in query.objects if o in given and given[o] != hub.located(o, given[o])]
        if wrong:
            raise ValueError(
                f"query {query.name!r}: series {wrong[0]!r} comes from source "
                f"{hub.located(wrong[0], '')!r}, not {given[wrong[0]]!r}; fix source_of"
            )
        hub.free(query.name)
        shared = sorted(hub.shared.intersection(query.objects))
        if shared:
            raise ValueError(
                f"query {query.name!r}: series {shared[0]!r} comes from several sources; a "
                "bounded query needs each of its series at one source"
            )
        if self.started:
            self.outbox += self.coordinator.add_query(query)
        else:
            self.deferred.append(("add", query))
        hub.declare({o: given[o] for o in query.objects if o in given})

    def add_glob_query(self, hub: CoordinatorNode, statement: AggregateDef) -> None:
        """Register a bounded aggregate whose terms hold globs (``AVG(host*.cpu)``).

        A running job does not know its series in advance, so the query covers the matching
        series the rows have shown so far (or ``source_of`` declared): from the first step
        where every term matches, and registered again over the larger set whenever a new
        matching series appears (an added query, §3.4: its bounds shrink to a share at once).
        """
        hub.free(statement.name)
        self.globbed[statement.name] = statement
        self._globs_expanded_over = -1  # expand at the next step

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        if name in self.globbed:
            check_delta(name, delta)
            self.globbed[name] = dataclasses.replace(self.globbed[name], delta=float(delta))
            if name not in self.coordinator.queries:
                return  # registered later, with the new δ
        self._known(name).with_delta(delta)  # refuses a bad δ now
        if self.started:
            self.outbox += self.coordinator.alter_query(name, delta, immediately=now)
        else:
            self.deferred.append(("alter", name, delta, now))

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        if self.globbed.pop(name, None) is not None and name not in self.planned():
            return  # it matched no series yet
        self._known(name)
        if self.started:
            self.outbox += self.coordinator.remove_query(name)
        else:
            self.deferred.append(("remove", name))

    def _known(self, name: str) -> Query:
        planned = self.planned()
        if name not in planned:
            raise KeyError(f"no query {name!r}; registered: {sorted(planned)!r}")
        return planned[name]

    # -- the step ---------------------------------------------------------------------------

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Any:
        try:
            update = from_dict(row["payload"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(update, StreamedUpdate):
            raise ValueError(f"{where}: sources send streamed updates, got {update}")
        hub.locate(update.object_id, row["source"], where, strict=True)
        return update

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        self.updates = sorted(rows, key=lambda u: (u.ts_ms, u.object_id, u.seq))

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        coord, updates, self.updates = self.coordinator, self.updates, []
        fresh = [u.object_id for u in updates if u.object_id not in coord.cache.index]
        if fresh:
            coord.set_objects(dict.fromkeys(fresh))
        for u in updates:
            # late only if stamped before the coordinator's time (a source that joined late)
            arrival = u.ts_ms if coord.now_ms is None else max(u.ts_ms, coord.now_ms)
            coord.receive(u, arrival_ms=arrival)
            hub.counts.messages.add(u)
        out, self.outbox = self.outbox, []
        watermark = hub.watermark()
        if watermark is not None:
            horizon = watermark - 1  # see the module docstring
            if coord.settled_ms is not None:
                horizon = max(horizon, coord.settled_ms)
            out += coord.advance(horizon)
            out += self._run_deferred()
            out += self._expand_globs(hub)
        waiting = {name: hub.idle_of(q.objects) for name, q in coord.queries.items()}
        self.waiting = {name: sources for name, sources in waiting.items() if sources}
        decided = sorted(out, key=lambda m: m.seq)
        for m in decided:
            hub.counts.messages.add(m)  # counted once, when decided
        control: dict[str, list[Row]] = {}
        waiting, self.parked = self.parked + decided, []
        for m in waiting:
            source = hub.source_of(m.object_id)
            if source is None:  # no row has shown where this series lives yet
                self.parked.append(m)
                continue
            control.setdefault(source, []).append({"seq": m.seq, "payload": to_dict(m)})
        return control

    def _run_deferred(self) -> list[WidthMessage]:
        out: list[WidthMessage] = []
        for op in self.deferred:
            if op[0] == "add":
                out += self.coordinator.add_query(op[1])
            elif op[0] == "alter":
                out += self.coordinator.alter_query(op[1], op[2], immediately=op[3])
            else:
                out += self.coordinator.remove_query(op[1])
        self.deferred = []
        return out

    def _expand_globs(self, hub: CoordinatorNode) -> list[WidthMessage]:
        """Re-register each glob query whose matching series changed (at the current time)."""
        out: list[WidthMessage] = []
        known = sorted(set(hub.known_series()) - hub.shared)
        if len(known) == self._globs_expanded_over:
            return out  # no new series (the set only grows) and no new glob query since
        self._globs_expanded_over = len(known)
        for name, statement in list(self.globbed.items()):
            waiting = [
                t for t in statement.terms if not any(series_matches(k, [t.series]) for k in known)
            ]
            if waiting:  # a term matches no series yet
                continue
            try:
                query = to_query(resolve_aggregate(statement, known))
            except ValueError as e:  # it never will (weights summing to 0): drop it, say why
                del self.globbed[name]
                self.dropped[name] = str(e)
                if name in self.coordinator.queries:
                    out += self.coordinator.remove_query(name)
                continue
            old = self.coordinator.queries.get(name)
            if old is not None and old.objects == query.objects:
                continue
            if old is not None:
                out += self.coordinator.remove_query(name)
            out += self.coordinator.add_query(query)
        return out

    # -- answers ----------------------------------------------------------------------------

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query, as of the coordinator's time (``as_of_ms``)."""
        return self.coordinator.answers()

    def progress(self) -> dict[str, Any]:
        # event time up to which every source has reported: answers are exact as of it
        # waitingOn: the idle sources each answer holds at their newest time (docs/time.md)
        return {
            "watermark": self.coordinator.settled_ms,
            "droppedQueries": dict(self.dropped),
            "waitingOn": dict(self.waiting),
        }


def _add(hub: CoordinatorNode, statement: AggregateDef, source_of: Any) -> str:
    part = hub.part("bounded")
    globs = [t.series for t in statement.terms if is_glob(t.series)]
    if globs:
        part.add_glob_query(hub, statement)
        return (
            f"added {statement.name!r}: {statement.aggregate.upper()} over the series matching "
            f"{', '.join(globs)} as they appear, within {statement.delta:g}"
        )
    names = [t.series for t in statement.terms]
    query = to_query(resolve_aggregate(statement, names))
    part.add_query(hub, query, dict(source_of(list(query.objects))) if source_of else None)
    return (
        f"added {query.name!r}: {statement.aggregate.upper()} of {len(names)} series "
        f"within {statement.delta:g}"
    )


def _alter(hub: CoordinatorNode, statement: AlterPrecision) -> str:
    name = hub.registered_name(statement.name)
    hub.alter_precision(name, statement.delta, now=statement.immediately)
    now = " immediately" if statement.immediately else ""
    return f"altered {name!r} to within {statement.delta:g}{now}"


def _describe(statement: AggregateDef | AlterPrecision) -> tuple[str, str, str]:
    if isinstance(statement, AlterPrecision):
        now = " IMMEDIATELY" if statement.immediately else ""
        return "ALTER", "-", f"WITHIN {statement.delta:g}{now}"
    of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
    return of, "-", f"WITHIN {statement.delta:g}"


def _job_check(statement: AggregateDef) -> None:
    if not any(is_glob(t.series) for t in statement.terms):
        to_query(resolve_aggregate(statement, [t.series for t in statement.terms]))


def _line(a: Answer) -> str:
    """``2 in [1.5, 2.5] as of 2024-01-01T00:00:00.119Z (1704067200119 ms)``; an answer not
    known yet says why instead of ``nan in [-inf, inf]``."""
    if a.as_of_ms is None:
        return "not known yet: no data yet"
    as_of = f"as of {format_instant_and_ms(a.as_of_ms)}"
    if math.isnan(a.value):
        return f"not known yet: some of its series have sent no value, {as_of}"
    bounds = f"[{format_value(a.lo)}, {format_value(a.hi)}]"
    return f"{format_value(a.value)} in {bounds} {as_of}"


PART = Part(
    "bounded",
    node=BoundedNode,
    coordinator=BoundedCoordinator,
    sink="answers",
    title="bounded answers",
    line=_line,
    band=lambda a: (a.value, a.lo, a.hi),
)
KIND = QueryKind(
    "bounded",
    "bounded",
    (AggregateDef,),
    add=_add,
    describe=_describe,
    alters=(AlterPrecision,),
    alter=_alter,
    job_check=_job_check,
)
