"""CPU (user+sys) and peak memory of ``tsmon replay`` over a large CSV and the NAB files, for
several source trees run in turn (alternated rounds; the machine is shared and noisy).

    python benchmarks/bench_replay_read.py --trees /tmp/replaybase . --rounds 3

Each tree is a checkout whose ``src`` is put on PYTHONPATH. The large CSV is generated:
``series,ts,value`` over 20 series, 1M lines, a few malformed lines (an unclosed quote, 4
fields) and unreadable values; ``--clean`` leaves the malformed lines out (a reader from
before malformed lines were dead letters refuses them). The query is cheap (``last > 99.99``),
so the figures are mostly reading and feeding. Prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

NAB = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "nab"


def write_csv(path: Path, lines: int, clean: bool) -> None:
    rnd = random.Random(7)
    t = 1_600_000_000_000
    with path.open("w", newline="") as f:
        f.write("series,ts,value\n")
        for i in range(lines - 1):
            if not clean and i % 200_000 == 1234:
                f.write('h1,"oops,1\n')  # an unclosed quote
                continue
            if not clean and i % 250_000 == 777:
                f.write("h2,1,2,3\n")  # 4 fields
                continue
            t += 1000
            value = "NaNx" if i % 300_000 == 5 else f"{rnd.random() * 100:.3f}"
            f.write(f"host{i % 20}.cpu,{t},{value}\n")


def run(tree: Path, csvs: list[Path], queries: Path, out: Path, dead: bool) -> tuple[float, int]:
    """One replay: its user+sys CPU seconds and peak RSS in MB."""
    command = [sys.executable, "-m", "tsmon", "replay", *map(str, csvs), "--queries", str(queries)]
    command += ["--max-future", "off", "--show", "3", "--events-out", str(out / "events.csv")]
    if dead:
        command += ["--dead-letters-out", str(out / "dead.csv")]
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        raise SystemExit(f"{tree}: replay failed: {child.stderr.read().decode()[-400:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--clean", action="store_true", help="no malformed line in the CSV")
    parser.add_argument("--no-dead-letters-out", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        big = out / "big.csv"
        write_csv(big, args.lines, args.clean)
        queries = out / "q.tsq"
        queries.write_text("QUERY hot ON host*.cpu WHEN last > 99.99\n", encoding="utf-8")
        nab_queries = out / "nab.tsq"
        nab_queries.write_text(
            "QUERY spikes ON *.* WHEN abs(last - mean(1h before)) > 3 * stddev(1h before)\n"
            "      EMIT series, mean(1h before) AS usual\n",
            encoding="utf-8",
        )
        nab = sorted(NAB.glob("*/*.csv"))
        cases = {"1M-line CSV": ([big], queries, not args.no_dead_letters_out)}
        cases["44 NAB files"] = (nab, nab_queries, False)  # no dead letter in them
        figures: dict[tuple[str, Path], list[tuple[float, int]]] = {}
        for r in range(args.rounds):
            for case, (csvs, q, dead) in cases.items():
                for tree in args.trees:
                    cpu, rss = run(tree, csvs, q, out, dead)
                    figures.setdefault((case, tree), []).append((cpu, rss))
                    print(f"round {r + 1} {case} {tree}: cpu {cpu:.2f} s, peak {rss} MB")
        for (case, tree), runs in figures.items():
            cpu = statistics.median(c for c, _ in runs)
            rss = statistics.median(m for _, m in runs)
            print(f"{case} {tree}: median cpu {cpu:.2f} s, median peak {rss:.0f} MB")


if __name__ == "__main__":
    main()
