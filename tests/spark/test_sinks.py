"""The sinks of a job: Parquet files per batch id (a replayed batch replaces its files), the
callback, and the console view (live table on a terminal, lines otherwise)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
from rich.console import Console

from tsmon.protocols.filters import Answer
from tsmon.spark.job import SinkSpec
from tsmon.spark.sinks import DEAD_LETTER_COLUMNS, BatchOutput, ConsoleView, Sinks

EVENT = {
    "query": "hot",
    "series": "h[1].cpu",
    "ts_ms": 5,
    "value": 0.9,
    "payload": {"series": "h[1].cpu", "max(1h)": 0.95},
    "coverage": 1.0,
    "replayed": False,
}
DEAD = dict(
    zip(DEAD_LETTER_COLUMNS, ["A", "a.x", 3, 1.5, "3", "1.5", "too_late", "older"], strict=True)
)


def output(batch_id: int, value: float, events: int = 1) -> BatchOutput:
    answers = {"[s]": Answer(value, value - 1, value + 1, 99)}
    progress = {"numInputRows": 7, "rowsToCoordinator": 2, "controlRows": 1, "watermark": 99}
    arrived = {"bounded": list(answers.items())}
    return BatchOutput(batch_id, [EVENT] * events, [DEAD], progress, {"bounded": answers}, arrived)


def test_parquet_files_per_batch_replaced_when_a_batch_is_replayed(tmp_path: Path) -> None:
    seen: list[BatchOutput] = []
    sinks = Sinks([SinkSpec("parquet", tmp_path), SinkSpec("callback")], seen.append)
    sinks.emit(output(0, 1.0))
    sinks.emit(output(1, 2.0, events=2))
    sinks.emit(output(1, 3.0, events=3))  # batch 1 replayed after a crash
    assert [o.batch_id for o in seen] == [0, 1, 1]
    answers = pd.concat(pd.read_parquet(p) for p in sorted((tmp_path / "answers").iterdir()))
    assert answers[["batch_id", "query", "value", "lo", "hi", "as_of_ms"]].values.tolist() == [
        [0, "[s]", 1.0, 0.0, 2.0, 99],
        [1, "[s]", 3.0, 2.0, 4.0, 99],
    ]
    events = pd.concat(pd.read_parquet(p) for p in sorted((tmp_path / "events").iterdir()))
    assert len(events) == 1 + 3
    assert json.loads(events["payload"].iloc[0]) == EVENT["payload"]
    # beside each epoch-ms column, its UTC timestamp
    assert events[["ts_ms", "ts_utc"]].iloc[0].tolist() == [5, pd.Timestamp(5, unit="ms", tz="UTC")]
    assert answers["as_of_utc"].tolist() == [pd.Timestamp(99, unit="ms", tz="UTC")] * 2
    dead = pd.read_parquet(tmp_path / "dead_letters" / "batch-000000001.parquet")
    assert list(dead.columns) == ["source", "series", "ts", "ts_utc", *DEAD_LETTER_COLUMNS[3:]]
    assert dead.drop(columns="ts_utc").to_dict("records") == [DEAD]
    assert dead["ts_utc"].tolist() == [pd.Timestamp(3, unit="ms", tz="UTC")]


def test_console_lines_without_a_terminal_and_a_table_on_one() -> None:
    buffer = io.StringIO()
    view = ConsoleView(Console(file=buffer, width=120, force_terminal=False))
    view.start()  # not a terminal: no live redraw
    view.update(output(4, 2.0))
    view.stop()
    text = buffer.getvalue()
    assert "batch 4: 7 points, 2 rows to the coordinator, 1 events, 1 answers" in text
    # brackets kept (no markup); the time in UTC beside the milliseconds
    assert "[s]: 2 in [1, 3] as of 1970-01-01T00:00:00.099Z (99 ms)" in text

    narrow = io.StringIO()  # a narrow log file, yet every line whole for grep
    view = ConsoleView(Console(file=narrow, width=40, force_terminal=False))
    view.update(output(4, 2.0))
    lines = narrow.getvalue().splitlines()
    assert "  [s]: 2 in [1, 3] as of 1970-01-01T00:00:00.099Z (99 ms)" in lines
    assert "batch 4: 7 points, 2 rows to the coordinator, 1 events, 1 answers" in lines

    table = io.StringIO()
    rendered = Console(file=table, width=160, force_terminal=True, color_system=None)
    rendered.print(view.render(output(5, 2.0)))
    shown = table.getvalue()
    assert "[s]" in shown and "h[1].cpu" in shown
    assert "watermark 1970-01-01T00:00:00.099Z (99 ms)" in shown
    assert "1970-01-01T00:00:00.005Z" in shown  # the event's time beside its ms
