"""The coordinator as a pure step per batch: node rows of batch ``N`` in, control for ``N+1``
out, over the coordinator parts of every registered query kind (:mod:`tsmon.kinds`).

The hub itself keeps what every kind shares: where each series lives (learned from the rows,
else declared), each source's newest time, the batch ids applied, and the counts of what
crossed. Rows go to the part that reads their ``kind``; the parts' control rows are merged per
node key in the registry's order. Statements reach the parts through their kind
(:func:`tsmon.kinds.kind_of`): :meth:`CoordinatorNode.add` and :meth:`CoordinatorNode.alter`.
"""

from __future__ import annotations

import numbers
import pickle
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tsmon import kinds
from tsmon.engine.settings import HostSettings
from tsmon.engine.waiting import Groups, Waiting, why_waiting
from tsmon.kinds import CoordinatorPart
from tsmon.protocols.filters.messages import MessageCounts
from tsmon.query import query_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.protocols.filters.queries import Query

__all__ = ["BatchCounts", "CoordinatorNode"]

Row = dict[str, Any]
SourceOf = Callable[[list[str]], Mapping[str, str]]


def _copied(control: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """A deep copy of plain rows (a pickle round trip: several times faster than deepcopy)."""
    return pickle.loads(pickle.dumps(control, protocol=pickle.HIGHEST_PROTOCOL))


_ROW_KEYS = frozenset(("source", "kind", "payload"))


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


@dataclass
class BatchCounts:
    """What crossed between the nodes and the coordinator, each row counted once.

    ``messages`` counts the adaptive filters' streamed updates received and growth/shrink
    messages sent; ``rows_in`` every row the coordinator read (protocol messages, events, dead
    letters and ``heartbeats``); ``control_rows`` every row it wrote; ``batches`` the batches
    applied (a replayed batch is not counted again).
    """

    messages: MessageCounts = field(default_factory=MessageCounts)
    rows_in: int = 0
    heartbeats: int = 0
    control_rows: int = 0
    batches: int = 0


class CoordinatorNode:
    """The coordinator: the parts of every registered kind behind one step per batch.

    Width messages and readers' requests go to the source of their series, learned from the
    rows (a streamed update, or a heartbeat's ``series``), else declared by ``source_of``.
    A batch id is applied once: stepping the last batch id again returns the same control and
    changes nothing; an older id raises. :meth:`snapshot` after each step and :meth:`restore`
    before a replay make a replayed batch give identical control (ARCHITECTURE: the driver
    snapshots ``state_N`` before writing ``ctrl-<N>.json``).
    """

    def __init__(self, settings: HostSettings, source_of: Mapping[str, str] | None = None) -> None:
        self.parts: dict[str, CoordinatorPart] = {
            p.name: p.coordinator(settings) for p in kinds.PARTS if p.coordinator is not None
        }
        self._by_kind = {k: name for name, part in self.parts.items() for k in part.row_kinds}
        self.shared: set[str] = set()  # series seen at several sources (fine for top-k)
        self.sources: set[str] = set()  # every source that sent a heartbeat
        self.declared: dict[str, str] = dict(source_of or {})  # series -> source, as told
        self.learned: dict[str, str] = {}  # series -> source, as seen in rows: authoritative
        self.source_now: dict[str, int] = {}  # source -> newest now_ms it reported
        self.idle_timeout_ms = settings.idle_timeout_ms
        self.advanced: set[str] = set()  # sources whose time moved on in the last step
        self.last_batch_id: int | None = None
        self.last_control: dict[str, list[Row]] = {}
        self.counts = BatchCounts()
        self._seen: dict[str, str] = {}  # series -> source, as the current batch shows it
        self._pinned: set[str] = set()  # series that must come from one source, this batch
        self.waiting = Waiting()  # queries whose series have sent nothing yet, and why
        self._revision = 0  # query changes so far (the waiting notes depend on them)

    # ----------------------------------------------------------------- where things are

    def part(self, name: str) -> Any:
        """The coordinator part called ``name`` (a :data:`tsmon.kinds.PARTS` name)."""
        return self.parts[name]

    def source_of(self, series: str) -> str | None:
        """Where ``series``'s points come from, if known."""
        return self.learned.get(series, self.declared.get(series))

    def located(self, series: str, default: str) -> str:
        """The source a row showed ``series`` at, else ``default``."""
        return self.learned.get(series, default)

    def declare(self, sources: Mapping[str, str]) -> None:
        """Declare the sources of series no row has shown yet."""
        self.declared.update(sources)

    def known_series(self) -> list[str]:
        """Every series a row showed or ``source_of`` declared, sorted."""
        return sorted({*self.learned, *self.declared})

    def job_now(self) -> int | None:
        """The newest time any source reported (None before any)."""
        return max(self.source_now.values()) if self.source_now else None

    def idle_sources(self) -> list[str]:
        """Sources whose time did not advance in the last step and is more than
        ``idle_timeout_ms`` behind the job's newest time (event time, so a replay decides the
        same; docs/time.md), sorted. A source that advances is never idle, however far
        behind: it still sends what it owes."""
        newest = self.job_now()
        if newest is None or self.idle_timeout_ms is None:
            return []
        late = newest - self.idle_timeout_ms
        return sorted(s for s, t in self.source_now.items() if t < late and s not in self.advanced)

    def idle_of(self, series: Sequence[str], idle: Collection[str] | None = None) -> list[str]:
        """The idle sources among those of ``series``, sorted; ``idle``: the
        :meth:`idle_sources`, when the caller has them already."""
        idle = self.idle_sources() if idle is None else idle
        return sorted(set(idle).intersection(map(self.source_of, series))) if idle else []

    def watermark(self) -> int | None:
        """The oldest time of the sources that are not idle (None before any reported): every
        such source has sent all it will send stamped before it."""
        idle = set(self.idle_sources())
        active = [t for s, t in self.source_now.items() if s not in idle]
        return min(active) if active else None

    def progress(self) -> dict[str, Any]:
        """What the hub adds to a batch's progress: the idle sources and their newest times,
        ``unmatchedQueries`` (every query of any kind that waits for its series: name -> why)
        and ``startedMatching`` (name -> the series it now reads, in the step its note went
        away)."""
        return {
            "idleSources": {s: self.source_now[s] for s in self.idle_sources()},
            "unmatchedQueries": dict(self.waiting.notes),
            "startedMatching": dict(self.waiting.started),
        }

    def pinned_series(self) -> set[str]:
        """Series that must come from one source."""
        return set().union(*(p.pinned_series() for p in self.parts.values()))

    def locate(self, series: str, source: str, where: str, *, strict: bool) -> None:
        """Note that a row of ``source`` shows ``series`` (a ``ValueError`` if it must come
        from one source and is known at another)."""
        known = self._seen.get(series, self.learned.get(series, self.declared.get(series, source)))
        if known != source and (strict or series in self._pinned):
            raise ValueError(
                f"{where}: series {series!r} comes from source {source!r} but is known at "
                f"{known!r}; a bounded query needs each of its series at one source "
                "(fix source_of or the data)"
            )
        if known != source:
            self.shared.add(series)
        self._seen.setdefault(series, known)

    # ----------------------------------------------------------------- queries

    def names(self) -> list[str]:
        """Every query name, of every kind, once every deferred change is made."""
        return list(dict.fromkeys(n for p in self.parts.values() for n in p.names()))

    def free(self, name: str) -> None:
        """Refuse ``name`` if a query of any kind has it (names ignore case)."""
        taken = {query_key(n): n for n in self.names()}
        if query_key(name) in taken:
            raise ValueError(
                f"query {name!r} exists (as {taken[query_key(name)]!r}); remove it first"
            )

    def registered_name(self, name: str) -> str:
        """The registered spelling of query ``name`` (names ignore case); a ``KeyError``
        naming the registered queries if there is none."""
        for known in self.names():
            if query_key(known) == query_key(name):
                return known
        raise KeyError(f"no query {name!r}; registered: {sorted(self.names())!r}")

    def reads(self, names: Collection[str] | None = None) -> dict[str, Groups]:
        """The series patterns every query reads, by name (:mod:`tsmon.engine.waiting`);
        ``names``: only these queries (None: all)."""
        return {n: g for p in self.parts.values() for n, g in p.reads(names).items()}

    def why_waiting(self, name: str) -> str | None:
        """Why query ``name`` has no answer yet as of now (None: its series have sent points,
        or it reads none)."""
        return self.waiting_now([name]).get(name)

    def waiting_now(self, names: Iterable[str]) -> dict[str, str]:
        """Why each query of ``names`` that has no answer yet as of now waits (the others
        left out), in the order of ``names``: every query's reads and the series looked up
        once, not once per query."""
        names = list(names)
        reads, known = self.reads(names), self.known_series()
        out = {}
        for name in names:
            groups = reads.get(name)
            if groups is None:  # it reads no series
                continue
            why = why_waiting(groups, known, self.learned.keys(), self.declared, self.sources)
            if why is not None:
                out[name] = why
        return out

    def _waits(self, name: str) -> str:
        why = self.why_waiting(name)
        return "" if why is None else f"; it waits: {why}"

    def _owner(self, name: str) -> CoordinatorPart:
        for part in self.parts.values():
            if name in part.names():
                return part
        raise KeyError(f"no query {name!r}; registered: {sorted(self.names())!r}")

    def add(self, statement: Any, source_of: SourceOf | None = None) -> str:
        """Register a definition of any kind; returns what happened, in words. ``source_of``
        names the sources of series a query reads that no row has shown yet."""
        kind = kinds.kind_of(statement)
        if not kind.defines(statement):
            raise ValueError(f"{type(statement).__name__} changes a registered query: use alter")
        what = kind.add(self, statement, source_of)
        self._revision += 1
        return what + self._waits(statement.name)

    def add_query(self, query: Query, source_of: Mapping[str, str] | None = None) -> None:
        """Register a bounded aggregate of the filter protocol, a
        :class:`~tsmon.protocols.filters.queries.Query` (see
        :meth:`tsmon.kinds.bounded.BoundedCoordinator.add_query`)."""
        self.part("bounded").add_query(self, query, source_of)
        self._revision += 1

    def alter(self, statement: Any) -> str:
        """Apply an alter statement (or a watch query redefined in place)."""
        kind = kinds.alter_kind(statement)
        assert kind.alter is not None
        what = kind.alter(self, statement)
        self._revision += 1
        return what + self._waits(self.registered_name(statement.name))

    def alter_precision(self, name: str, delta: float, *, now: bool = False) -> None:
        """``ALTER QUERY name WITHIN delta [IMMEDIATELY]`` for a query of any kind."""
        name = self.registered_name(name)
        self._owner(name).alter_precision(self, name, delta, now)
        self._revision += 1

    def remove_query(self, name: str) -> None:
        """Unregister query ``name`` (any kind; names ignore case)."""
        name = self.registered_name(name)
        self._owner(name).remove(self, name)
        self._revision += 1

    def answers(self, kind: str = "bounded") -> Mapping[str, Any]:
        """The newest answer of every query of ``kind`` (a kind's or a part's name: bounded,
        topk, standing, summary; bounded aggregates by default)."""
        return self.parts[kinds.answers_part(kind)].answers()

    # ----------------------------------------------------------------- the step

    def step(self, batch_id: int, outputs: Sequence[Mapping[str, Any]]) -> dict[str, list[Row]]:
        """Apply batch ``batch_id``'s node rows (each with its ``"source"``); return the control
        rows ``{"seq", "payload"}`` of the next batch, per node key (keys with none left out).

        The result does not depend on the order of ``outputs``. A bad row raises
        ``ValueError`` before anything changes.
        """
        if not _is_int(batch_id):
            raise ValueError(f"batch_id must be an int, got {batch_id!r}")
        if self.last_batch_id is not None and batch_id <= self.last_batch_id:
            if batch_id == self.last_batch_id:
                return _copied(self.last_control)  # a replay: applied already
            raise ValueError(
                f"batch {batch_id} is older than the last applied batch {self.last_batch_id}; "
                f"restore the snapshot taken after batch {batch_id - 1} to replay it"
            )
        rows, now_of, heartbeats = self._parse(outputs)
        for source, payload in heartbeats:
            for part in self.parts.values():
                part.heartbeat(source, payload)
        for name, part in self.parts.items():
            part.receive(self, rows.get(name, []))
        self.advanced = set()
        for source, now in now_of.items():
            if now is not None and (source not in self.source_now or now > self.source_now[source]):
                self.source_now[source] = now
                self.advanced.add(source)
        self.learned.update(sorted(self._seen.items()))
        self.sources.update(now_of)
        control: dict[str, list[Row]] = {}
        for part in self.parts.values():
            for key, part_rows in part.control(self).items():
                control.setdefault(key, []).extend(part_rows)
        control = dict(sorted(control.items()))
        self.counts.control_rows += sum(len(r) for r in control.values())
        self.counts.rows_in += len(outputs)
        self.counts.heartbeats += len(heartbeats)
        self.counts.batches += 1
        series = (len(self.learned), len(self.declared), len(self.sources))
        self.waiting.step(self, series, self._revision)
        self.last_batch_id, self.last_control = int(batch_id), control
        return _copied(control)

    def _parse(
        self, outputs: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, list], dict[str, int | None], list[tuple[str, Mapping]]]:
        """Validate every row: the parsed rows per part, each source's newest ``now_ms`` and
        the heartbeats. A series may come from several sources (a top-k metric summed over
        them): such a series is *shared*; a bounded query over it fails."""
        self._seen, self._pinned = {}, self.pinned_series()
        rows: dict[str, list] = {}
        now_of: dict[str, int | None] = {}
        heartbeats: list[tuple[str, Mapping]] = []
        for n, row in enumerate(outputs):
            where = f"output row {n}"
            if not (type(row) is dict or isinstance(row, Mapping)) or not row.keys() >= _ROW_KEYS:
                raise ValueError(f"{where}: expected source, kind and payload, got {row!r}")
            source, kind, payload = row["source"], row["kind"], row["payload"]
            if not isinstance(source, str):
                raise ValueError(f"{where}: source must be a str, got {source!r}")
            if kind == "heartbeat":
                now = payload.get("now_ms") if isinstance(payload, Mapping) else None
                series = payload.get("series", []) if isinstance(payload, Mapping) else None
                if not (now is None or _is_int(now)) or not isinstance(series, list):
                    raise ValueError(f"{where}: bad heartbeat payload {payload!r}")
                for s in series:
                    self.locate(s, source, where, strict=False)
                heartbeats.append((source, payload))
                old = now_of.get(source)
                if old is None or (now is not None and now > old):
                    now_of[source] = now
                continue
            name = self._by_kind.get(kind)
            if name is None:
                kinds = ", ".join(repr(k) for k in ["heartbeat", *self._by_kind])
                raise ValueError(f"{where}: kind must be one of {kinds}, got {kind!r}")
            rows.setdefault(name, []).append(self.parts[name].parse_row(self, row, where))
        heartbeats.sort(key=lambda h: h[0])
        return rows, dict(sorted(now_of.items())), heartbeats

    # ----------------------------------------------------------------- state

    def snapshot(self) -> bytes:
        """The whole state, pickled (restore only snapshots this job wrote: it is a pickle)."""
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        """Replace this node's state by a :meth:`snapshot`."""
        state = pickle.loads(data)
        if not isinstance(state, CoordinatorNode):
            raise TypeError(f"not a CoordinatorNode snapshot: {type(state).__name__}")
        self.__dict__ = state.__dict__
