"""A new user's mistakes and Ctrl-C: one clear line (naming the file, the line, the fix) and a
status, never a traceback; an interrupted replay still shows what it replayed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from tests.test_cli import NAB, REPO, tsmon
from tsmon.cli.check import check_text
from tsmon.core.textfile import read_text
from tsmon.spark.job import JobError, load_job

ROWS = 4032  # NAB's ec2_cpu_utilization_5f5533.csv


def patched(script: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``tsmon *args`` in a subprocess after ``script`` ran (it patches what raises SIGINT).

    Ctrl-C comes as at a terminal: Python's own SIGINT handler is set first, since a process
    started where SIGINT is ignored (``nohup``, a background job of a CI runner's shell)
    inherits the ignoring, and Python then leaves SIGINT ignored."""
    terminal = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    code = (
        terminal
        + textwrap.dedent(script)
        + "\nfrom tsmon.cli import main\nsys.exit(main(sys.argv[1:]))"
    )
    src = str(REPO / "src")
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=src)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


SIGINT_IN_SECOND_INGEST = """
import signal, sys
from tsmon.engine.monitor import Monitor
ingest, calls = Monitor.ingest, []
def interrupted_ingest(self, *args, **kwargs):
    calls.append(1)
    if len(calls) == 2:  # Ctrl-C while the second batch is being fed
        signal.raise_signal(signal.SIGINT)
    return ingest(self, *args, **kwargs)
Monitor.ingest = interrupted_ingest
"""


def test_ctrl_c_during_a_replay_shows_the_rows_replayed(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY high ON * WHEN last > 50\n", encoding="utf-8")
    events = tmp_path / "events.csv"
    run = patched(
        SIGINT_IN_SECOND_INGEST,
        *("replay", str(NAB), "--queries", str(queries), "--batch", "500"),
        *("--events-out", str(events)),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 130, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    # the batch being fed when Ctrl-C came is fed whole, and nothing after it
    assert "points received 1000 = accepted 1000 + rejected 0" in out, out
    assert f"interrupted: replayed the first 1000 of {ROWS} rows" in out, out
    assert events.is_file()  # the events of those rows are written


def test_ctrl_c_ends_show_follow_quietly(tmp_path: Path) -> None:
    (tmp_path / "answers").mkdir()
    script = """
    import signal, sys, time
    time.sleep = lambda seconds: signal.raise_signal(signal.SIGINT)  # Ctrl-C while waiting
    """
    run = patched(script, "show", "answers", "--job", str(tmp_path), "--follow")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "Traceback" not in out
    assert f"no answers in {tmp_path}" in " ".join(out.split())


def test_ctrl_c_in_any_command_is_one_line(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY high ON * WHEN last > 50\n", encoding="utf-8")
    script = """
    import signal, sys
    import tsmon.cli.check as check
    def interrupted(text):
        signal.raise_signal(signal.SIGINT)
    check.check_text = interrupted
    """
    run = patched(script, "check", str(queries))
    out = run.stdout + run.stderr
    assert run.returncode == 130, out
    assert "Traceback" not in out
    assert out.strip() == "interrupted", out


def _files(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "folder.tsq"
    folder.mkdir()
    latin = tmp_path / "latin.tsq"
    latin.write_bytes(b"QUERY a ON x WHEN last > 1\nQUERY b ON x WHEN last > 1 -- \xe9t\xe9\n")
    job = tmp_path / "latin.toml"
    job.write_bytes(b'[job]\ncheckpoint = "ck" # \xe9t\xe9\n')
    return {"folder": folder, "latin": latin, "job": job}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("check", "{folder}"), "query file {folder} is a folder; pass the path of a file"),
        (
            ("check", "{latin}"),
            "query file {latin} is not UTF-8 text: byte 0xe9 at line 2, column 31",
        ),
        (
            ("replay", str(NAB), "--queries", "{folder}"),
            "query file {folder} is a folder; pass the path of a file",
        ),
        (
            ("replay", str(NAB), "--queries", "{latin}"),
            "query file {latin} is not UTF-8 text: byte 0xe9 at line 2, column 31",
        ),
        (("run", "{folder}"), "job file {folder} is a folder; pass the path of a file"),
        (("run", "{job}"), "job file {job} is not UTF-8 text: byte 0xe9 at line 2, column 21"),
    ],
)
def test_a_folder_or_bytes_that_are_not_utf8_are_named(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    files = _files(tmp_path)
    run = tsmon(*(a.format(**files) for a in args), timeout=60)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "Traceback" not in out
    assert f"error: {expected.format(**files)}" in " ".join(out.split()), out


def test_a_query_file_that_is_not_utf8_fails_the_job_file(tmp_path: Path) -> None:
    files = _files(tmp_path)
    job = tmp_path / "job.toml"
    job.write_text(
        f'query_file = "{files["latin"].name}"\n[job]\ncheckpoint = "ck"\n'
        '[input]\nkind = "generator"\n',
        encoding="utf-8",
    )
    with pytest.raises(JobError, match=r"query_file .*latin\.tsq is not UTF-8 text: byte 0xe9"):
        load_job(job)


def test_an_unreadable_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "q.tsq"
    path.write_text("QUERY a ON x WHEN last > 1\n", encoding="utf-8")

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # chmod 000 does not stop root
    with pytest.raises(PermissionError, match=f"^no permission to read query file {path}$"):
        read_text(path, "query file")


def test_check_lists_the_statements_beside_a_duplicate_name() -> None:
    checked = check_text(
        "QUERY a ON x WHEN last > 1\nQUERY b ON x WHEN last > 1\nQUERY A ON y WHEN last > 2\n"
        "QUERY c AS SUM(a.x, b.x) WITHIN 1\nQUERY B ON z WHEN last > 3\n"
    )
    assert [s.name for s in checked.statements] == ["a", "b", "c"]
    assert [e.split(":")[0] + ":" + e.split(":")[1] for _, e in checked.errors] == [
        "line 3:1",
        "line 5:1",
    ]
    assert all("duplicate query name" in e for _, e in checked.errors)


def test_replay_refuses_a_query_file_without_queries(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text("# nothing yet\n", encoding="utf-8")
    run = tsmon("replay", str(NAB), "--queries", str(queries))
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert f"error: query file {queries} holds no query" in " ".join(out.split()), out
    assert "points received" not in out


def test_replay_refuses_an_empty_series_name(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 1\n", encoding="utf-8")
    run = tsmon("replay", str(NAB), "--queries", str(queries), "--series", "")
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "error: --series '' is no name" in out, out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "x.csv: empty file; a recorded series starts with the header line"),
        (b"\n\n", "x.csv: empty file; a recorded series starts with the header line"),
        (b"\x1f\x8b\x08\x00\x00,1\n", "x.csv: its header line is binary content"),
        (b"\xfftimestamp,value\n1,2\n", "x.csv: its header line is not UTF-8 text"),
        (b"time,val\n1,2\n", "expected columns 'timestamp,value' or 'series,ts,value'"),
    ],
)
def test_replay_names_a_csv_it_cannot_read(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 1\n", encoding="utf-8")
    run = tsmon("replay", str(path), "--queries", str(queries))
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "Traceback" not in out
    error = " ".join(out.split())
    assert error.startswith("error:") and str(path) in error, out
    assert expected.format(path=path) in error, out


def test_replay_dead_letters_a_line_that_is_no_record(tmp_path: Path) -> None:
    """A line with another number of fields, an unclosed quote or bytes that are not UTF-8
    costs that line (``malformed_line``, as on Spark), not the file: the rows after it are
    replayed and counted."""
    path = tmp_path / "x.csv"
    path.write_bytes(
        b"\xef\xbb\xbftimestamp,value\n2014-01-01 00:00:00,1\n2014-01-01 00:05:00,2,3\n"
        b'"2014-01-01 00:10:00,4\n\n2014-01-01 00:15:00,\xff\n2014-01-01 00:20:00,9\n'
        b"2014-01-01 00:25:00,abc\n"
    )
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 1\n", encoding="utf-8")
    dead = tmp_path / "dead.csv"
    run = tsmon(
        "replay", str(path), "--queries", str(queries), "--max-future", "off",
        "--dead-letters-out", str(dead), "--batch", "3",
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    counts = "points received 6 = accepted 2 + rejected 4 (malformed_line: 3, not_numeric: 1)"
    assert counts in out, out
    assert f"note: 3 lines are no record (malformed_line), e.g. {path}:3: 3 fields" in out, out
    assert "2014-01-01 00:20:00 a" in out, out  # the row after them, its event
    assert f"wrote 4 dead letters to {dead}" in out, out
    rows = pd.read_csv(dead).sort_values("seq")
    assert rows["reason"].tolist() == ["malformed_line"] * 3 + ["not_numeric"]
    assert [d.split(": ", 1)[0] for d in rows["detail"][:3]] == [f"{path}:{n}" for n in (3, 4, 6)]
    assert rows["detail"].iloc[2].endswith("not UTF-8 text"), rows
    # every dead letter's line, malformed or not, whatever the order the monitor took them in
    assert rows["origin"].tolist() == [f"{path}:{n}" for n in (3, 4, 6, 8)], rows
    again = tsmon("replay", str(path), "--queries", str(queries), "--dead-letters-out", str(path))
    assert again.returncode == 2 and "--dead-letters-out" in again.stdout + again.stderr


def test_replay_of_several_files_names_each_dead_letter_s_line(tmp_path: Path) -> None:
    """Several files are merged by time a batch at a time: each dead letter, malformed or
    not, names its own file and line, numbered in the order the rows were fed."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("series,ts,value\na,1000,1\na,3000,2,2\na,5000,x\n", encoding="utf-8")
    b.write_text('series,ts,value\nb,2000,1\n"b,4000\nb,6000,y\n', encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY q ON * WHEN last > 5\n", encoding="utf-8")
    dead = tmp_path / "dead.csv"
    run = tsmon(
        "replay", str(a), str(b), "--queries", str(queries), "--max-future", "off",
        "--dead-letters-out", str(dead), "--batch", "2",
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    assert f"note: 2 lines are no record (malformed_line), e.g. {a}:3: 4 fields" in out, out
    rows = pd.read_csv(dead)  # fed: a:2 a:3 | b:2 b:3 | a:4 b:4, each batch's malformed first
    assert rows["seq"].tolist() == [0, 2, 4, 5], rows
    assert rows["reason"].tolist() == ["malformed_line"] * 2 + ["not_numeric"] * 2, rows
    assert rows["origin"].tolist() == [f"{a}:3", f"{b}:3", f"{a}:4", f"{b}:4"], rows


def test_replay_writes_an_empty_dead_letters_file_when_no_row_is_rejected(tmp_path: Path) -> None:
    """No dead letter: --dead-letters-out is a file of the header only, not a traceback (an
    empty seq column was no index)."""
    path = tmp_path / "x.csv"
    path.write_text("timestamp,value\n2014-01-01 00:00:00,1\n", encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 1\n", encoding="utf-8")
    dead = tmp_path / "dead.csv"
    run = tsmon(
        "replay", str(path), "--queries", str(queries), "--dead-letters-out", str(dead)
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0 and f"wrote 0 dead letters to {dead}" in out, out
    assert dead.read_text().splitlines() == ["seq,series,ts_ms,value,reason,detail,origin"]


def test_a_csv_in_the_working_directory_is_named_after_it(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("timestamp,value\n2014-01-01 00:00:00,1\n", encoding="utf-8")
    (tmp_path / "q.tsq").write_text("QUERY a ON * WHEN last > 0\n", encoding="utf-8")
    run = patched("import sys", "replay", "x.csv", "--queries", "q.tsq", cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert f"series={tmp_path.name}.x," in out, out  # not '.x'


def test_replay_of_rows_stamped_ahead_says_how_to_take_them(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text(
        "timestamp,value\n2014-01-01 00:00:00,1\n2200-01-01 00:00:00,2\n2200-01-01 00:05:00,3\n",
        encoding="utf-8",
    )
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 0\n", encoding="utf-8")
    run = tsmon("replay", str(path), "--queries", str(queries))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    assert "accepted 1 + rejected 2 (future_timestamp: 2)" in out, out
    assert "note: 2 rows are stamped more than 1d after this machine's clock" in out, out
    assert "--max-future off replays them" in out, out
    run = tsmon("replay", str(path), "--queries", str(queries), "--max-future", "off")
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    assert "points received 3 = accepted 3 + rejected 0" in out, out
    assert "note:" not in out


def test_replay_refuses_an_alter_statement_before_reading_the_csv(tmp_path: Path) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text(
        "QUERY t AS AVG(a.x, b.x) WITHIN 5\nALTER QUERY t WITHIN 2\n", encoding="utf-8"
    )
    run = tsmon("replay", str(NAB), "--queries", str(queries))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, out
    assert f"error: query file {queries}: ALTER QUERY t changes a running job's query" in out
    assert "alter_query" not in out  # the Python API's name, not a command


def test_a_bounded_query_over_the_replayed_series_is_not_said_to_never_fire(
    tmp_path: Path,
) -> None:
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY level AS AVG(nab.cpu) WITHIN 5\n", encoding="utf-8")
    run = tsmon("replay", str(NAB), "--series", "nab.cpu", "--queries", str(queries))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    assert "will not fire" not in out
    assert "query 'level' waits: for series 'nab.cpu', which has sent no point yet" in out
    assert "│ level │ 0 │" in out and "note" not in out  # no longer waiting at the end


def test_the_exact_line_of_a_plot_keeps_a_file_with_a_malformed_line(tmp_path: Path) -> None:
    """The job dead-letters a malformed line and takes the file's other rows; the plot's
    recomputation of the exact values must take them too (it dropped the whole file)."""
    from tsmon.cli.oracle import input_points
    from tsmon.spark.input_spec import InputSpec

    (tmp_path / "a.csv").write_bytes(
        b"metric,time,v\na.x,1000,1\na.x,2000,2,extra\nb.x,3000,\xff\nb.x,4000,4\n"
        b"b.x,5000,1e141\nb.x,6000,\x016\n"  # value_out_of_range; the 6 Spark's cast reads
    )
    (tmp_path / "b.bin").write_bytes(b"\x00\x01")  # unreadable_file: no rows
    spec = InputSpec(
        kind="files",
        path=tmp_path,
        format="csv",
        columns={"series": "metric", "ts": "time", "value": "v"},
    )
    points = input_points(spec)
    assert points is not None
    assert points.values.tolist() == [["a.x", 1000, 1.0], ["b.x", 4000, 4.0], ["b.x", 6000, 6.0]]


def test_plot_of_a_watch_query_says_it_has_events(tmp_path: Path) -> None:
    import pandas as pd

    events = tmp_path / "events"
    events.mkdir()
    frame = pd.DataFrame({"query": ["spikes"], "series": ["a.x"], "ts_ms": [1000]})
    frame.to_parquet(events / "batch-000000000.parquet")
    run = tsmon("plot", "--job", str(tmp_path), "--query", "spikes")
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, out
    assert "error: query 'spikes' has events, not answers (a watch query)" in out, out
    assert f"tsmon show events --job {tmp_path} --query spikes" in out, out


def test_show_gives_epoch_ms_whole_and_no_time_as_a_dash(tmp_path: Path) -> None:
    """A dead-letters batch with a malformed line (no ts) made the ts column floats, shown as
    1.392e+12, and its missing UTC time as NaT; pandas warned about concatenating it."""
    import pandas as pd

    dead = tmp_path / "dead_letters"
    dead.mkdir()
    pd.DataFrame({"series": ["a.x"], "ts": [1392388800000], "reason": ["infinite"]}).to_parquet(
        dead / "batch-000000000.parquet"
    )
    pd.DataFrame({"series": [None], "ts": [None], "reason": ["malformed_line"]}).to_parquet(
        dead / "batch-000000001.parquet"
    )
    run = tsmon("show", "dead-letters", "--job", str(tmp_path))
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "1392388800000" in out and "1.392e+12" not in out, out
    assert "NaT" not in out and "FutureWarning" not in out, out


@pytest.mark.slow
@pytest.mark.spark
def test_a_job_survives_a_row_stamped_beyond_2262(tmp_path: Path) -> None:
    """A files job whose input has a row of the year 2999: a dead letter bad_timestamp. Its
    exact ms had no UTC twin for the Parquet sink, and the job died at that batch (again at
    every restart) with pandas' OutOfBoundsDatetime."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "a.csv").write_text(
        "series,ts,value\na.x,2014-02-14 14:30:00,1\na.x,2999-02-14 14:40:00,5\n",
        encoding="utf-8",
    )
    job = tmp_path / "job.toml"
    job.write_text(
        "queries = 'QUERY hot ON a.* WHEN last > 0'\n[job]\ncheckpoint = \"ckpt\"\n"
        '[input]\nkind = "files"\npath = "incoming"\nformat = "csv"\n'
        '[[sinks]]\nkind = "parquet"\npath = "out"\n',
        encoding="utf-8",
    )
    run = tsmon("run", str(job), "--once", timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert "2 rows in (1 accepted, 1 dead letters)" in out, out[-3000:]
    shown = tsmon("show", "dead-letters", "--job", str(job))
    assert "bad_timestamp" in shown.stdout and "32475998400000" in shown.stdout, shown.stdout


def test_query_remove_of_an_unknown_query_says_at_once_the_job_would_reject_it(
    tmp_path: Path,
) -> None:
    import pickle

    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings
    from tsmon.query import parse_query

    hub = CoordinatorNode(HostSettings(1_000, 0.1))
    hub.add(parse_query("QUERY spikes ON nab.* WHEN last > 1"))
    (tmp_path / "coordinator").mkdir()
    (tmp_path / "coordinator" / "coord-000000001.pkl").write_bytes(pickle.dumps(hub))
    run = tsmon("query", "remove", "--job", str(tmp_path), "spikez")
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out  # submitted all the same: the job decides
    assert "note: the job would reject it as things stand: no query 'spikez'" in out, out
    known = tsmon("query", "remove", "--job", str(tmp_path), "spikes")
    assert known.returncode == 0 and "note:" not in known.stdout, known.stdout


def test_python_dash_m_tsmon_and_version(tmp_path: Path) -> None:
    from tsmon import __version__

    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    run = subprocess.run(
        [sys.executable, "-m", "tsmon", "--version"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == f"tsmon {__version__}"


@pytest.mark.parametrize("which", ["csv", "queries"])
def test_events_out_never_overwrites_an_input(tmp_path: Path, which: str) -> None:
    data = tmp_path / "x.csv"
    data.write_text("timestamp,value\n2014-01-01 00:00:00,1\n", encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 0\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in (data, queries)}
    target = data if which == "csv" else queries
    run = tsmon("replay", str(data), "--queries", str(queries), "--events-out", str(target))
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, out
    assert f"error: --events-out {target} is an input of this command" in out, out
    assert {p: p.read_bytes() for p in before} == before


def _answers(tmp_path: Path) -> Path:
    import pandas as pd

    answers = tmp_path / "out" / "answers"
    answers.mkdir(parents=True)
    pd.DataFrame(
        {"query": ["s", "s"], "as_of_ms": [1000, 2000], "value": [1.0, 2.0]}
        | {"lo": [0.5, 1.5], "hi": [1.5, 2.5]}
    ).to_parquet(answers / "batch-000000000.parquet")
    return tmp_path / "out"


def test_plot_writes_a_png_at_exactly_the_path_given(tmp_path: Path) -> None:
    out = _answers(tmp_path)
    target = tmp_path / "picture"  # no suffix: matplotlib wrote picture.png and we said picture
    run = tsmon("plot", "--job", str(out), "--query", "s", "--out", str(target))
    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "picture.png").exists()


@pytest.mark.parametrize("where", ["folder", "missing-parent"])
def test_plot_checks_its_out_path_first(tmp_path: Path, where: str) -> None:
    out = _answers(tmp_path)
    target = out if where == "folder" else tmp_path / "no" / "p.png"
    run = tsmon("plot", "--job", str(out), "--query", "s", "--out", str(target))
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, said
    expected = "is a folder, not a file" if where == "folder" else "does not exist"
    assert f"error: --out {target}" in said and expected in said, said


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_stops_the_spark_demo_between_batches(tmp_path: Path) -> None:
    """Ctrl-C during `tsmon demo` met pyspark's own handler (cancel the jobs, raise in the
    main thread inside a Py4J call): Py4J's tracebacks on stderr. Now the demo stops between
    batches, as `tsmon run` does, with one line and status 130."""
    import signal
    import time

    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(REPO / "src"))
    demo = subprocess.Popen(
        [sys.executable, "-m", "tsmon", "demo", "--hosts", "20", "--dir", str(tmp_path / "d")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen = []
    assert demo.stdout is not None
    for line in demo.stdout:
        seen.append(line)
        if line.startswith("progress: data batch 1 of"):
            demo.send_signal(signal.SIGINT)
            break
    asked = time.monotonic()
    try:
        rest, _ = demo.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        demo.kill()  # and its JVM with it: no demo left running after a failure
        demo.communicate()
        raise
    out = "".join(seen) + rest
    assert demo.returncode == 130, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    stopped = re.search(r"interrupted: stopped after ([\d,]+) of ([\d,]+) points", out)
    assert stopped, out[-3000:]
    assert int(stopped[1].replace(",", "")) < int(stopped[2].replace(",", ""))  # not the end
    assert time.monotonic() - asked < 60


def test_events_out_and_dead_letters_out_are_two_files(tmp_path: Path) -> None:
    """The same path for both outputs is refused before the replay: the dead letters,
    written second, would replace the events (both 'wrote' lines printed, one file left)."""
    data = tmp_path / "x.csv"
    data.write_text("timestamp,value\n2014-01-01 00:00:00,1\n", encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 0\n", encoding="utf-8")
    target = tmp_path / "out.csv"
    run = tsmon(
        "replay", str(data), "--queries", str(queries), "--events-out", str(target),
        "--dead-letters-out", str(tmp_path / "." / "out.csv"),
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2, out
    assert f"error: --dead-letters-out {tmp_path}/out.csv is --events-out too" in out, out
    assert not target.exists()


def test_replay_takes_series_names_literally(tmp_path: Path) -> None:
    """A series named with glob characters (``cpu[0]``, ``db*``, or a file in a folder
    ``[prod]``: ``[prod].x``) is that series, not a glob matching others: every row of it is
    replayed, none an ``unknown_series``."""
    folder = tmp_path / "[prod]"
    folder.mkdir()
    (folder / "x.csv").write_text("timestamp,value\n1000,1\n2000,2\n", encoding="utf-8")
    long = tmp_path / "long.csv"
    long.write_text("series,ts,value\ncpu[0],1500,1\ndb*,2500,2\n", encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY a ON * WHEN last > 0\n", encoding="utf-8")
    run = tsmon(
        "replay", str(folder / "x.csv"), str(long), "--queries", str(queries),
        "--max-future", "off", "--show", "0",
    )  # fmt: skip
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 0, out
    assert "points received 4 = accepted 4 + rejected 0;" in out, out
    assert "series 3," in out, out


@pytest.mark.parametrize("ts", ["-99999999999999999", "99999999999999999", "-9223372036854775808"])
def test_replay_of_a_timestamp_outside_the_instants_dead_letters_it(
    tmp_path: Path, ts: str
) -> None:
    """A number that is no instant (beyond 1677-2262) is a bad_timestamp as on Spark, also
    with --max-future off; it used to be stored, and showing its event was a traceback."""
    data = tmp_path / "far.csv"
    data.write_text(f"timestamp,value\n{ts},500\n1000,1\n", encoding="utf-8")
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY hi ON x WHEN last > 10 EMIT last\n", encoding="utf-8")
    args = ("replay", str(data), "--series", "x", "--queries", str(queries), "--show", "3")
    run = tsmon(*args, "--max-future", "off")
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Traceback" not in out, out
    assert "points received 2 = accepted 1 + rejected 1 (bad_timestamp: 1)" in out, out


INGEST_FAILS = """
import sys
from tsmon.engine.monitor import Monitor
def failing_ingest(self, *args, **kwargs):
    raise RuntimeError("an invariant broke\\nsecond line")
Monitor.ingest = failing_ingest
"""


def test_an_unexpected_error_is_one_line_naming_it_and_debug_shows_the_trace(
    tmp_path: Path,
) -> None:
    """What is not the user's mistake is tsmon's bug: one line, status 1, no traceback; with
    --debug, the traceback."""
    queries = tmp_path / "q.tsq"
    queries.write_text("QUERY hi ON nab.cpu WHEN last > 90\n", encoding="utf-8")
    args = ("replay", str(NAB), "--series", "nab.cpu", "--queries", str(queries))
    run = patched(INGEST_FAILS, *args)
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in out, out
    assert "error: tsmon failed (RuntimeError: an invariant broke); this is a bug" in out, out
    debug = patched(INGEST_FAILS, "--debug", *args)
    assert debug.returncode == 1 and "Traceback" in debug.stderr, debug.stdout + debug.stderr


def _interrupted_at_start(args: list[str], app: str) -> tuple[int, str, set[int]]:
    """Run ``tsmon *args``, send SIGINT 1.5 s after its first line ('starting Spark', while
    the JVM is being launched); its status, its output and the JVMs of app name ``app`` left
    running 2 s after it ended (killed here, so a failure leaves none)."""
    import signal
    import time

    def jvms() -> set[int]:
        marker = f"spark.app.name={app}".encode()
        return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and marker in _cmdline(p)}  # fmt: skip

    before = jvms()
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(REPO / "src"))
    run = subprocess.Popen(
        [sys.executable, "-m", "tsmon", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert run.stdout is not None
    first = run.stdout.readline()
    assert "starting Spark" in first, first
    time.sleep(1.5)  # the JVM is being launched
    run.send_signal(signal.SIGINT)
    try:
        rest, _ = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        raise
    time.sleep(2)  # a JVM that lost its Python would still be here
    left = jvms() - before
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return run.returncode, first + rest, left


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_while_spark_starts_stops_its_jvm_and_ends_with_the_summary(
    tmp_path: Path,
) -> None:
    """Ctrl-C while `tsmon run` started Spark raised in the main thread inside pyspark's JVM
    launch: 'interrupted', and the driver JVM, which ignores SIGINT, ran on without its
    Python. Now Spark starts in the job's waiting thread: the signal stops it once it is up,
    and the run ends with its summary line, as a Ctrl-C during the run does."""
    name = f"ctrl-c-at-start-{os.getpid()}"
    (tmp_path / "in").mkdir()
    job = tmp_path / "job.toml"
    job.write_text(
        f'queries = "QUERY a ON * WHEN last > 0"\n[job]\nname = "{name}"\ncheckpoint = "ckpt"\n'
        '[input]\nkind = "files"\npath = "in"\nformat = "csv"\n',
        encoding="utf-8",
    )
    status, out, left = _interrupted_at_start(["run", str(job)], name)
    assert not left, out
    assert status == 0, out
    assert "interrupted: stopped (state is in the checkpoint)" in out, out
    assert out.strip().splitlines()[-1].startswith("done: 0 batches"), out


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_while_the_demo_starts_spark_leaves_no_jvm(tmp_path: Path) -> None:
    """The same for `tsmon demo`, whose session starts in the main thread: the signal is held
    while Spark starts (tsmon.spark.session), then Spark is stopped and the demo ends with
    'interrupted', status 130."""
    args = ["demo", "--hosts", "5", "--dir", str(tmp_path / "d")]
    status, out, left = _interrupted_at_start(args, "tsmon-demo")
    assert not left, out
    assert status == 130 and out.strip().splitlines()[-1] == "interrupted", out


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return b""
