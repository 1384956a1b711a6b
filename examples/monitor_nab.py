"""Watch four EC2 instances' CPU in-process with a Monitor, no Spark: spikes, the fleet's
average within a bound, and the busiest instance of the last hour.

    python examples/monitor_nab.py              # the NAB data in ../shared/data/nab
    python examples/monitor_nab.py DATA_DIR     # or another copy of realAWSCloudwatch/

The four NAB series (5-minute CPU utilisation, 14-28 February 2014) are merged by time and fed
a day at a time; after each day the script prints the answers so far. At the end: the spikes
per instance, and each answer beside the exact value recomputed here from the same data.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from tsmon import Monitor

HERE = Path(__file__).resolve().parent
DATA = HERE / "../../shared/data/nab/realAWSCloudwatch"  # beside the repository
INSTANCES = ("24ae8d", "53ea38", "5f5533", "fe7f93")  # the same two weeks
HOUR_MS = 3_600_000

QUERIES = """
-- a point more than 3 standard deviations from the hour before it, on every instance
QUERY spikes ON ec2.*.cpu WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)
      EMIT series, mean(1h before) AS usual
-- the fleet's current average CPU within 2 percentage points (adaptive filters)
QUERY fleet AS AVG(ec2.*.cpu) WITHIN 2
-- the instance with the most CPU over the last hour (sum of its 5-minute samples), exactly
QUERY busiest AS TOP 1 OF ec2.* BY cpu OVER 1h WITHIN 0
"""


def load(data: Path) -> pd.DataFrame:
    """The four series as one table ``series, ts, value``, merged by time (stable)."""
    frames = []
    for instance in INSTANCES:
        nab = pd.read_csv(data / f"ec2_cpu_utilization_{instance}.csv")
        ts = pd.to_datetime(nab["timestamp"], utc=True).astype("int64") // 1_000_000
        frames.append(
            pd.DataFrame({"series": f"ec2.{instance}.cpu", "ts": ts, "value": nab["value"]})
        )
    return pd.concat(frames).sort_values("ts", kind="stable").reset_index(drop=True)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    points = load(data)
    mon = Monitor([f"ec2.{i}.cpu" for i in INSTANCES], retention="6h")
    mon.add_query(QUERIES)
    spikes: Counter[str] = Counter()
    day = (points["ts"] - points["ts"].iloc[0]) // (24 * HOUR_MS)
    for n, chunk in points.groupby(day, sort=True):
        mon.ingest(chunk["series"].to_numpy(), chunk["ts"].to_numpy(), chunk["value"].to_numpy())
        spikes.update(e.series for e in mon.events() if e.query == "spikes")
        fleet = mon.answers("bounded")["fleet"]
        top = mon.answers("topk")["busiest"]
        print(
            f"day {n + 1}: {sum(spikes.values())} spikes so far; fleet average "
            f"{fleet.value:.2f} in [{fleet.lo:.2f}, {fleet.hi:.2f}]; busiest {top.members[0]}"
        )
    for series in sorted({f"ec2.{i}.cpu" for i in INSTANCES}):
        print(f"spikes on {series}: {spikes[series]}")
    # the exact answers, recomputed from the data: the last values, and the last hour's sums
    now = int(points["ts"].max())
    last = points.groupby("series")["value"].last()
    fleet = mon.answers("bounded")["fleet"]
    print(f"fleet: {fleet.value:.4f} in [{fleet.lo:.4f}, {fleet.hi:.4f}], exact {last.mean():.4f}")
    hour = points[points["ts"] > now - HOUR_MS].groupby("series")["value"].sum()
    top = mon.answers("topk")["busiest"]
    print(f"busiest: {top.members[0]}, exact {hour.idxmax().removesuffix('.cpu')}")


if __name__ == "__main__":
    main()
