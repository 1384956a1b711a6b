"""The driver tells the operator what was quarantined: one console line per source and the
progress field's counts (docs/time.md)."""

from __future__ import annotations

import pytest

from tsmon.engine.deadletters import Reason
from tsmon.engine.guard import Quarantine, dead_row
from tsmon.spark.runtime import _quarantined


def test_quarantined_rows_are_counted_per_source_and_told_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def row(source: str, reason: Reason, detail: str) -> dict:
        return {**dead_row("x", 5, 1.0, reason, detail), "source": source}

    dead = [
        row("s2", Reason.QUARANTINED, "RuntimeError: a bug"),
        row("s1", Reason.TOO_LATE, "older than the allowed lateness"),
        row("s2", Reason.QUARANTINED, "RuntimeError: a bug"),
        row("s3", Reason.QUARANTINED, "ValueError: kind must be one of ... (left out: {...})"),
    ]
    coordinator = Quarantine(error="ValueError: kind must be one of ...", sources=["s3"])
    assert _quarantined(dead, coordinator) == {"s2": 2, "s3": 1}  # the error, not the row
    assert capsys.readouterr().out.splitlines() == [
        "tsmon: quarantined 2 row(s) of source 's2' (its node step failed): RuntimeError: a bug",
        "tsmon: quarantined 1 row(s) of source 's3' (the coordinator's step failed): "
        "ValueError: kind must be one of ...",
    ]
