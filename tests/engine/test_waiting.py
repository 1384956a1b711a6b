"""Why a query has no answer yet, for every registered kind, as the batch host (and so the
Spark job, which runs the same coordinator) says it: in the progress record's
``unmatchedQueries`` until its series send points, then once in ``startedMatching``."""

from __future__ import annotations

from tsmon import kinds
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings, RegisterSettings
from tsmon.query import parse_queries, parse_query

QUERIES = """
QUERY w ON host*.cpu WHEN last > 0
QUERY sm AS COUNT(c.x > AVG)
QUERY b AS SUM(a.x, b.x) WITHIN 1
QUERY t AS TOP 2 OF aws.* BY cpu WITHIN 1
QUERY st AS SUM(a.x, c.x) WITHIN 1 CONFIDENCE 0.9
"""


def test_every_kind_says_why_it_waits_and_when_it_stops_waiting() -> None:
    # [sources] of the job: a.x and b.x at dc1 and dc2 (declared for the bounded query)
    declared = {"a.x": "dc1", "b.x": "dc2"}
    rt = BatchedRuntime(1_000, 0.1, 0, declared, registers=RegisterSettings(), queries=QUERIES)
    hub = rt.coordinator
    assert {kinds.kind_of(s).name for s in parse_queries(QUERIES)} == {k.name for k in kinds.KINDS}
    rt.run_batch([("dc1", "a.x", 1_000, 1.0)], clock_ms=0)
    notes = hub.progress()["unmatchedQueries"]
    assert notes == {
        "w": "no series matches host*.cpu (series now: 'a.x', 'b.x')",
        "sm": "no series matches c.x (series now: 'a.x', 'b.x')",
        "b": "for source 'dc2', which has sent nothing yet",
        "t": "no series matches aws.*.cpu (series now: 'a.x', 'b.x')",
        "st": "no series matches c.x (series now: 'a.x', 'b.x')",
    }
    assert hub.progress()["startedMatching"] == {}
    rt.run_batch([("dc2", "b.x", 1_000, 2.0), ("dc1", "c.x", 1_000, 3.0)], clock_ms=0)
    assert hub.progress()["unmatchedQueries"] == {
        "w": "no series matches host*.cpu (series now: 'a.x', 'b.x', 'c.x')",
        "t": "no series matches aws.*.cpu (series now: 'a.x', 'b.x', 'c.x')",
    }
    assert hub.progress()["startedMatching"] == {
        "sm": "now matches 'c.x'",
        "b": "now matches 'a.x', 'b.x'",
        "st": "now matches 'a.x', 'c.x'",
    }
    rt.run_batch([("aws", "aws.i1.cpu", 2_000, 5.0), ("h", "host1.cpu", 2_000, 1.0)], clock_ms=0)
    assert hub.progress()["unmatchedQueries"] == {}
    started = hub.progress()["startedMatching"]
    assert started == {"w": "now matches 'host1.cpu'", "t": "now matches 'aws.i1.cpu'"}
    rt.run_batch([("dc1", "a.x", 3_000, 1.0)], clock_ms=0)  # said once
    assert hub.progress()["startedMatching"] == {}
    # a query added later is judged at once (its outcome) and in the next progress
    outcome = hub.add(parse_query("QUERY late ON db*.io WHEN last > 1"))
    assert outcome.endswith(
        "; it waits: no series matches db*.io (series now: 'a.x', 'aws.i1.cpu', 'b.x' and 2 more)"
    )
    rt.run_batch([], clock_ms=0)
    assert list(hub.progress()["unmatchedQueries"]) == ["late"]
    hub.remove_query("late")
    rt.run_batch([], clock_ms=0)
    assert hub.progress()["unmatchedQueries"] == {}


def test_a_series_its_reporting_source_has_not_sent_is_named() -> None:
    hub = CoordinatorNode(HostSettings(1_000, 0.1), {"a.x": "dc1", "z.x": "dc1"})
    hub.add(parse_query("QUERY b AS AVG(a.x, z.x) WITHIN 1"), lambda s: {})
    beat = {"source": "dc1", "kind": "heartbeat", "payload": {"now_ms": 5, "series": ["a.x"]}}
    hub.step(0, [beat])
    assert hub.progress()["unmatchedQueries"] == {
        "b": "for series 'z.x', which has sent no point yet"
    }
    assert hub.why_waiting("b") == "for series 'z.x', which has sent no point yet"
    assert hub.why_waiting("nope") is None


def test_the_monitor_says_why_for_every_kind() -> None:
    """``Monitor.unmatched`` covers the per-point hosts (bounded, standing), the store (watch)
    and the batch host (summary, top-k) alike, in the batch host's words, until the series
    each query reads have sent points."""
    from tsmon import Monitor

    mon = Monitor(["a.x", "b.x", "c.x", "aws.*", "host*"])
    mon.add_query(QUERIES.replace("WHEN last > 0", "WHEN last > 0 EMIT series"))
    kinds_seen = {kinds.kind_of(s).name for s in parse_queries(QUERIES)}
    assert kinds_seen == {k.name for k in kinds.KINDS}
    now = "(series now: 'a.x', 'b.x', 'c.x')"
    assert mon.unmatched() == {
        "w": f"no series matches host*.cpu {now}",
        "sm": "for series 'c.x', which has sent no point yet",
        "b": "for series 'a.x', which has sent no point yet",
        "t": f"no series matches aws.*.cpu {now}",
        "st": "for series 'a.x', which has sent no point yet",
    }
    mon.ingest(["a.x"], [1_000], [1.0], clock_ms=0)
    assert mon.unmatched() == {
        "w": f"no series matches host*.cpu {now}",
        "sm": "for series 'c.x', which has sent no point yet",
        "b": "for series 'b.x', which has sent no point yet",
        "t": f"no series matches aws.*.cpu {now}",
        "st": "for series 'c.x', which has sent no point yet",
    }
    mon.ingest(["b.x", "c.x"], [1_000, 1_000], [2.0, 3.0], clock_ms=0)
    assert set(mon.unmatched()) == {"w", "t"}
    mon.ingest(["aws.i1.cpu", "host1.cpu"], [2_000, 2_000], [5.0, 1.0], clock_ms=0)
    assert mon.unmatched() == {}
    mon.remove_query("b")  # a removed query is gone from it, a new one judged at once
    mon.add_query("QUERY b2 AS AVG(a.x, b.x) WITHIN 1")
    assert mon.unmatched() == {}
