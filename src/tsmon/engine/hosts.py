"""The hosts behind the embedded :class:`~tsmon.engine.monitor.Monitor`, and which one runs what.

Watch queries run in the :class:`~tsmon.engine.store.SeriesStore`; every other kind of
:mod:`tsmon.kinds` in the batch host with an instant transport
(:class:`~tsmon.engine.embedded.InstantHost`, made when a query or reader first needs it): its
bounded coordinator runs at the node's time, ``bounded_lag_ms = 0``, and chooses ``T`` online
unless the Monitor fixes it; its standing queries tick once per ``standing_tick`` interval. A
bounded aggregate's globs are expanded once, when it is registered
(:func:`~tsmon.kinds.bounded.queries.expanded`). :class:`MonitorHosts` routes each statement to
its host through the kinds registry and fans the points the store accepts out to the instant
host.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tsmon import kinds
from tsmon.engine.embedded import InstantHost
from tsmon.engine.points import Batch
from tsmon.engine.replicas import SummaryReader
from tsmon.engine.settings import FilterSettings, HostSettings
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.store import SeriesStore
from tsmon.kinds.bounded.queries import expanded
from tsmon.protocols.filters import Answer, MessageCounts
from tsmon.query import compile_query, parse_queries, query_key

__all__ = ["MonitorHosts"]


class MonitorHosts:
    """A store and, once needed, an instant host."""

    def __init__(
        self,
        store: SeriesStore,
        filters: FilterSettings,
        standing: StandingSettings,
        replica_phase_ms: int,
    ) -> None:
        self.store = store
        self._settings = HostSettings(  # no registers: watch queries stay in the store
            filters.period_ms,  # None: chosen online
            filters.shrink,
            filters.seed,
            filters.growth,
            standing=dataclasses.replace(standing, partitions=1),  # a Monitor has one
            replica_phase_ms=replica_phase_ms,
            max_future_ms=None,  # checked by the Monitor's ingest
            bounded_lag_ms=0,  # answers as of the newest point (kinds.bounded)
        )
        self.instant: InstantHost | None = None
        self.bounded_points = 0  # points of the series bounded queries read, fed to the host

    def _instant(self) -> InstantHost:
        if self.instant is None:
            self.instant = InstantHost(self._settings)
        if not self.instant.active:  # points reach it only while a query or reader needs them
            store = self.store
            self.instant.catch_up({name: store.newest(name) for name in store.nodes})
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
        if "bounded" in by_kind:  # resolved first: all are registered or none
            by_kind["bounded"] = [expanded(s, store.nodes) for s in by_kind["bounded"]]
        for statement in by_kind.get("summary", []):
            store.node(statement.series)  # a KeyError naming the series if it is unknown
        for statement in (s for ss in by_kind.values() for s in ss):  # the batch host's kinds
            self._instant().add(statement, store.nodes)
        for query in compiled:
            store.add(query)
        return [s.name for s in statements]

    def alter(self, text: str) -> list[str]:
        statements = parse_queries(text)
        watch, redefined, hosted = [], [], []
        for s in statements:
            kind = kinds.kind_of(s)
            if kind.name == "watch":
                watch.append(compile_query(s))
            elif kind.defines(s) and kind.name == "bounded":
                redefined.append(s)
            elif kind.defines(s):
                raise ValueError(f"query {s.name!r}: remove it and add it again to redefine it")
            else:
                hosted.append(s)
        hosts = self._hosted_names()
        unknown = [q for q in watch if query_key(q.name) not in self.store.queries]
        unknown += [q for q in hosted if query_key(q.name) not in hosts]
        unknown += [q for q in redefined if hosts.get(query_key(q.name)) != "bounded"]
        if unknown:
            raise KeyError(f"no query named {unknown[0].name!r}; use add_query to create it")
        store = self.store
        redefined = [expanded(s, store.nodes) for s in redefined]
        for s in hosted:
            self._instant().alter(s)
        for s in redefined:  # a bounded aggregate redefined: registered anew (§3.4)
            instant = self._instant()
            instant.remove(instant.statements[query_key(s.name)].name)
            instant.add(s, store.nodes)
        for query in watch:
            store.replace(query)
        return [s.name for s in statements]

    def _hosted_names(self) -> dict[str, str]:
        """The instant host's queries: query key -> kind."""
        hosted = {} if self.instant is None else self.instant.statements
        return {key: kinds.kind_of(s).name for key, s in hosted.items()}

    def _bounded(self) -> list[str]:
        """The bounded aggregates' names, in registration order."""
        hosted = {} if self.instant is None else self.instant.statements
        return [s.name for s in hosted.values() if kinds.kind_of(s).name == "bounded"]

    def remove(self, name: str) -> None:
        if self.instant is not None and self.instant.defines(name):
            self.instant.remove(self.instant.statements[query_key(name)].name)
        elif query_key(name) in self.store.queries:
            self.store.remove(name)
        else:
            raise KeyError(f"no query named {name!r}; registered: {sorted(self.texts())}")

    def texts(self) -> dict[str, str]:
        texts = {q.name: q.text for q in self.store.queries.values()}
        hosted = {} if self.instant is None else self.instant.texts()
        return texts | hosted

    def defines(self, name: str) -> bool:
        instant = self.instant
        return query_key(name) in self.store.queries or (
            instant is not None and instant.defines(name)
        )

    def unmatched(self) -> dict[str, str]:
        """The queries of every host that wait for series: name -> why
        (:mod:`tsmon.engine.waiting`)."""
        return self.store.unmatched() | ({} if self.instant is None else self.instant.waiting())

    def follow(self, reader: SummaryReader) -> None:
        self.store.node(reader.key[0])
        self._instant().follow(reader)

    def flush(self) -> None:
        if self.instant is not None:
            self.instant.step([])

    def answers(self, kind: str) -> Mapping[str, Any]:
        if kind == "bounded":  # a query with no time yet is unbounded, as of no time
            answered = {} if self.instant is None else self.instant.answers(kind)
            unknown = Answer(math.nan, -math.inf, math.inf, None)
            return {n: answered.get(n, unknown) for n in self._bounded()}
        kinds.answers_part(kind)  # a ValueError naming the known kinds
        return {} if self.instant is None else self.instant.answers(kind)

    # -- points --------------------------------------------------------------------------------
    def exact(self) -> dict[str, float]:
        """The exact aggregate of every bounded query from the series' newest stored points
        (``nan`` while one has none): what the bounded answers approximate."""
        if self.instant is None:
            return {}
        planned = self.instant.runtime.hub().part("bounded").planned()
        out = {}
        for name in self._bounded():
            query = planned[name]
            points = [self.store.newest(o) for o in query.objects]
            values = {o: p[1] for o, p in zip(query.objects, points, strict=True) if p}
            out[name] = query.exact(values) if len(values) == len(points) else math.nan
        return out

    def messages(self) -> MessageCounts:
        """The adaptive filters' messages so far (streamed updates, growth and shrink)."""
        return MessageCounts() if self.instant is None else self.instant.runtime.counts.messages

    # -- points --------------------------------------------------------------------------------
    def ingest(self, batch: Batch) -> None:
        """Store ``batch``; stage what the store accepts, in arrival order, for the instant host
        (one batch of it, cut at ``standing_tick`` boundaries when standing queries run:
        :meth:`InstantHost.step`): the points a source node applies,
        those newer than their series' newest point and a replacement at the newest
        timestamp (keep_last); late inserts stay in the registers."""
        store, instant = self.store, self.instant
        hosted = instant is not None and instant.active
        read = instant.runtime.hub().part("bounded").pinned_series() if hosted else set()
        in_order: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

        def accepted(name: str, seq: np.ndarray, t: np.ndarray, v: np.ndarray, new: bool) -> None:
            if hosted and (new or int(t[0]) == store.newest(name)[0]):
                in_order.append((seq, np.full(len(seq), name, dtype=object), t, v))
                self.bounded_points += len(seq) if name in read else 0

        store.ingest(batch, accepted)
        if hosted:
            assert instant is not None
            instant.step(_arrival_order(in_order))

    def stats(self) -> dict[str, object]:
        hosted = {} if self.instant is None else self.instant.statements
        summaries = [s for s in hosted.values() if kinds.kind_of(s).name == "summary"]
        standing = [s for s in hosted.values() if kinds.kind_of(s).name == "standing"]
        return self.store.stats() | {
            "bounded_queries": len(self._bounded()),
            "bounded_points": self.bounded_points,
            "standing_queries": len(standing),
            "standing_evaluations": 0 if self.instant is None else self.instant.evaluations(),
            "summary_queries": len(summaries),
        }


def _arrival_order(chunks: list[tuple[np.ndarray, ...]]) -> list[tuple[str, int, float]]:
    """The staged points of every series as ``(series, ts, value)``, in arrival order."""
    if not chunks:
        return []
    seq, names, ts, values = (np.concatenate(c) for c in zip(*chunks, strict=True))
    order = np.argsort(seq, kind="stable")
    return list(zip(names[order].tolist(), ts[order].tolist(), values[order].tolist(), strict=True))
