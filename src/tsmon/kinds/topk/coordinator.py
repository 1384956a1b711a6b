"""Top-k queries hosted by the batch runtime: monitor nodes at the sources, the coordinator at
the driver (Babcock & Olston 2003 through :mod:`tsmon.protocols.topk`).

``QUERY popular AS TOP 10 OF doc:* BY hits OVER 15m WITHIN 5`` ranks the objects matching
``doc:*`` by the sum of the points of their series ``<object>.hits`` over all sources: each
point is an update ``(O_i, N_j, Δ = value)`` at its source ``N_j`` (the cash-register model of
§1.3), so a series may come from many sources. With ``OVER`` the node cancels each point
(``Δ = −value``) when it leaves the window of the node's own time (its newest timestamp);
without it the counts run from the query's start.

Choices the paper leaves open
    * **Units.** The protocol is exact in integers: values and ε are kept in micro-units
      (``round(x·10⁶)``), so sums are exact to 10⁻⁶ and a fractional ε works. Values are
      limited to ``|x| ≤`` :data:`MAX_VALUE` ``= 2⁵³/10⁶ ≈ 9.007·10⁹``, where ``x·10⁶`` is
      still an exact float integer (beyond it the micro-units are not exact; ``1.8e302``
      would even overflow). A point that cannot be an update is ignored and counted with its
      reason (``ignored`` and ``ignored_why`` in the answer): ``negative`` (it could make a
      partial value negative), ``too large`` (above the limit) or ``not finite``; the point
      still reaches the other queries. An ε above the limit is refused.
    * **Nodes join when they first speak.** A source becomes monitor node ``N_j`` when its
      first top-k message for the query reaches the coordinator (the source saw a matching
      series); its values are then all 0 to the coordinator and ``δ_ij = 0``, which keeps both
      invariants. The join install brings ``T``; the source's first request is stale by then
      and the source asks again (Appendix A), this time as ``N_j``.
    * **Changes** travel as a log to every source, as watch-query changes do: a source that
      appears later gets every definition first. ``ALTER`` (new ``k`` or ε) waits until no
      resolution is under way, then re-runs the initial gather; ``remove`` drops the query
      everywhere. Every message carries the query's generation (its log index), so messages of
      a removed query are ignored by a re-added one of the same name.
    * **Latency**: one micro-batch per hop; a Phase 3 takes two batches, so the answer may lag
      while a resolution runs. ``settled`` is the protocol's own criterion of ε-validity
      (Appendix A): no resolution under way or queued, no change pending, and nothing sent to
      a source in the last step (no install in flight, so no node awaits an answer: a node's
      request reaches the coordinator in the batch it is sent). The requests of one batch
      (and those queued behind a Phase 3) are taken up together: each tries Phase 2, the
      others share one Phase 3 over the union of their objects
      (:class:`~tsmon.protocols.topk.resolver.Resolver`), so no source starves and ``n``
      sources starting at once settle in 3 control batches, not ``2n``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tsmon.kinds.base import CoordinatorPart
from tsmon.kinds.topk.node import (
    UNITS,
    Row,
    to_units,
    topk_statements,
)
from tsmon.protocols.topk.codec import from_dict, to_dict
from tsmon.protocols.topk.coordinator import Coordinator
from tsmon.protocols.topk.messages import MessageCounts, ToCoordinator, ToNode
from tsmon.protocols.topk.resolver import Resolver
from tsmon.query import AlterTopK, TopKDef, format_topk, query_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["TopKAnswer", "TopKCoordinator", "TopKPart"]


@dataclass(frozen=True)
class TopKAnswer:
    """The current answer of a top-k query: ``members`` (sorted by name) is valid within
    ``eps`` whenever ``settled`` (nothing pending or in flight, see the module docstring);
    ``epoch`` counts the changes of the set (Appendix A); ``nodes`` the sources that joined;
    ``messages`` all protocol messages so far; ``ignored`` points the sources skipped, with
    ``ignored_why`` their reasons (``"negative: 2, too large: 1"``)."""

    name: str
    members: tuple[str, ...]
    k: int
    eps: float
    bottom: bool
    epoch: int
    settled: bool
    nodes: int
    messages: int
    ignored: int = 0
    ignored_why: str = ""


@dataclass
class _Running:
    """One top-k query at the coordinator."""

    statement: TopKDef
    gen: int
    resolver: Resolver
    node_of: dict[str, int] = field(default_factory=dict)  # source -> j
    source_of: dict[int, str] = field(default_factory=dict)  # j -> source
    counts: MessageCounts = field(default_factory=MessageCounts)
    pending_alter: TopKDef | None = None
    ignored: dict[str, dict[str, int]] = field(default_factory=dict)  # source -> reason -> n
    in_flight: int = 0  # messages sent to the sources in the last step


class TopKCoordinator:
    """The coordinator of every top-k query, one pure :meth:`step` per batch.

    :meth:`step` takes the batch's ``topk`` rows (each with its ``source``) and returns the
    control rows for the next batch, per source: logged changes (``{"type": "topk", "op",
    "text", "gen"}``, ``seq`` = log index) and protocol messages (``{"type": "topk", "op":
    "msg", "query", "gen", "msg"}``, ``seq`` = a running count).
    """

    def __init__(self, initial: str = "") -> None:
        self.log: list[dict[str, Any]] = []
        self.sent: dict[str, int] = {}  # source -> log entries sent
        self.running: dict[str, _Running] = {}  # by query key
        self.outbox: list[tuple[str, str, ToNode]] = []  # (query key, source, message)
        self._seq = 0
        for statement in topk_statements(initial):
            self.add(statement)
        self.initial = len(self.log)  # every source starts with these (TopKSource(initial))

    # -- queries -----------------------------------------------------------------------

    def names(self) -> list[str]:
        return [r.statement.name for r in self.running.values()]

    def defines(self, name: str) -> bool:
        return query_key(name) in self.running

    def add(self, statement: TopKDef) -> None:
        """Start a top-k query (names are checked by the caller)."""
        key = query_key(statement.name)
        c = Coordinator(0, statement.k, to_units(statement.eps), bottom=statement.bottom)
        gen = len(self.log)
        self.log.append({"op": "add", "text": _text(statement), "gen": gen})
        running = _Running(statement, gen, Resolver(c))
        running.resolver.start()  # no node yet: T = ∅ at once
        self.running[key] = running

    def alter(self, change: AlterTopK) -> None:
        """New ``k`` (and ε): applied with a fresh gather once no resolution is under way."""
        running = self._get(change.name)
        old = running.pending_alter or running.statement
        if change.bottom != old.bottom:
            word = "BOTTOM" if old.bottom else "TOP"
            raise ValueError(
                f"{old.name!r} is a {word} query; to change the direction remove and add it"
            )
        eps = old.eps if change.eps is None else change.eps
        to_units(eps)  # refuse an ε beyond the limit now, not in a later step
        running.pending_alter = dataclasses.replace(old, k=change.k, eps=eps)

    def alter_eps(self, name: str, eps: float) -> None:
        """``ALTER QUERY name WITHIN eps`` on a top-k query."""
        running = self._get(name)
        old = running.pending_alter or running.statement
        self.alter(AlterTopK(old.name, old.bottom, old.k, eps))

    def remove(self, name: str) -> str:
        """Stop a top-k query; returns its registered name."""
        running = self.running.pop(query_key(name))
        self.log.append({"op": "remove", "text": running.statement.name, "gen": len(self.log)})
        return running.statement.name

    def _get(self, name: str) -> _Running:
        running = self.running.get(query_key(name))
        if running is None:
            raise KeyError(f"no top-k query {name!r}; registered: {self.names()!r}")
        return running

    # -- the step ------------------------------------------------------------------------

    def step(self, rows: Sequence[Mapping[str, Any]], sources: Iterable[str]) -> dict[str, list]:
        """Handle the batch's ``topk`` rows (FIFO per source); control for the next batch.

        ``sources`` are every source known to the host (each gets the log).
        """
        inbox: dict[str, list[ToCoordinator]] = {}
        for running in self.running.values():
            running.in_flight = 0
        for row in sorted(rows, key=lambda r: (r["source"], r["payload"]["n"])):
            payload = row["payload"]
            key = query_key(payload["query"])
            running = self.running.get(key)
            if running is None or running.gen != payload["gen"]:
                continue  # a removed query's message
            message = self._receive(running, row["source"], from_dict(payload["msg"]))
            inbox.setdefault(key, []).append(message)
        for key, messages in inbox.items():  # one batch: the longest-waiting node first
            running = self.running[key]
            self._send(key, running, running.resolver.on_messages(messages))
        for key, running in self.running.items():
            if running.pending_alter is not None and not running.resolver.busy:
                statement, running.pending_alter = running.pending_alter, None
                running.statement = statement
                self.log.append({"op": "alter", "text": _text(statement), "gen": running.gen})
                out = running.resolver.restart(statement.k, to_units(statement.eps))
                self._send(key, running, out)
        return self._control(set(sources))

    def _receive(self, running: _Running, source: str, message: ToCoordinator) -> ToCoordinator:
        """``message`` as from node ``N_j`` of ``source`` (which joins if new), counted."""
        if source not in running.node_of:
            joined = running.resolver.add_node()
            j = running.resolver.coordinator.m  # the newest node
            running.node_of[source], running.source_of[j] = j, source
            self._send(query_key(running.statement.name), running, joined)
        message = dataclasses.replace(message, node=running.node_of[source])
        running.counts.add(message)
        return message

    def _send(self, key: str, running: _Running, messages: Iterable[ToNode]) -> None:
        for m in messages:
            running.counts.add(m)
            running.in_flight += 1
            self.outbox.append((key, running.source_of[m.node], m))

    def _control(self, sources: set[str]) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for source in sorted(sources | {s for _, s, _ in self.outbox}):
            start = self.sent.get(source, self.initial)
            for entry in self.log[start:]:
                payload = {"type": "topk", **entry}
                out.setdefault(source, []).append({"seq": entry["gen"], "payload": payload})
            self.sent[source] = len(self.log)
        for key, source, m in self.outbox:
            running = self.running.get(key)
            if running is None:
                continue
            payload = {
                "type": "topk",
                "op": "msg",
                "query": running.statement.name,
                "gen": running.gen,
                "msg": to_dict(m),
            }
            out.setdefault(source, []).append({"seq": self._seq, "payload": payload})
            self._seq += 1
        self.outbox = []
        return out

    def note_ignored(self, source: str, counts: Mapping[str, Mapping[str, int]]) -> None:
        """Record a source's counts of ignored points, by query and reason (its heartbeat)."""
        for name, reasons in counts.items():
            running = self.running.get(query_key(name))
            if running is not None:
                running.ignored[source] = {str(r): int(n) for r, n in reasons.items()}

    def answers(self) -> dict[str, TopKAnswer]:
        """Every top-k query's current answer, by name."""
        out = {}
        for running in self.running.values():
            s, c = running.statement, running.resolver.coordinator
            why: dict[str, int] = {}
            for reasons in running.ignored.values():
                for reason, n in reasons.items():
                    why[reason] = why.get(reason, 0) + n
            busy = running.resolver.busy or running.in_flight or running.pending_alter
            out[s.name] = TopKAnswer(
                s.name,
                tuple(sorted(map(str, c.top))),
                c.k,
                c.eps / UNITS,
                s.bottom,
                c.epoch,
                not busy,
                c.m,
                running.counts.total,
                sum(why.values()),
                ", ".join(f"{r}: {n}" for r, n in sorted(why.items())),
            )
        return out


def _text(statement: TopKDef) -> str:
    """Canonical text of a top-k statement (what the log carries)."""
    return format_topk(statement)


class TopKPart(CoordinatorPart):
    """The job's top-k queries, their live changes and the protocol (:class:`TopKCoordinator`)."""

    row_kinds = ("topk",)

    def __init__(self, settings: HostSettings) -> None:
        self.topk = TopKCoordinator(settings.text("topk"))
        self.rows: list[Row] = []

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Row:
        payload = row["payload"]
        if not isinstance(payload, Mapping) or not {"query", "gen", "n", "msg"} <= set(payload):
            raise ValueError(f"{where}: bad top-k payload {payload!r}")
        return {"source": row["source"], "payload": payload}

    def heartbeat(self, source: str, payload: Mapping[str, Any]) -> None:
        if payload.get("topk_ignored"):
            self.topk.note_ignored(source, payload["topk_ignored"])

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        self.rows = list(rows)

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        rows, self.rows = self.rows, []
        return self.topk.step(rows, hub.sources)

    def names(self) -> list[str]:
        return self.topk.names()

    def reads(self, names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, ...], ...]]:
        """Each query's series ``<object>.<metric>``, ``object`` matching its pattern."""
        running = self.topk.running  # by query key
        wanted = list(running.values()) if names is None else []
        for name in () if names is None else names:
            r = running.get(query_key(name))
            if r is not None and r.statement.name == name:
                wanted.append(r)
        return {
            r.statement.name: ((f"{r.statement.objects}.{r.statement.metric}",),) for r in wanted
        }

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        self.topk.remove(name)

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        self.topk.alter_eps(name, delta)

    def answers(self) -> dict[str, TopKAnswer]:
        """The current set of every top-k query, with its ε and epoch."""
        return self.topk.answers()

    def progress(self) -> dict[str, Any]:
        answers = self.answers()
        return {"topk": {q: {"epoch": t.epoch, "settled": t.settled} for q, t in answers.items()}}
