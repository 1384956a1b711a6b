"""``tsmon check`` reports every error of a query file and accepts ``#`` comments; ``tsmon
replay`` says which queries no series matches (in a subprocess, on NAB data)."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import NAB, tsmon
from tsmon.cli.check import check_text
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings
from tsmon.query import parse_query

BAD = """# dashboard queries
QUERY ok ON a WHEN mean(5m) > 1  # a trailing comment
QUERY bad ON a
    WHEN mean(5m) >> 1
QUERY fine AS SUM(a, b) WITHIN 1   -- the other comment
QUERY w ON a WHEN meen(1m) > 1
QUERY ok ON b
"""


def test_check_reports_every_error_at_its_line() -> None:
    checked = check_text(BAD)
    assert [e.splitlines()[0].split(":")[0:2] for _, e in checked.errors] == [
        ["line 4", "20"],  # the second >
        ["line 6", "19"],
        ["line 7", "1"],
    ]
    assert "unknown function 'meen'" in checked.errors[1][1]
    assert "duplicate query name 'ok' (first defined at line 2:1)" in checked.errors[2][1]


def test_check_command_prints_every_error_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "q.tsq"
    path.write_text(BAD, encoding="utf-8")
    run = tsmon("check", str(path))
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout.count("error: line") == 3
    path.write_text("# only good ones\nQUERY ok ON a WHEN mean(5m) > 1  # why\n", encoding="utf-8")
    good = tsmon("check", str(path))
    assert good.returncode == 0 and "1 statements OK" in good.stdout
    assert "no statement" not in good.stdout
    path.write_text("# nothing yet\n", encoding="utf-8")
    empty = tsmon("check", str(path))
    out = " ".join(empty.stdout.split())
    assert empty.returncode == 0 and "0 statements OK note: no statement in it;" in out, out


def test_replay_says_which_queries_match_no_series(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text(
        "QUERY spikes ON nab.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)\n"
        "QUERY hot ON host*.cpu WHEN mean(15m) > 0.85\n",
        encoding="utf-8",
    )
    run = tsmon("replay", str(NAB), "--queries", str(queries), "--show", "0")
    out = " ".join(run.stdout.split())
    assert run.returncode == 0, out
    named = "'realAWSCloudwatch.ec2_cpu_utilization_5f5533'"
    assert f"query 'spikes' waits: no series matches nab.* (series now: {named})" in out
    assert "query 'hot' waits: no series matches host*.cpu" in out
    renamed = tsmon(
        "replay", str(NAB), "--series", "nab.cpu", "--queries", str(queries), "--show", "0"
    )
    out = " ".join(renamed.stdout.split())
    assert "'spikes' waits" not in out and "│ spikes │ 25 │ │" in out
    assert "│ hot │ 0 │ no series matches host*.cpu (series now: 'nab.cpu') │" in out


def test_adding_a_query_that_matches_nothing_says_it_waits() -> None:
    hub = CoordinatorNode(HostSettings(1_000, 0.1))
    outcome = hub.add(parse_query("QUERY spikes ON nab.* WHEN last > 1"))
    assert outcome == (
        "added watch query 'spikes' at every source node; it waits: no series matches nab.* "
        "(no series yet)"
    )
    bounded = parse_query("QUERY avg AS AVG(aws.*) WITHIN 1")
    assert hub.add(bounded).endswith(
        "as they appear, within 1; it waits: no series matches aws.* (no series yet)"
    )
    hub.declare({"nab.cpu": "A"})  # a series the job places at a source that sent nothing yet
    again = parse_query("QUERY again ON nab.* WHEN last > 1")
    assert hub.add(again).endswith(
        "at every source node; it waits: for source 'A', which has sent nothing yet"
    )
