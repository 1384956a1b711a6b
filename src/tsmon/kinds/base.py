"""What a query kind declares: its statements, and its share of a source node and of the
coordinator.

A *kind* (watch queries, bounded aggregates, top-k, standing queries, summaries, replication) is
one module of :mod:`tsmon.kinds` with one :class:`QueryKind` object. The hosts
(:class:`~tsmon.engine.node.SourceNode`, :class:`~tsmon.engine.hub.CoordinatorNode`, the
Spark job, ``tsmon check``) are generic loops over the registered kinds and never name one.

A kind's node side is a :class:`NodePart` (one per source node), its coordinator side a
:class:`CoordinatorPart` (one per job). Every hook is optional: the defaults do nothing. Time is
always an argument; parts do no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from tsmon.core.groups import code_groups

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["Applied", "CoordinatorPart", "NodePart", "Part", "Points", "QueryKind", "Row"]

Row = dict[str, Any]


@dataclass(frozen=True)
class Points:
    """One batch's valid points at one node, in ``(ts, seq)`` order, as columns.

    ``applied`` marks the points the node applied (not older than their series' newest point,
    not a kept-out duplicate); ``at_ms`` is the node's time when each was applied (the running
    maximum of the timestamps: a point late across batches is applied at the node's time).
    ``names`` are the batch's series, first seen first, and ``codes`` each point's index in
    them (numbered once by the node, for every part).
    """

    series: list[str]
    ts: np.ndarray  # int64 ms
    value: np.ndarray  # float64
    applied: np.ndarray  # bool
    at_ms: np.ndarray  # int64 ms
    names: list[str]
    codes: np.ndarray  # intp, index in names

    @cached_property
    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """The points grouped by series (:func:`~tsmon.core.groups.code_groups`): their
        indices, each series' in order, and where each series' group starts, then the end
        (computed once, shared by every part)."""
        return code_groups(self.codes, len(self.names))

    @cached_property
    def in_order(self) -> Applied:
        """The applied points, in order, as lists (computed once, shared by every part)."""
        keep = self.applied
        if keep.all():  # the usual batch
            series = list(self.series)
        else:
            series = [self.series[i] for i in np.flatnonzero(keep).tolist()]
        return Applied(
            series, self.ts[keep].tolist(), self.value[keep].tolist(), self.at_ms[keep].tolist()
        )


class Applied(NamedTuple):
    """The points a node applied in one batch, in order: ``(series, ts, value, at_ms)``."""

    series: list[str]
    ts: list[int]
    value: list[float]
    at_ms: list[int]


class NodePart:
    """One kind's share of a source node. Optional hooks, called in this order per batch:
    :meth:`parse_control` (every control row first: a bad one raises ``ValueError`` before
    anything changes), :meth:`control`, then, once the node has a time, :meth:`begin`,
    :meth:`observe`, :meth:`advance`; :meth:`outputs` and :meth:`heartbeat` always."""

    #: The ``type`` of the control payloads this part takes.
    control_types: ClassVar[tuple[str, ...]] = ()

    def parse_control(self, payload: Mapping[str, Any], where: str) -> Any:
        """Check one control payload (a ``ValueError`` naming ``where``); what :meth:`control`
        gets. Default: the payload itself."""
        return payload

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        """Apply the batch's ``(seq, parsed payload)`` control items (in any order)."""
        return []

    def begin(self, now_ms: int) -> list[Row]:
        """The node has time ``now_ms``; the batch's points come next."""
        return []

    def observe(self, points: Points) -> list[Row]:
        """The batch's points."""
        return []

    def advance(self, now_ms: int) -> list[Row]:
        """The node's time after the batch."""
        return []

    def outputs(self) -> list[Row]:
        """Rows for the sinks since the last call (events, answers, rejected points)."""
        return []

    def heartbeat(self) -> dict[str, Any]:
        """Fields this part adds to the node's heartbeat."""
        return {}


class CoordinatorPart:
    """One kind's share of the coordinator. Per batch: :meth:`parse_row` for each of its rows
    (all rows first), :meth:`receive`, then :meth:`control` once the coordinator's time moved."""

    #: The ``kind`` of the node rows this part reads.
    row_kinds: ClassVar[tuple[str, ...]] = ()

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Any:
        """Check one node row ``{"source", "kind", "payload"}`` (a ``ValueError`` naming
        ``where``); what :meth:`receive` gets. Default: the row itself."""
        return row

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        """The batch's parsed rows of this part's kinds (in a fixed order)."""

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        """Control rows ``{"seq", "payload"}`` per node key for the next batch."""
        return {}

    def names(self) -> list[str]:
        """The queries of this kind, in registration order."""
        return []

    def answers(self) -> Mapping[str, Any]:
        """Every query's newest answer, by name."""
        return {}

    def arrived(self) -> list[tuple[str, Any]]:
        """``(query, answer)`` pairs that arrived in the last batch (defaults to every
        answer: answers kept current every batch)."""
        return list(self.answers().items())

    def pinned_series(self) -> set[str]:
        """Series that must come from one source (a bounded filter has one home)."""
        return set()

    def reads(self, names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, ...], ...]]:
        """The series patterns each query reads, by name, as groups: the query has no answer
        until every group matches a series that sent a point (a watch query's ``ON`` list is
        one group, each term of an aggregate one). The hub says why a query waits from these
        (:mod:`tsmon.engine.waiting`); queries that read no series are left out. ``names``:
        only the queries of these registered names (None: every query), so that asking
        about one query does not cost every query's patterns."""
        return {}

    def heartbeat(self, source: str, payload: Mapping[str, Any]) -> None:
        """A node's heartbeat (its extra fields)."""

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        """Unregister query ``name`` (its registered spelling)."""
        raise ValueError(f"{name!r} cannot be removed")

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        """``ALTER QUERY name WITHIN delta [IMMEDIATELY]``."""
        raise ValueError(f"{name!r} has no precision to alter")

    def progress(self) -> dict[str, Any]:
        """This kind's fields of the job's progress record (none by default)."""
        return {}


@dataclass(frozen=True)
class Part:
    """A hosting part: a protocol's share of every source node and of the coordinator.

    ``node(settings, key)`` makes its :class:`NodePart` of a source node, ``coordinator(settings)``
    its :class:`CoordinatorPart` (``None``: it has none); ``sink`` names the directory of its
    answers in the Parquet sink (``None``: it has none), ``title`` their console table and
    ``line(answer)`` shows one answer in a line. A job's statements of a part with
    ``at_nodes`` are the text every node (and the coordinator part) starts with; those of
    other parts are registered at the coordinator when it is made. ``tracks(statements)``
    names the series every node must model from the start. A part may own whole node keys:
    keys starting with ``reserved_prefix`` are nodes of their own, made by
    ``reserved_node(settings, key)``. ``band(answer)`` gives an answer's ``(value, lo, hi)``
    (bounds ``None`` when it has none) for gauges and plots; ``None``: its answers are no number.
    """

    name: str
    node: Callable[[HostSettings, str], NodePart] | None = None
    coordinator: Callable[[HostSettings], CoordinatorPart] | None = None
    sink: str | None = None
    title: str | None = None
    line: Callable[[Any], str] | None = None
    at_nodes: bool = False
    tracks: Callable[[Sequence[Any]], list[str]] | None = None
    reserved_prefix: str | None = None
    reserved_node: Callable[[HostSettings, str], Any] | None = None
    band: Callable[[Any], tuple[float, float | None, float | None]] | None = None


@dataclass(frozen=True)
class QueryKind:
    """A statement kind of the language and how a running job takes it.

    ``part`` names the :class:`Part` that hosts it (watch and summary queries share one);
    ``statements`` are the definitions it registers and ``alters`` the changes it takes;
    ``add(hub, statement, source_of)`` and ``alter(hub, statement)`` apply them to a
    coordinator and return what happened, in words; ``describe(statement)`` gives the
    ``tsmon check`` columns (as/on, windows, within/since); ``check(statement)`` checks what
    can be checked without the job's series (a ``ValueError``), ``job_check(statement)`` what
    a job's own statements must also pass (their series are named before any row is seen).
    """

    name: str
    part: str
    statements: tuple[type, ...]
    add: Callable[[CoordinatorNode, Any, Any], str]
    describe: Callable[[Any], tuple[str, str, str]]
    alters: tuple[type, ...] = ()
    alter: Callable[[CoordinatorNode, Any], str] | None = None
    check: Callable[[Any], Any] | None = None
    job_check: Callable[[Any], None] | None = None

    def defines(self, statement: object) -> bool:
        """Whether ``statement`` is one of this kind's definitions."""
        return isinstance(statement, self.statements)

    def changes(self, statement: object) -> bool:
        """Whether ``statement`` is one of this kind's alter statements."""
        return isinstance(statement, self.alters)
