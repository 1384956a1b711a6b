"""The hosts behind the embedded :class:`~tsmon.engine.monitor.Monitor`, and which one runs what.

Watch queries run in the :class:`~tsmon.engine.store.SeriesStore`; bounded aggregates in a
per-point host with zero latency (:mod:`tsmon.engine.bounded`); every other kind of
:mod:`tsmon.kinds`, standing queries included, in the batch host with an instant transport
(:class:`~tsmon.engine.embedded.InstantHost`, made when a query or reader first needs it).
:class:`MonitorHosts` routes each statement to its host through the kinds registry and fans the
points the store accepts out to the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from tsmon import kinds
from tsmon.engine.bounded import BoundedQueries, FilterSettings
from tsmon.engine.embedded import InstantHost
from tsmon.engine.points import Batch
from tsmon.engine.replicas import SummaryReader
from tsmon.engine.settings import HostSettings
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.store import SeriesStore
from tsmon.engine.waiting import why_waiting
from tsmon.query import compile_query, parse_queries, query_key

__all__ = ["MonitorHosts"]


class MonitorHosts:
    """A store, the per-point bounded host and, once needed, an instant host."""

    def __init__(
        self,
        store: SeriesStore,
        filters: FilterSettings,
        standing: StandingSettings,
        replica_phase_ms: int,
    ) -> None:
        self.store = store
        self.bounded = BoundedQueries(filters)
        self._settings = HostSettings(  # no registers: watch queries stay in the store
            filters.period_ms or 1_000,  # the host's filters stay idle: bounded runs above
            filters.shrink,
            filters.seed,
            filters.growth,
            standing=dataclasses.replace(standing, partitions=1),  # a Monitor has one
            replica_phase_ms=replica_phase_ms,
            max_future_ms=None,  # checked by the Monitor's ingest
        )
        self.instant: InstantHost | None = None

    def _instant(self) -> InstantHost:
        if self.instant is None:
            self.instant = InstantHost(self._settings)
        return self.instant

    # -- queries -------------------------------------------------------------------------------
    def add(self, text: str) -> list[str]:
        statements = parse_queries(text)
        by_kind: dict[str, list] = {}
        for s in statements:
            kind = kinds.kind_of(s)
            if not kind.defines(s):
                raise ValueError("ALTER QUERY changes a registered query; pass it to alter_query")
            by_kind.setdefault(kind.name, []).append(s)
        compiled = [compile_query(q) for q in by_kind.pop("watch", [])]
        for name in [s.name for s in statements]:
            if self.defines(name):
                raise ValueError(
                    f"query {name!r} already exists (names ignore case); use alter_query "
                    "to change it or remove_query first"
                )
        store = self.store
        self.bounded.register(by_kind.pop("bounded", []), store.nodes, store.newest, store.now_ms)
        for statement in by_kind.get("summary", []):
            store.node(statement.series)  # a KeyError naming the series if it is unknown
        for statement in (s for ss in by_kind.values() for s in ss):  # the batch host's kinds
            self._instant().add(statement, store.nodes)
        for query in compiled:
            store.add(query)
        return [s.name for s in statements]

    def alter(self, text: str) -> list[str]:
        statements = parse_queries(text)
        watch, redefined, precision, hosted = [], [], [], []
        for s in statements:
            kind = kinds.kind_of(s)
            if kind.name == "watch":
                watch.append(compile_query(s))
            elif kind.defines(s) and kind.name == "bounded":
                redefined.append(s)
            elif kind.defines(s):
                raise ValueError(f"query {s.name!r}: remove it and add it again to redefine it")
            elif self.instant is not None and self.instant.defines(s.name):
                hosted.append(s)
            else:
                precision.append(s)
        for query in watch:
            if query_key(query.name) not in self.store.queries:
                raise KeyError(f"no query named {query.name!r}; use add_query to create it")
        store = self.store
        self.bounded.change(redefined, precision, store.nodes, store.newest, store.now_ms)
        for s in hosted:
            self._instant().alter(s)
        for query in watch:
            store.replace(query)
        return [s.name for s in statements]

    def remove(self, name: str) -> None:
        if self.bounded.defines(name):
            self.bounded.unregister(name)
        elif self.instant is not None and self.instant.defines(name):
            self.instant.remove(self.instant.statements[query_key(name)].name)
        elif query_key(name) in self.store.queries:
            self.store.remove(name)
        else:
            raise KeyError(f"no query named {name!r}; registered: {sorted(self.texts())}")

    def texts(self) -> dict[str, str]:
        texts = {q.name: q.text for q in self.store.queries.values()}
        hosted = {} if self.instant is None else self.instant.texts()
        return texts | self.bounded.texts() | hosted

    def defines(self, name: str) -> bool:
        return query_key(name) in {query_key(n) for n in self.texts()}

    def unmatched(self) -> dict[str, str]:
        """The queries of every host that wait for series: name -> why
        (:mod:`tsmon.engine.waiting`)."""
        store = self.store
        names = sorted(store.nodes)
        seen = {s for s in names if store.newest(s) is not None}
        notes = store.unmatched()
        for name, groups in self.bounded.reads().items():
            why = why_waiting(groups, names, seen, {}, set())
            if why is not None:
                notes[name] = why
        return notes | ({} if self.instant is None else self.instant.waiting())

    def follow(self, reader: SummaryReader) -> None:
        self.store.node(reader.key[0])
        self._instant().follow(reader)

    def flush(self) -> None:
        if self.instant is not None:
            self.instant.step([])

    def answers(self, kind: str) -> Mapping[str, Any]:
        if kind == "bounded":
            return self.bounded.answers()
        kinds.answers_part(kind)  # a ValueError naming the known kinds
        return {} if self.instant is None else self.instant.answers(kind)

    # -- points --------------------------------------------------------------------------------
    def ingest(self, batch: Batch) -> None:
        """Store ``batch``; stage what the store accepts for the bounded host and, in arrival
        order, for the instant host (one batch of it, cut at ``standing_tick`` boundaries when
        standing queries run: :meth:`InstantHost.step`)."""
        hosted = self.instant is not None and self.instant.active
        in_order: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

        def accepted(name: str, seq: np.ndarray, t: np.ndarray, v: np.ndarray, new: bool) -> None:
            self.bounded.stage(name, seq, t, v)
            if new and hosted:
                in_order.append((seq, np.full(len(seq), name, dtype=object), t, v))

        self.store.ingest(batch, accepted)
        self.bounded.flush()
        if hosted:
            assert self.instant is not None
            self.instant.step(_arrival_order(in_order))

    def stats(self) -> dict[str, object]:
        hosted = {} if self.instant is None else self.instant.statements
        summaries = [s for s in hosted.values() if kinds.kind_of(s).name == "summary"]
        standing = [s for s in hosted.values() if kinds.kind_of(s).name == "standing"]
        return self.store.stats() | {
            "bounded_queries": len(self.bounded.names()),
            "bounded_points": self.bounded.points,
            "standing_queries": len(standing),
            "standing_evaluations": 0 if self.instant is None else self.instant.evaluations(),
            "summary_queries": len(summaries),
        }


def _arrival_order(chunks: list[tuple[np.ndarray, ...]]) -> list[tuple[str, int, float]]:
    """The in-order points of every series as ``(series, ts, value)``, in arrival order."""
    if not chunks:
        return []
    seq, names, ts, values = (np.concatenate(c) for c in zip(*chunks, strict=True))
    order = np.argsort(seq, kind="stable")
    return list(zip(names[order].tolist(), ts[order].tolist(), values[order].tolist(), strict=True))
