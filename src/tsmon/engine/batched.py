"""The batch-synchronous runtime in one process: the steps Spark hosts, as its reference.

In Spark every micro-batch ``N`` runs two steps: each source node
(:class:`~tsmon.engine.node.SourceNode`, one per ``source`` key) applies the control rows the
coordinator wrote in batch ``N−1``, then its data points of batch ``N``; the driver then runs
the coordinator (:class:`~tsmon.engine.hub.CoordinatorNode`) once on all of their rows and
writes the control rows of batch ``N+1``. :class:`BatchedRuntime` wires the same objects in
one process, with the same one-batch delay, so the Spark job must agree with it batch for
batch. Both steps are generic loops over the registered query kinds (:mod:`tsmon.kinds`).
"""

from __future__ import annotations

import copy
import functools
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from tsmon.engine import guard
from tsmon.engine.events import event_order
from tsmon.engine.hub import BatchCounts, CoordinatorNode
from tsmon.engine.journal import Journal
from tsmon.engine.node import SourceNode, new_node
from tsmon.engine.replicas import DEFAULT_PHASE_MS
from tsmon.engine.settings import BACKLOG, DAY_MS, HOUR_MS, HostSettings, RegisterSettings
from tsmon.engine.source_points import SourcePoints, split_points, step_source
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.transport import Transport
from tsmon.kinds import JobStatements
from tsmon.protocols.filters.queries import Query
from tsmon.query import parse_queries

__all__ = ["BatchedRuntime"]

Row = dict[str, Any]
T = TypeVar("T")


class BatchedRuntime:
    """The in-process reference of the Spark job: source nodes and a coordinator, per batch.

    Each :meth:`run_batch` (:meth:`step_batch`, then the answers) groups the points by
    source, steps every node that has points or control due (by default, written by the
    previous batch), then the coordinator.
    ``period_ms`` is the filters' ``T`` (None: chosen online by the coordinator, which tells
    the sources in its width messages; :mod:`tsmon.protocols.filters.tuning`); ``queries``
    are the job's statements of any kind (watch and top-k queries start at every
    node, the others are registered at the coordinator); ``transport`` carries the control
    (the next batch, as on Spark, by default; :mod:`tsmon.engine.transport`); ``source_of``
    declares the source of series that queries read before their first point; ``registers``
    gives every node its stored points (watch queries need them); ``max_future_ms`` and
    ``idle_timeout_ms`` (None: off) are the limits of docs/time.md, ``backlog`` the
    coordinator's queue bound per series (None: unbounded; docs/time.md). :meth:`answers`
    gives any kind's answers, :meth:`events` the last batch's events, :attr:`last_outputs` all
    its node rows.

    Examples
    --------
    >>> rt = BatchedRuntime(period_ms=1_000, shrink=0.1, seed=0, source_of={"a": "n1", "b": "n2"})
    >>> rt.add_query(Query.avg("q", ["a", "b"], 1.0))
    >>> _ = rt.run_batch([("n1", "a", 100, 1.0), ("n2", "b", 100, 3.0)])  # shrinks go out
    >>> _ = rt.run_batch([("n1", "a", 110, 1.2), ("n2", "b", 110, 3.0)])  # sources reply
    >>> rt.run_batch([("n1", "a", 120, 1.3), ("n2", "b", 120, 3.1)])["q"]  # inside the bounds
    Answer(value=2.0, lo=1.5, hi=2.5, as_of_ms=119)
    >>> rt.counts.messages
    MessageCounts(streamed=2, growth=0, shrink=2, replies=2)
    """

    def __init__(
        self,
        period_ms: int | None,
        shrink: float,
        seed: int,
        source_of: Mapping[str, str] | None = None,
        growth: str = "paper",
        registers: RegisterSettings | None = None,
        queries: str = "",
        standing_settings: StandingSettings | None = None,
        replica_phase_ms: int = DEFAULT_PHASE_MS,
        max_future_ms: int | None = DAY_MS,
        idle_timeout_ms: int | None = HOUR_MS,
        transport: Transport | None = None,
        backlog: int | None = BACKLOG,
    ) -> None:
        job = JobStatements.of(parse_queries(queries) if queries.strip() else [])
        settings = HostSettings(
            None if period_ms is None else int(period_ms),
            float(shrink),
            seed,
            growth,
            registers,
            standing_settings or StandingSettings(),
            replica_phase_ms,
            job.node_text,
            job.tracked,
            max_future_ms,
            idle_timeout_ms,
            backlog,
        )
        self._host(settings, source_of, transport)
        for statement in job.registered:
            self.hub(change=True).add(statement)

    @classmethod
    def from_settings(
        cls,
        settings: HostSettings,
        source_of: Mapping[str, str] | None = None,
        transport: Transport | None = None,
    ) -> BatchedRuntime:
        """A runtime with a job's settings (``settings.queries``: the nodes' initial text);
        register the coordinator's queries on :attr:`coordinator`."""
        runtime = cls.__new__(cls)
        runtime._host(settings, source_of, transport)
        return runtime

    def _host(
        self,
        settings: HostSettings,
        source_of: Mapping[str, str] | None,
        transport: Transport | None,
    ) -> None:
        SourceNode("", settings)  # refuses bad settings (or watch queries without registers)
        self.settings = settings
        self._hub = CoordinatorNode(settings, source_of)
        self.new_node = functools.partial(new_node, settings=settings)
        self._nodes: dict[str, Any] = {}
        # the quarantine's restore points (engine/journal.py): the coordinator's, each node's;
        # once handed out (the coordinator and nodes attributes), a copy before every step
        self._hub_journal = Journal(_replay_hub)
        self._journals: dict[str, Journal] = {}
        self._hub_out = self._nodes_out = False
        self.transport = transport or Transport(delay=1)  # as on Spark: the next batch
        self.batch_id = -1
        self.last_outputs: list[Row] = []  # the node rows of the last batch
        self._seq = 0  # arrival order of points over all batches
        self.errors: list[str] = []  # what the last batch quarantined, and why
        self.quarantined: list[Row] = []  # node rows the coordinator left out, as dead letters
        self.rows = guard.RowCounts(0, 0, 0, 0)  # the last batch's input rows and their fate

    @property
    def coordinator(self) -> CoordinatorNode:
        """The coordinator itself. Whoever holds it may change it between batches, where the
        runtime cannot see it, so once it is handed out the runtime pickles it before every
        step (the quarantine's restore point) instead of replaying its journal; the runtime's
        own methods and :meth:`hub` do not hand it out."""
        self._hub_out = True
        return self._hub

    @coordinator.setter
    def coordinator(self, hub: CoordinatorNode) -> None:
        self._hub, self._hub_out = hub, True

    @property
    def nodes(self) -> dict[str, Any]:
        """The nodes by key, themselves: once handed out, as :attr:`coordinator`, each is
        pickled before every step. :meth:`node` reads one without handing it out."""
        self._nodes_out = True
        return self._nodes

    def hub(self, *, change: bool = False) -> CoordinatorNode:
        """The coordinator for the engine's hosts, to use at once and not keep: to read
        (``change=False``), or to change before the next batch (``change=True``: its next step
        starts from a new snapshot, since a change outside the steps is not in its journal)."""
        if change:
            self._hub_journal.changed()
        return self._hub

    def change(self, change: Callable[[CoordinatorNode], T]) -> T:
        """``change(coordinator)`` before the next batch, logged in the coordinator's journal
        (:meth:`~tsmon.engine.journal.Journal.applied`: it must give the same state again
        from the same state, and what it reads must not change after it), so that the next
        step needs no snapshot; returns what it returns. One that raises is not logged: the
        next step starts from a snapshot, as after :meth:`hub` with ``change=True``."""
        try:
            out = change(self._hub)
        except BaseException:
            self._hub_journal.changed()
            raise
        self._hub_journal.applied(change)
        return out

    def node(self, key: str) -> Any | None:
        """The node of ``key`` (None before its first step), to read at once and not keep."""
        return self._nodes.get(key)

    def open_source(self, source: str) -> None:
        """Step ``source``'s node in the next batch even without points: the coordinator then
        knows the source, and the queries reach its node before its first point."""
        self.transport.send(self.batch_id, {source: []})

    def add_query(self, query: Query, source_of: Mapping[str, str] | None = None) -> None:
        """Register a bounded aggregate of the filter protocol (see
        :meth:`tsmon.kinds.bounded.BoundedCoordinator.add_query`)."""
        given = dict(source_of or {})  # as of now: the change is replayed later
        self.change(lambda hub: hub.add_query(query, given))

    def alter_query(self, name: str, delta: float, *, immediately: bool = False) -> None:
        """Change the precision constraint of query ``name`` (any kind that has one)."""
        self.change(lambda hub: hub.alter_precision(name, delta, now=immediately))

    def remove_query(self, name: str) -> None:
        """Unregister query ``name``."""
        self.change(lambda hub: hub.remove_query(name))

    def run_batch(
        self, points: Sequence[tuple[str, str, int, float]], clock_ms: int | None = None
    ) -> Mapping[str, Any]:
        """:meth:`step_batch`, then return the bounded answers."""
        self.step_batch(points, clock_ms)
        return self._hub.answers()

    def step_batch(
        self, points: Sequence[tuple[str, str, int, float]], clock_ms: int | None = None
    ) -> None:
        """Run one micro-batch of ``(source, series, ts, value)`` points. ``clock_ms`` is the
        batch's processing time (the wall clock by default): points stamped more than
        ``max_future`` after it are dead letters.

        A step that raises for an unforeseen reason is quarantined
        (:mod:`tsmon.engine.guard`): the rows it could not take are ``quarantined`` dead
        letters (a node's among :attr:`last_outputs`, the coordinator's in
        :attr:`quarantined`), :attr:`errors` says what failed, and the job goes on.
        :attr:`rows` counts the batch's points: received = accepted + dead letters, and the
        coordinator's left-out rows apart (:class:`~tsmon.engine.guard.RowCounts`).

        Every point is checked before any node steps: a bad one raises ``ValueError`` and the
        batch does not happen.
        """
        groups = split_points(points, self._seq, self._hub)
        self._seq += len(points)
        self.batch_id += 1
        clock = int(time.time() * 1000) if clock_ms is None else clock_ms
        step = functools.partial(step_source, clock_ms=clock)
        outputs: list[Row] = []
        self.errors = []
        due = self.transport.due(self.batch_id)
        for source in sorted(set(groups) | set(due)):
            control, data = due.get(source, []), groups.get(source)
            node, journal = self._node_journal(source)
            journal.begin(node, copy=self._nodes_out)
            node, rows, error = guard.node_step(
                node, journal.restore, control, data, step=step, rows_of=SourcePoints.rows
            )
            self._nodes[source] = node
            if error is None:
                inputs = functools.partial(_node_inputs, control, data, clock)
                journal.stepped(len(control) + (0 if data is None else data.size), inputs)
            else:
                journal.changed()
                self.errors.append(f"source {source!r}: {error}")
            outputs += [{**row, "source": source} for row in rows]
        self.last_outputs = outputs
        journal = self._hub_journal
        journal.begin(self._hub, copy=self._hub_out)
        self._hub, control, quarantine = guard.coordinator_step(
            self._hub, self.batch_id, outputs, journal.restore
        )
        if quarantine.error is None:
            inputs = functools.partial(_hub_inputs, self.batch_id, outputs)
            journal.stepped(len(outputs), inputs)
        else:
            journal.changed()
        self.transport.send(self.batch_id, control)
        self.quarantined = quarantine.rows
        self.rows = guard.row_counts(outputs, quarantine)
        if quarantine.error is not None:
            self.errors.append(f"coordinator, sources {quarantine.sources}: {quarantine.error}")

    def _node_journal(self, key: str) -> tuple[Any, Journal]:
        """Node ``key`` (a new one from :attr:`new_node` if it has none) and its journal."""
        node, journal = self._nodes.get(key), self._journals.get(key)
        if node is None or journal is None:
            fresh = functools.partial(self._new_node, key)
            journal = self._journals[key] = Journal(_replay_node, fresh)
            if node is None:
                node = journal.restore()
            else:  # a node put in by hand: not the factory's
                journal.changed()
        return node, journal

    def _new_node(self, key: str) -> Any:
        return self.new_node(key)  # the factory at the time of the call (tests replace it)

    @property
    def control(self) -> dict[str, list[Row]]:
        """The control rows on their way to the nodes (with the default transport: those the
        last batch wrote, for the next)."""
        return self.transport.in_flight()

    def answers(self, kind: str = "bounded") -> Mapping[str, Any]:
        """The newest answer of every query of ``kind``: ``bounded``, ``topk``, ``standing`` or
        ``summary`` (see :meth:`CoordinatorNode.answers`)."""
        return self._hub.answers(kind)

    def events(self) -> list[Mapping[str, Any]]:
        """The ``event`` rows of the last batch, in :func:`~tsmon.engine.events.event_order`."""
        return event_order(self.last_outputs)

    @property
    def counts(self) -> BatchCounts:
        """Messages and rows that crossed so far (a copy: the coordinator's own are its state,
        which only its steps change)."""
        return copy.deepcopy(self._hub.counts)


def _node_inputs(control: list[Row], data: SourcePoints | None, clock_ms: int) -> tuple[Any, ...]:
    """A node step's logged inputs: the control pickled (its rows are the transport's, which
    a node's parts may keep), the points as they are (made for this step; a node copies
    its columns)."""
    blob = pickle.dumps(control, protocol=pickle.HIGHEST_PROTOCOL) if control else None
    return blob, data, clock_ms


def _replay_node(
    node: Any, control: bytes | None, data: SourcePoints | None, clock_ms: int
) -> None:
    step_source(node, [] if control is None else pickle.loads(control), data, clock_ms)


def _hub_inputs(batch_id: int, rows: list[Row]) -> tuple[Any, ...]:
    """A coordinator step's logged inputs: the batch id and its rows pickled (they are also
    :attr:`BatchedRuntime.last_outputs`, and the parts may keep their payloads)."""
    return batch_id, pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def _replay_hub(hub: CoordinatorNode, batch_id: int, rows: bytes) -> None:
    hub.step(batch_id, pickle.loads(rows))
