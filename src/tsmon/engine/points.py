"""Reading a batch of ``(series, ts, value)`` into clean arrays, rejecting bad points."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsmon.core.units import UnitError, to_epoch_ms
from tsmon.engine.deadletters import DeadLetters, Reason


@dataclass
class Batch:
    """The accepted-so-far points of one ingest call, in arrival order."""

    seq: np.ndarray  # int64 arrival number, unique over the monitor's life
    series: np.ndarray  # object (str)
    ts_ms: np.ndarray  # int64
    values: np.ndarray  # float64, finite


def read_batch(
    series: object, ts: object, values: object, first_seq: int, dead: DeadLetters
) -> Batch:
    """Validate a batch; rejected points go to ``dead`` and are left out of the result."""
    names = np.asarray(series, dtype=object).reshape(-1)
    raw_ts = np.asarray(ts).reshape(-1)
    raw_values = np.asarray(values).reshape(-1)
    if raw_values.dtype.kind in "OUSb":
        raw_values = raw_values.astype(object)
    if not len(names) == len(raw_ts) == len(raw_values):
        raise ValueError(
            f"series, ts and value must have one entry per point, got lengths "
            f"{len(names)}, {len(raw_ts)}, {len(raw_values)}; pass arrays of equal length"
        )
    seq = np.arange(first_seq, first_seq + len(names), dtype=np.int64)
    ts_ms, ts_ok = _read_timestamps(raw_ts)
    numbers, reasons = _read_values(raw_values)
    keep = ts_ok & (reasons == "")
    bad_ts = ~ts_ok
    dead.add(
        seq[bad_ts],
        names[bad_ts],
        np.full(bad_ts.sum(), None),
        raw_values[bad_ts],
        Reason.BAD_TIMESTAMP,
        [f"cannot read timestamp {t!r}; pass epoch ms or ISO-8601" for t in raw_ts[bad_ts]],
    )
    for reason in (Reason.MISSING, Reason.NOT_NUMERIC, Reason.NAN, Reason.INFINITE):
        hit = ts_ok & (reasons == reason.value)
        dead.add(
            seq[hit],
            names[hit],
            ts_ms[hit],
            raw_values[hit],
            reason,
            [f"value {v!r} is {_EXPLAIN[reason]}" for v in raw_values[hit]],
        )
    return Batch(seq[keep], names[keep], ts_ms[keep], numbers[keep])


_EXPLAIN = {
    Reason.MISSING: "missing; send a finite number",
    Reason.NOT_NUMERIC: "not a number; send a finite number",
    Reason.NAN: "NaN; send a finite number or leave the point out",
    Reason.INFINITE: "infinite; send a finite number",
}


def _read_timestamps(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        return to_epoch_ms(raw), np.ones(len(raw), dtype=bool)
    except (UnitError, ValueError, TypeError, OverflowError):
        pass
    out = np.zeros(len(raw), dtype=np.int64)
    ok = np.zeros(len(raw), dtype=bool)
    for i, item in enumerate(raw):  # slow path: find which ones are bad
        try:
            out[i] = to_epoch_ms([item])[0]
            ok[i] = item is not None and not (isinstance(item, float) and np.isnan(item))
        except (UnitError, ValueError, TypeError, OverflowError):
            ok[i] = False
    return out, ok


def _read_values(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float values and a reason per point ('' when the value is good)."""
    if raw.dtype.kind in "fiu":
        numbers = raw.astype(np.float64)
        reasons = np.full(len(raw), "", dtype=object)
    else:
        is_bool = np.array([isinstance(v, (bool, np.bool_)) for v in raw], dtype=bool)
        missing = np.array([v is None or v is pd.NA for v in raw], dtype=bool)
        numbers = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        was_nan = np.array([_is_nan_number(v) for v in raw], dtype=bool)
        reasons = np.full(len(raw), "", dtype=object)
        reasons[np.isnan(numbers) & ~was_nan] = Reason.NOT_NUMERIC.value
        reasons[is_bool] = Reason.NOT_NUMERIC.value
        reasons[missing] = Reason.MISSING.value
        numbers = np.where(is_bool, np.nan, numbers)
    reasons[(reasons == "") & np.isnan(numbers)] = Reason.NAN.value
    reasons[(reasons == "") & np.isinf(numbers)] = Reason.INFINITE.value
    return numbers, reasons


def _is_nan_number(value: object) -> bool:
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    if isinstance(value, str):
        return value.strip().lower() in {"nan", "+nan", "-nan"}
    return False
