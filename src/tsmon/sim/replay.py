"""Reading recorded series from CSV: NAB's ``timestamp,value`` or long ``series,ts,value``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tsmon.core.units import to_epoch_ms


def read_series_csv(path: str | Path, series: str | None = None) -> pd.DataFrame:
    """Load a CSV as (series, ts, value) rows with ``ts`` in epoch ms.

    A two-column ``timestamp,value`` file (NAB's format) becomes one series named ``series`` or
    ``<folder>.<file stem>``; a file with ``series``, ``ts`` and ``value`` columns is taken as is.
    Values are left as read: the monitor rejects bad ones to its dead letters.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}; pass the path of a recorded series")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    columns = set(frame.columns)
    if {"series", "ts", "value"} <= columns:
        out = frame[["series", "ts", "value"]].copy()
    elif {"timestamp", "value"} <= columns:
        name = series or f"{path.parent.name}.{path.stem}"
        out = pd.DataFrame({"series": name, "ts": frame["timestamp"], "value": frame["value"]})
    else:
        raise ValueError(
            f"{path}: expected columns 'timestamp,value' or 'series,ts,value', "
            f"found {', '.join(frame.columns)}"
        )
    out["ts"] = to_epoch_ms(out["ts"].to_numpy())
    return out
