"""Largest relative error of every window statistic against exact rational recomputation, on
the real NAB series (first 6,000 points each) stamped 5 minutes apart with gaps of 1-30 hours
after 1 % of the points, fed in 6 batches, for 30 min, 1 h and 3 h windows and 100 points.

``PYTHONPATH=src python -m tests.core.measure_precision [files]`` (issue 17's measurement).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests.core.exact import NAB, ROUNDED_STATS, exact_stats, relative_errors
from tsmon.core.register import Register, RegisterConfig
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, open_window

HOUR = 3_600_000
SPECS = (WindowSpec.time(HOUR // 2), WindowSpec.time(HOUR), WindowSpec.time(3 * HOUR))


def errors(path: Path, spec: WindowSpec, seed: int = 1) -> dict[str, float]:
    """Largest relative error per statistic of ``spec``'s window over one gapped series."""
    values = pd.read_csv(path)["value"].to_numpy(np.float64)[:6000]
    rng = np.random.default_rng(seed)
    steps = np.full(len(values), 300_000, dtype=np.int64)
    gaps = rng.random(len(values)) < 0.01
    steps[gaps] = rng.integers(HOUR, 30 * HOUR, gaps.sum())
    ts = 1_400_000_000_000 + np.cumsum(steps)
    reg = Register("s", RegisterConfig(retention_ms=None))
    window = open_window(spec, reg)
    cuts = sorted({0, len(ts), *rng.integers(1, len(ts), 5).tolist()})
    views = [
        window.advance(*reg.append(ts[a:b], values[a:b]), STATS)
        for a, b in itertools.pairwise(cuts)
    ]
    exact = exact_stats(ts, values, spec)
    got = {name: np.concatenate([v.stat(name) for v in views]) for name in ROUNDED_STATS}
    return {name: float(relative_errors(got[name], exact[name]).max()) for name in got}


def main(argv: list[str]) -> None:
    files = [Path(f) for f in argv] or sorted(NAB.glob("real*/*.csv") if NAB else [])
    if not files:
        sys.exit("no NAB files: pass CSV paths, or put the data in ../shared/data/nab")
    worst: dict[str, tuple[float, str]] = {name: (0.0, "") for name in ROUNDED_STATS}
    for path, spec in itertools.product(files, (*SPECS, WindowSpec.count(100))):
        for name, err in errors(path, spec).items():
            if err > worst[name][0]:
                worst[name] = (err, f"{path.name} {spec}")
    for name, (err, where) in worst.items():
        print(f"{name:7s} max relative error {err:.3g}  ({where})")


if __name__ == "__main__":
    main(sys.argv[1:])
