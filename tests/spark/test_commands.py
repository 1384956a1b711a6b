"""Live query management: command files, idempotent take per batch, apply() outcomes, the CLI.

No Spark: the driver's part is simulated with a :class:`CoordinatorNode`, its snapshots and a
:class:`CommandLog`, as the runtime's foreachBatch runs them.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from tests.test_cli import tsmon
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings
from tsmon.query import QuerySyntaxError
from tsmon.spark.commands import Command, CommandError, CommandLog, apply, job_directory
from tsmon.spark.control import ControlChannel

ADD = "QUERY d AS SUM(a.x, b.x) WITHIN 0.5"


def source_of(series: list[str]) -> dict[str, str]:
    """Series ``a.x`` comes from source ``a``."""
    return {s: s.split(".")[0] for s in series}


def beats(now_ms: int) -> list[dict]:
    """One heartbeat per source, reporting series a.x and b.x."""
    return [
        {"source": s, "kind": "heartbeat", "payload": {"now_ms": now_ms, "series": [f"{s}.x"]}}
        for s in ("a", "b")
    ]


def node() -> CoordinatorNode:
    return CoordinatorNode(HostSettings(period_ms=1_000, shrink=0.05, seed=0, growth="capped"))


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    (tmp_path / "coordinator").mkdir()
    return tmp_path


# -- the log ----------------------------------------------------------------------------------


def test_submit_writes_one_file_per_command_named_in_submission_order(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    ids = [
        log.submit("add", ADD),
        log.submit("alter", "ALTER QUERY d WITHIN 0.1 IMMEDIATELY"),
        log.submit("remove", "d"),
    ]
    assert ids == sorted(ids) and len(set(ids)) == 3
    files = sorted(p.name for p in (job_dir / "commands").iterdir())
    assert files == [f"{i}.json" for i in ids]  # no temp file left behind
    assert all(re.fullmatch(r"cmd-\d{8}T\d{6}\.\d{9}Z-\d{7}-\d{6}", i) for i in ids)
    assert [c.id for c in log.pending()] == ids
    assert [c.op for c in log.pending()] == ["add", "alter", "remove"]
    content = json.loads((job_dir / "commands" / f"{ids[2]}.json").read_text())
    assert content == {"id": ids[2], "op": "remove", "text": "d"}


@pytest.mark.parametrize(
    ("op", "text", "error", "match"),
    [
        ("add", "QUERY d AS SUM(a.x,, b.x) WITHIN 1", QuerySyntaxError, r"line 1:20"),
        ("add", "QUERY w ON a.x WHEN nosuch(5) > 1", QuerySyntaxError, "unknown function"),
        ("add", "ALTER QUERY d WITHIN 1", CommandError, "add takes a query definition"),
        ("add", ADD + "\n" + ADD.replace(" d ", " e "), CommandError, "exactly one statement"),
        ("alter", ADD, CommandError, "alter takes ALTER QUERY"),
        ("remove", "two words", CommandError, "query name"),
        ("drop", "d", CommandError, "unknown op 'drop'"),
    ],
)
def test_submit_checks_first_and_writes_nothing_when_bad(
    job_dir: Path, op: str, text: str, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        CommandLog(job_dir).submit(op, text)
    assert not (job_dir / "commands").exists()


def test_take_is_idempotent_for_a_replayed_batch(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    first = log.submit("add", ADD)
    assert [c.id for c in log.take(0)] == [first]
    second = log.submit("remove", "d")  # arrives after batch 0 took its commands
    assert [c.id for c in log.take(0)] == [first]  # replay: exactly the recorded ones
    assert [c.id for c in CommandLog(job_dir).take(0)] == [first]  # also after a restart
    assert [c.id for c in log.pending()] == [second]
    assert [c.id for c in log.take(1)] == [second]
    assert [c.id for c in log.take(1)] == [second]
    assert log.take(2) == [] and log.pending() == []
    assert [(b, c.id) for b, c in log.applied()] == [(0, first), (1, second)]


def test_a_command_is_taken_by_one_batch_only(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    submitted, taken = [], []
    for batch in range(12):
        if batch % 3 != 2:
            submitted.append(log.submit("remove", f"q{batch}"))
        taken += [c.id for c in log.take(batch)]
        taken_again = [c.id for c in CommandLog(job_dir).take(batch)]  # every batch replayed
        assert taken_again == taken[len(taken) - len(taken_again) :]
    assert taken == submitted  # each once, in submission order


def test_empty_records_are_pruned_and_old_batches_take_nothing(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    for batch in range(6):
        assert log.take(batch) == []
    records = sorted(p.name for p in (job_dir / "commands" / "applied").iterdir())
    assert records == ["batch-4.json", "batch-5.json"]
    log.submit("remove", "d")
    assert log.take(3) == []  # an old batch (its empty record pruned) takes nothing
    assert [c.op for c in log.take(6)] == ["remove"]
    with pytest.raises(ValueError, match="batch_id must be an int >= 0"):
        log.take(-1)


def test_states_read_while_batches_prune_their_records(job_dir: Path) -> None:
    """The HTTP API lists states on its own thread while the driver's batches take and prune:
    a record pruned between the listing and the read is an empty batch, never an error (it
    was a 500 on ``POST /queries?wait=``)."""
    log = CommandLog(job_dir)
    first = log.submit("add", ADD)
    stop = threading.Event()
    errors: list[Exception] = []
    seen: list[list[dict]] = []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(log.states())
            except Exception as e:  # any failure is the finding
                errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for batch in range(1500):
            log.take(batch)
    finally:
        stop.set()
        reader.join()
    assert errors == []
    assert len(seen) > 10  # the reader ran alongside the batches
    assert all([s["id"] for s in states] == [first] for states in seen)


# -- apply ------------------------------------------------------------------------------------


def cmd(op: str, text: str, n: int = 0) -> Command:
    return Command(f"cmd-{n}", op, text)


def test_apply_reports_each_outcome_and_rejections_change_nothing() -> None:
    coord = node()
    commands = [
        cmd("add", ADD, 0),
        cmd("add", "QUERY D AS MAX(a.x) WITHIN 1", 1),  # names ignore case: a duplicate
        cmd("add", "QUERY g AS SUM(a.*) WITHIN 1", 2),
        cmd("add", "QUERY m AS SUM(a.x,, b.x) WITHIN 1", 3),
        cmd("alter", "ALTER QUERY nope WITHIN 1", 4),
        cmd("remove", "nope", 5),
        cmd("alter", "ALTER QUERY D WITHIN 0.25 IMMEDIATELY", 6),
        cmd("rename", "d", 7),
        Command("cmd-8", "?", "", "unreadable command file: Expecting value"),
    ]
    outcomes = apply(coord, commands, source_of)
    assert [o["id"] for o in outcomes] == [c.id for c in commands]
    assert [o["ok"] for o in outcomes] == [
        True,
        False,
        True,
        False,
        False,
        False,
        True,
        False,
        False,
    ]
    detail = [o["detail"] for o in outcomes]
    waits = "; it waits: for source 'a', which has sent nothing yet"  # no row has come yet
    assert detail[0] == "added 'd': SUM of 2 series within 0.5" + waits
    assert "query 'D' exists (as 'd')" in detail[1]
    assert detail[2] == (
        "added 'g': SUM over the series matching a.* as they appear, within 1" + waits
    )
    assert "not a valid statement: line 1:20" in detail[3]
    assert detail[4] == detail[5] == "no query 'nope'; registered: ['d', 'g']"
    assert detail[6] == "altered 'd' to within 0.25 immediately" + waits
    assert "unknown op 'rename'" in detail[7]
    assert detail[8] == "unreadable command file: Expecting value"
    assert coord.names() == ["d", "g"]
    assert coord.part("bounded").planned()["d"].delta == 0.25


def test_apply_accepts_series_whose_source_the_rows_will_show() -> None:
    coord = node()
    [outcome] = apply(coord, [cmd("add", ADD)], lambda series: {})
    assert outcome["ok"], outcome
    assert list(coord.part("bounded").planned()) == [
        "d"
    ]  # its width messages wait for the rows (parked)


def test_watch_queries_are_added_redefined_and_removed_for_every_source() -> None:
    coord = node()
    watch = "QUERY hot ON a.* WHEN last > 3 EMIT series"
    outcomes = apply(
        coord,
        [
            cmd("add", watch, 0),
            cmd("add", ADD.replace(" d ", " HOT "), 1),  # one namespace, case ignored
            cmd("alter", watch.replace("> 3", "> 4"), 2),
            cmd("alter", "QUERY cold ON a.* WHEN last < 0", 3),  # not registered
            cmd("add", "QUERY w ON a.x WHEN mean(5 points) >", 4),
        ],
        source_of,
    )
    assert [o["ok"] for o in outcomes] == [True, False, True, False, False], outcomes
    assert "query 'HOT' exists (as 'hot')" in outcomes[1]["detail"]
    assert "no watch query 'cold'" in outcomes[3]["detail"]
    assert "not a valid statement: line 1:" in outcomes[4]["detail"]
    control = coord.step(0, beats(100))  # every source that reported gets both changes
    for rows in control.values():
        watch_rows = [r["payload"] for r in rows if r["payload"].get("type") == "watch"]
        assert [(w["op"], w["text"]) for w in watch_rows] == [
            ("add", watch),
            ("alter", watch.replace("> 3", "> 4")),
        ]
    assert set(control) == {"a", "b"}
    [removed] = apply(coord, [cmd("remove", "HOT", 5)], source_of)
    assert removed == {"id": "cmd-5", "op": "remove", "ok": True, "detail": "removed 'hot'"}
    later = coord.step(1, beats(200))
    assert {src: [r["payload"]["op"] for r in rows] for src, rows in later.items()} == {
        "a": ["remove"],
        "b": ["remove"],
    }


def test_remove_then_add_again_in_one_batch() -> None:
    coord = node()
    apply(coord, [cmd("add", ADD)], source_of)
    coord.step(0, beats(100))
    outcomes = apply(coord, [cmd("remove", "D"), cmd("add", ADD.replace("0.5", "2"))], source_of)
    assert [o["ok"] for o in outcomes] == [True, True], outcomes
    assert coord.part("bounded").planned()["d"].delta == 2


def drive(directory: Path, coord: CoordinatorNode, batch_id: int) -> dict:
    """The driver's order in one batch: take, apply, record, then step."""
    log = CommandLog(directory)
    log.record(batch_id, apply(coord, log.take(batch_id), source_of))
    return coord.step(batch_id, beats(100 * (batch_id + 1)))


def test_a_replayed_batch_applies_the_same_commands_and_writes_the_same_control(
    job_dir: Path,
) -> None:
    coord = node()
    drive(job_dir, coord, 0)
    snapshot = coord.snapshot()  # coord-0.pkl
    CommandLog(job_dir).submit("add", ADD)
    control = drive(job_dir, coord, 1)
    assert control, "the new query's width messages go to sources a and b"
    channel = ControlChannel(job_dir / "control")
    assert channel.write(1, control)
    # crash after batch 1; a late command arrives; batch 1 is replayed from coord-0.pkl
    CommandLog(job_dir).submit("alter", "ALTER QUERY d WITHIN 0.1 IMMEDIATELY")
    replayed = CoordinatorNode.__new__(CoordinatorNode)
    replayed.restore(snapshot)
    again = drive(job_dir, replayed, 1)
    assert again == control
    assert not channel.write(1, again)  # same content: nothing to do, no conflict
    assert (
        replayed.answers().keys() == {"d"} and replayed.part("bounded").planned()["d"].delta == 0.5
    )
    drive(job_dir, replayed, 2)  # the alter goes with batch 2
    assert replayed.part("bounded").planned()["d"].delta == 0.1


def test_states_show_pending_applied_rejected_and_taken(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    log.submit("add", ADD)
    log.submit("remove", "nope")
    coord = node()
    log.record(0, apply(coord, log.take(0), source_of))
    log.submit("alter", "ALTER QUERY d WITHIN 1")
    log.submit("remove", "d")
    log.take(1)  # not recorded yet: the batch is running
    log.submit("remove", "d")
    states = [(r["op"], r["state"], r["batch"]) for r in log.states()]
    assert states == [
        ("add", "applied", 0),
        ("remove", "rejected", 0),
        ("alter", "taken", 1),
        ("remove", "taken", 1),
        ("remove", "pending", None),
    ]
    assert log.states()[1]["detail"] == "no query 'nope'; registered: ['d']"


def test_an_unreadable_command_file_is_rejected_not_fatal(job_dir: Path) -> None:
    log = CommandLog(job_dir)
    good = log.submit("remove", "d")
    bad = job_dir / "commands" / "cmd-20000101T000000.000000000Z-0000001-000000.json"
    bad.write_text("{not json", encoding="utf-8")
    taken = log.take(0)
    assert [c.id for c in taken] == [bad.stem, good]
    first = apply(node(), taken, source_of)[0]
    assert not first["ok"] and first["detail"].startswith("unreadable command file")


def test_job_directory_must_look_like_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such directory"):
        job_directory(tmp_path / "missing")
    with pytest.raises(CommandError, match="not a job checkpoint"):
        job_directory(tmp_path)
    (tmp_path / "control").mkdir()
    assert job_directory(tmp_path) == tmp_path


def test_job_directory_of_a_job_file_is_its_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "incoming").mkdir()
    (tmp_path / "ckpt" / "control").mkdir(parents=True)
    job = tmp_path / "job.toml"
    job.write_text(
        'queries = "QUERY d AS SUM(a.x, b.x) WITHIN 1"\n[job]\ncheckpoint = "ckpt"\n'
        '[input]\nkind = "files"\npath = "incoming"\nformat = "csv"\n',
        encoding="utf-8",
    )
    assert job_directory(job) == tmp_path / "ckpt"  # as tsmon show takes the job file
    (tmp_path / "ckpt" / "control").rmdir()
    with pytest.raises(CommandError, match=r"ckpt is not a job checkpoint .* after the job has"):
        job_directory(job)


# -- the CLI ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_round_trip(job_dir: Path) -> None:
    job = str(job_dir)
    run = tsmon("query", "add", "--job", job, ADD)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"submitted add as cmd-\S+", run.stdout)
    for args in (("alter", "ALTER QUERY d WITHIN 0.1"), ("remove", "nope")):
        run = tsmon("query", *args[:1], "--job", job, args[1])
        assert run.returncode == 0, run.stdout + run.stderr
    assert [c.op for c in CommandLog(job_dir).pending()] == ["add", "alter", "remove"]

    bad = tsmon("query", "add", "--job", job, "QUERY e AS SUM(a.x,, b.x) WITHIN 1")
    out = bad.stdout + bad.stderr
    assert bad.returncode == 2 and "line 1:20" in out and "Traceback" not in out, out
    watch = tsmon("query", "alter", "--job", job, "QUERY e ON a.* WHEN mean(5) > 1")
    out = watch.stdout + watch.stderr
    assert watch.returncode == 2 and "line 1:" in out and "Traceback" not in out, out
    assert len(CommandLog(job_dir).commands()) == 3  # nothing written by the bad ones

    log = CommandLog(job_dir)  # the job's driver runs batch 4
    log.record(4, apply(node(), log.take(4), source_of))
    log.submit("remove", "d")
    listing = tsmon("query", "list", "--job", job)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    lines = [line for line in listing.stdout.splitlines() if "│ cmd-" in line]
    assert len(lines) == 4, listing.stdout
    assert "applied in batch 4" in lines[0] and "applied in batch 4" in lines[1]
    assert "rejected in batch 4: no query 'nope'" in lines[2]
    assert "pending" in lines[3]


@pytest.mark.parametrize("op", ["add", "list"])
def test_cli_refuses_a_directory_that_is_no_job(tmp_path: Path, op: str) -> None:
    args = ["query", op, "--job", str(tmp_path)] + ([ADD] if op == "add" else [])
    run = tsmon(*args)
    out = run.stdout + run.stderr
    assert run.returncode == 2 and "not a job checkpoint" in out and "Traceback" not in out, out
    assert not (tmp_path / "commands").exists()
