"""Query partitions as Spark hosts them: the cost of one micro-batch for Q standing queries.

Issue 6: a million standing queries do not fit one coordinator loop, so
:mod:`tsmon.kinds.standing` splits them into ``P`` query partitions
(:class:`StandingPartition`, keys ``tsmon:standing/<i>``, hosted like source nodes so Spark
spreads them over executors). This benchmark measures what one micro-batch costs per partition
when each is hosted exactly as :class:`tsmon.spark.host.BucketHost` does it, without Spark:
per batch and partition, the control rows decoded (``json.loads`` of the control row carrying
the tick's snapshot), ``pickle.loads`` of the stored node (its bytes in the bucket's state),
the step (``StandingPartition.step`` + ``json.dumps`` of every output payload), and
``pickle.dumps`` of the node back. The host's own steps are called; the node is wrapped only
to time ``step`` apart from the JSON encoding.

Workload (as ``scale.py``, so the numbers compare): 1,000 drifting random walks (``Walks``), one
item per stream per tick, tick = 1 s of data time (``tick_ms = 1000``); Q random AVG-of-9
queries (``make_queries``), ``ε = c · σ_A`` with c = 12 (moderate), p = 0.9; k = 100,
``max_dt`` = 3,600 s, ``T`` = 10 s, no unit budget.

Choices
    * **Stream side.** One :class:`StandingSource` models all 1,000 streams (one source node);
      its ``StreamModels`` is replaced by the benchmarks' ``StreamModels(k = 100, t_max =
      initial interval = 100 ticks)`` (``common.make_engine``), so the estimates equal the
      engine baseline's (the source's default sets both to ``max_dt_ms``; see *Core notes* 4 in
      the README). Per tick the source's ``streams`` row goes to a real
      :class:`StandingCoordinator` (``receive``: stream table; ``control_for``: §4.5
      interruptions, Eq. 13, the snapshot ``now_ms, value, mu, sigma, last_ts,
      interrupted``), and the tick's control payload is JSON-encoded once (the control
      channel is JSON files). The coordinator holds one parsed probe statement only so that it
      emits snapshots; its add op is dropped. Snapshots do not depend on Q or P: they are
      built once and every (Q, P) run replays the same ones. Their cost is the "stream side"
      column (source + coordinator + JSON, per tick).
    * **Registration without parsing.** Parsing costs ~0.25-0.7 ms per statement (and
      ``StandingCoordinator.add`` another ~70 µs), too slow for 10^6. Each query is built as
      a ``StandingQuery`` over the coordinator's stream ids, encoded with ``encode_query``
      and JSON-encoded as the ``add`` control payload — exactly what the coordinator would
      send — and routed to partition ``partition_of(name, P)``. This coordinator-side encoding
      is timed once per Q ("encode s"). Per partition, registration is one host batch of its
      add rows (the host decoding them, ``step`` adding them), plus the first build of
      the sparse weight matrix (``QueryPartition._weights``, which the first tick would do),
      plus ``pickle.dumps``.
    * **Warm-up.** The first ticks evaluate every query (σ unknown), and later ones a
      synchronised wave; ``--warmup`` ticks (60, as ``scale.py``) are excluded. To keep the
      run short they call the partition's ``QueryPartition.run`` on the decoded snapshot
      directly (the same state change as ``step``; no answer rows, no pickling).
    * **Measured ticks** (``--ticks``, 30; ``--ticks-1e6`` for Q ≥ 10^6): the host path
      above, every partition, tick by tick. Per tick: the slowest partition (the critical
      path when partitions run in parallel on executors), the sum (one core doing all), and
      the makespan of a greedy longest-first assignment of the partition costs to
      ``--cores`` (2, this machine's). Missed deadlines: ``scale.replay`` at a 1 s tick
      budget (tick t arrives at t · B, starts when t − 1 is done; its evaluations are missed
      if it ends after (t + 1) · B), (a) on one core (sum), (b) on ``--cores`` cores.
    * **Baseline**, same process, data and queries: one ``DeferralEngine`` (``scale.
      build_engine``: no pickling, no JSON), wall time of ``engine.tick`` per tick; the ratio is
      (partitions' sum + stream side) / engine tick, medians. The hosted evaluation counts are
      checked to equal the engine's tick by tick ("= engine").

Outputs: a rich table, ``out/partitions.csv``, ``out/partitions.png`` (per-batch cost vs Q for
each P, with the 1 s budget line, and the cost breakdown at the largest Q).

Run (default Q = 10^5, 10^6, P = 1, 2, 4, 8; 438 s on this 2-core machine, 10^6 dominating)::

    .venv/bin/python benchmarks/deferral/partitions.py [--quick] [--queries 100000,1000000]
        [--partitions 1,2,4,8] [--ticks 30] [--ticks-1e6 30] [--warmup 60] [--cores 2]

``--quick`` (Q = 10^4, 10^5, 15 measured ticks) takes under 2 minutes (38 s here).
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MODERATE_C, OUT, machine_line
from rich.console import Console
from rich.table import Table
from scale import N_STREAMS, P, Walks, build_engine, make_queries, replay

from tsmon.engine.standing_settings import StandingSettings
from tsmon.kinds.standing.coordinator import StandingCoordinator
from tsmon.kinds.standing.node import StandingSource
from tsmon.kinds.standing.partition import (
    StandingPartition,
    encode_query,
    partition_key,
    partition_of,
)
from tsmon.protocols.deferral import StandingQuery, StreamModels, StreamSnapshot
from tsmon.query import parse_query
from tsmon.spark.host import _call, _control, _payload  # the host's own steps, timed apart

TICK_MS = 1_000
BUDGET_S = 1.0
SERIES = [f"w.s{i}" for i in range(N_STREAMS)]
# As scale.build_engine -> common.make_engine(N, tick_ms=1000, max_dt=3600): k = 100,
# max_dt 3,600 ticks, T = 10 ticks, interruption after 3 silent periods, no unit budget.
SETTINGS = StandingSettings(
    tick_ms=TICK_MS, partitions=1, k=100, max_dt_ms=3_600 * TICK_MS, max_dt_periods=np.inf,
    t_interrupt_ms=10 * TICK_MS, interrupt_factor=3.0,
)  # fmt: skip
COMPONENTS = ("decode", "unpickle", "step", "json", "pickle")


def source_models() -> StreamModels:
    """The engine baseline's models (``common.make_engine``: t_max = initial = 100 ticks)."""
    return StreamModels(
        SETTINGS.k, t_max_ms=100 * TICK_MS, initial_interval_ms=100 * TICK_MS,
        t_interrupt_ms=SETTINGS.retry_ms,
    )  # fmt: skip


# ---------------------------------------------------------------------------- stream side


def stream_side(seed: int, n_ticks: int) -> tuple[list[str], np.ndarray, list[float]]:
    """Per tick: the JSON control payload of the tick (snapshot), the walks' values, and the
    wall time of source report + coordinator receive + snapshot + JSON encoding."""
    walks = Walks(seed)
    probe = f"QUERY probe AS AVG({SERIES[0]}) WITHIN 1 CONFIDENCE 0.9"  # only to get snapshots
    coord = StandingCoordinator(SETTINGS)
    coord.add(parse_query(probe), [])
    src = StandingSource(SERIES, SETTINGS)
    src.models = source_models()
    texts, xs, walls = [], np.empty((n_ticks, N_STREAMS)), []
    for t in range(n_ticks):
        x = walks.step()
        xs[t] = x
        now = t * TICK_MS
        s = time.perf_counter()
        for name, v in zip(SERIES, x.tolist(), strict=True):
            src.observe(name, now, v)
        coord.receive([dict(r, source="src0") for r in src.report(now)])
        rows = coord.control_for([], now)[partition_key(0)]
        tick = next(r["payload"] for r in rows if r["payload"]["op"] == "tick")
        texts.append(json.dumps(tick, sort_keys=True))  # as the control channel encodes it
        walls.append(time.perf_counter() - s)
    assert coord.stream_of == {s: i for i, s in enumerate(SERIES)}  # ids = walk columns
    return texts, xs, walls


# ---------------------------------------------------------------------------- engine baseline


def run_engine(cols: np.ndarray, eps: np.ndarray, xs: np.ndarray, warmup: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    eng = build_engine(cols, eps)
    setup = time.perf_counter() - t0
    ids = np.arange(N_STREAMS)
    walls, evals = [], []
    for t, x in enumerate(xs):
        now = t * TICK_MS
        s = time.perf_counter()
        out = eng.tick(now, ids, np.full(N_STREAMS, now), x)
        walls.append(time.perf_counter() - s)
        evals.append(len(out))
    return {"setup_s": setup, "walls": walls[warmup:], "evals": evals[warmup:],
            "warmup_s": sum(walls[:warmup])}  # fmt: skip


# ---------------------------------------------------------------------------- the host path


class _Timed:
    """The node as the host sees it; times ``step`` and counts the answers it returns."""

    def __init__(self, node: StandingPartition) -> None:
        self.node, self.step_s, self.answers = node, 0.0, 0

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        s = time.perf_counter()
        out = self.node.step(control, data)
        self.step_s = time.perf_counter() - s
        self.answers = sum(len(o["payload"]["answers"]) for o in out)
        return out


def host_batch(
    key: str, stored: bytes | None, rows: list[dict], *, build: bool = False
) -> tuple[bytes, dict[str, float]]:
    """One micro-batch of partition ``key`` as ``BucketHost.step`` runs it."""
    t0 = time.perf_counter()
    control = _control(pd.DataFrame([{**r, "source": key} for r in rows])).get(key, [])
    t1 = time.perf_counter()
    node = StandingPartition(key, SETTINGS) if stored is None else pickle.loads(stored)
    t2 = time.perf_counter()
    timed = _Timed(node)
    out = [_payload(key, o) for o in _call(timed, control, None)]
    t3 = time.perf_counter()
    if build:  # the first build of the weight matrix (else done by the first tick)
        node.engine._weights()
    t4 = time.perf_counter()
    blob = pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)
    t5 = time.perf_counter()
    cost = {
        "decode": t1 - t0, "unpickle": t2 - t1, "step": timed.step_s,
        "json": t3 - t2 - timed.step_s, "build": t4 - t3, "pickle": t5 - t4, "total": t5 - t0,
        "evals": timed.answers, "json_bytes": sum(len(p) for p in out),
        "state_bytes": len(blob),
    }  # fmt: skip
    return blob, cost


def snapshot_of_payload(s: dict[str, Any]) -> StreamSnapshot:
    """The ``StreamSnapshot`` that ``StandingPartition._tick`` builds from a tick payload."""
    return StreamSnapshot(
        int(s["now_ms"]), np.array(s["value"], dtype=float), np.array(s["mu"], dtype=float),
        np.array(s["sigma"], dtype=float), np.array(s["last_ts"], dtype=np.int64),
        np.array(s["interrupted"], dtype=bool), np.array(s["period"], dtype=float),
    )  # fmt: skip


def makespan(costs: list[float], cores: int) -> float:
    """Greedy longest-first assignment of partition costs to ``cores``: the longest load."""
    loads = [0.0] * cores
    for c in sorted(costs, reverse=True):
        heapq.heapreplace(loads, loads[0] + c)
    return max(loads)


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q))


def run_hosted(
    q: int, n_parts: int, adds: list[str], crc: np.ndarray, texts: list[str],
    args: argparse.Namespace, ticks: int,
) -> dict[str, Any]:  # fmt: skip
    """Register, warm up and measure ``n_parts`` partitions hosting ``q`` queries."""
    keys = [partition_key(i) for i in range(n_parts)]
    members = [np.flatnonzero(crc % n_parts == i) for i in range(n_parts)]
    stored: dict[str, bytes] = {}
    reg: list[dict[str, float]] = []
    for key, rows_of in zip(keys, members, strict=True):
        rows = [{"kind": "ctrl", "seq": int(j), "payload": adds[j]} for j in rows_of.tolist()]
        stored[key], cost = host_batch(key, None, rows, build=True)
        reg.append(cost)
        del rows
    seq = q  # the add rows took seq 0 .. q - 1
    t0 = time.perf_counter()
    for key in keys:  # warm-up: QueryPartition.run on the decoded snapshot (same state)
        node = pickle.loads(stored[key])
        for text in texts[: args.warmup]:
            node.engine.run(snapshot_of_payload(json.loads(text)["snapshot"]))
        stored[key] = pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)
        del node
    warm = time.perf_counter() - t0
    per_tick: list[list[dict[str, float]]] = []
    for text in texts[args.warmup : args.warmup + ticks]:
        seq += 1
        costs = []
        for key in keys:
            row = {"kind": "ctrl", "seq": seq, "payload": text}
            stored[key], cost = host_batch(key, stored[key], [row])
            costs.append(cost)
        per_tick.append(costs)
    tot = [[c["total"] for c in cs] for cs in per_tick]
    slow = [max(t) for t in tot]
    total = [sum(t) for t in tot]
    mk = [makespan(t, args.cores) for t in tot]
    evals = [sum(int(c["evals"]) for c in cs) for cs in per_tick]
    res: dict[str, Any] = {
        "Q": q, "P": n_parts, "ticks": len(per_tick),
        "reg_sum_s": sum(c["total"] for c in reg), "reg_max_s": max(c["total"] for c in reg),
        "reg_decode_s": sum(c["decode"] for c in reg), "reg_step_s": sum(c["step"] for c in reg),
        "reg_build_s": sum(c["build"] for c in reg), "reg_pickle_s": sum(c["pickle"] for c in reg),
        "warmup_run_s": warm,
        "state_mb_max": max(c["state_bytes"] for c in per_tick[-1]) / 1e6,
        "state_mb_sum": sum(c["state_bytes"] for c in per_tick[-1]) / 1e6,
        "evals_per_tick": statistics.mean(evals),
        "slow_median_ms": 1e3 * statistics.median(slow), "slow_p95_ms": 1e3 * pct(slow, 95),
        "sum_median_ms": 1e3 * statistics.median(total), "sum_p95_ms": 1e3 * pct(total, 95),
        "cores_median_ms": 1e3 * statistics.median(mk), "cores_p95_ms": 1e3 * pct(mk, 95),
        "json_kb_median": statistics.median(
            sum(c["json_bytes"] for c in cs) / 1e3 for cs in per_tick
        ),
    }  # fmt: skip
    for comp in COMPONENTS:  # medians over ticks of the sum over partitions
        res[f"{comp}_ms"] = 1e3 * statistics.median(sum(c[comp] for c in cs) for cs in per_tick)
    res["missed_pct_1core"], res["max_lag_s_1core"] = replay(total, evals, BUDGET_S)
    res["missed_pct_cores"], res["max_lag_s_cores"] = replay(mk, evals, BUDGET_S)
    res["_evals"] = evals
    return res


# ---------------------------------------------------------------------------- main


def encode_adds(cols: np.ndarray, eps: np.ndarray) -> list[str]:
    """The coordinator's ``add`` control payloads, JSON-encoded (as the control channel does)."""
    w = 1.0 / 9
    out = []
    for j in range(len(cols)):
        query = StandingQuery(f"q{j}", dict.fromkeys(cols[j].tolist(), w), eps=float(eps[j]), p=P)
        op = {"type": "standing", "op": "add", "query": encode_query(query, False)}
        out.append(json.dumps(op, sort_keys=True))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--queries", default="100000,1000000", help="Q values")
    ap.add_argument("--partitions", default="1,2,4,8", help="P values")
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--ticks", type=int, default=30, help="measured ticks after warm-up")
    ap.add_argument("--ticks-1e6", type=int, default=30, help="measured ticks for Q >= 10^6")
    ap.add_argument("--cores", type=int, default=2, help="cores for the makespan replay")
    ap.add_argument("--c", type=float, default=MODERATE_C, help="ε / σ_A")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="partitions")
    ap.add_argument("--quick", action="store_true", help="Q = 10^4, 10^5; 15 measured ticks")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.ticks = "10000,100000", 15
    qs = [int(v) for v in args.queries.split(",")]
    ps = [int(v) for v in args.partitions.split(",")]
    console = Console(width=220)
    start = time.perf_counter()

    n_ticks = args.warmup + max(args.ticks, args.ticks_1e6 if max(qs) >= 10**6 else 0)
    texts, xs, side = stream_side(args.seed, n_ticks)
    side_ms = 1e3 * statistics.median(side[args.warmup :])
    console.print(
        f"stream side (1 source, 1,000 streams; coordinator snapshot + JSON, "
        f"{len(texts[-1]) / 1e3:.0f} kB per tick payload): median {side_ms:.1f} ms per tick"
    )
    rows: list[dict[str, Any]] = []
    for q in qs:
        ticks = args.ticks_1e6 if q >= 10**6 else args.ticks
        sigma = Walks(args.seed).sigma
        cols, sig_a = make_queries(q, args.seed, sigma)
        eps = args.c * sig_a
        t0 = time.perf_counter()
        adds = encode_adds(cols, eps)
        encode_s = time.perf_counter() - t0
        crc = np.array([partition_of(f"q{j}", 1 << 32) for j in range(q)], dtype=np.int64)
        eng = run_engine(cols, eps, xs[: args.warmup + ticks], args.warmup)
        e_med = 1e3 * statistics.median(eng["walls"])
        console.print(
            f"Q={q:,}: encode {encode_s:.1f} s; engine setup {eng['setup_s']:.1f} s, median "
            f"tick {e_med:.1f} ms, {statistics.mean(eng['evals']):,.0f} evals/tick"
        )
        for n_parts in ps:
            res = run_hosted(q, n_parts, adds, crc, texts, args, ticks)
            res.update(
                encode_s=encode_s, engine_setup_s=eng["setup_s"], engine_median_ms=e_med,
                engine_p95_ms=1e3 * pct(eng["walls"], 95),
                engine_evals_per_tick=statistics.mean(eng["evals"]),
                evals_match=res.pop("_evals") == eng["evals"], stream_side_ms=side_ms,
                ratio_sum=(res["sum_median_ms"] + side_ms) / e_med,
                warmup=args.warmup,
            )  # fmt: skip
            rows.append(res)
            console.print(
                f"  P={n_parts}: registration {res['reg_sum_s']:.1f} s, slowest "
                f"{res['slow_median_ms']:.0f} ms, sum {res['sum_median_ms']:.0f} ms, state "
                f"{res['state_mb_sum']:.0f} MB, {res['evals_per_tick']:,.0f} evals/tick "
                f"(= engine: {res['evals_match']}); {time.perf_counter() - start:.0f} s so far"
            )
        del adds, eng

    table = Table(
        title=f"Query partitions hosted as on Spark (per batch: JSON decode, unpickle, step, "
        f"JSON encode, pickle); {N_STREAMS:,} streams, c = {args.c:g}, p = {P}, tick 1 s; "
        f"{args.warmup} warm-up + measured ticks; medians (p95); budget {BUDGET_S:g} s"
    )
    heads = ["Q", "P", "ticks", "reg s (max part.)", "state MB/part.", "evals/tick",
             "slowest part. ms", "sum ms (1 core)", f"{args.cores} cores ms", "JSON kB out",
             "missed % 1 core", f"missed % {args.cores} cores", "engine ms", "host/engine",
             "= engine"]  # fmt: skip
    for h in heads:
        table.add_column(h, justify="right")
    for r in rows:
        table.add_row(
            f"{r['Q']:,}", str(r["P"]), str(r["ticks"]),
            f"{r['reg_sum_s']:.1f} ({r['reg_max_s']:.1f})",
            f"{r['state_mb_sum'] / r['P']:.1f}", f"{r['evals_per_tick']:,.0f}",
            f"{r['slow_median_ms']:.0f} ({r['slow_p95_ms']:.0f})",
            f"{r['sum_median_ms']:.0f} ({r['sum_p95_ms']:.0f})",
            f"{r['cores_median_ms']:.0f} ({r['cores_p95_ms']:.0f})",
            f"{r['json_kb_median']:,.0f}", f"{r['missed_pct_1core']:.1f}",
            f"{r['missed_pct_cores']:.1f}",
            f"{r['engine_median_ms']:.0f} ({r['engine_p95_ms']:.0f})",
            f"{r['ratio_sum']:.1f}×", "yes" if r["evals_match"] else "NO",
        )  # fmt: skip
    console.print(table)
    btable = Table(title="Where a batch goes: medians over ticks of the sum over partitions, ms")
    for h in ("Q", "P", "encode s (coord.)", "reg: decode s", "reg: step s", "reg: build s",
              "reg: pickle s", *COMPONENTS):  # fmt: skip
        btable.add_column(h, justify="right")
    for r in rows:
        btable.add_row(
            f"{r['Q']:,}", str(r["P"]), f"{r['encode_s']:.1f}", f"{r['reg_decode_s']:.1f}",
            f"{r['reg_step_s']:.1f}", f"{r['reg_build_s']:.1f}", f"{r['reg_pickle_s']:.1f}",
            *(f"{r[f'{c}_ms']:.1f}" for c in COMPONENTS),
        )  # fmt: skip
    console.print(btable)
    console.print(f"stream side per tick (source + coordinator + JSON): {side_ms:.1f} ms")

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, args.out / f"{args.name}.png")
    console.print(f"wrote {args.out / args.name}.csv, {args.name}.png; {machine_line(start)}")


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, n_parts in enumerate(sorted({r["P"] for r in rows})):
        rs = sorted((r for r in rows if r["P"] == n_parts), key=lambda r: r["Q"])
        qv = [r["Q"] for r in rs]
        ax1.plot(qv, [r["slow_median_ms"] / 1e3 for r in rs], "o-", color=f"C{i}",
                 label=f"P={n_parts}: slowest partition")  # fmt: skip
        ax1.plot(qv, [r["sum_median_ms"] / 1e3 for r in rs], "s--", color=f"C{i}",
                 label=f"P={n_parts}: sum (1 core)")  # fmt: skip
    eng = {r["Q"]: r["engine_median_ms"] for r in rows}
    ax1.plot(sorted(eng), [eng[q] / 1e3 for q in sorted(eng)], "k^:", label="one DeferralEngine")
    ax1.axhline(BUDGET_S, color="r", lw=1, ls=":", label=f"budget {BUDGET_S:g} s")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("standing queries Q")
    ax1.set_ylabel("wall s per batch (median)")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, loc="upper left")
    top = max(r["Q"] for r in rows)
    rs = sorted((r for r in rows if r["Q"] == top), key=lambda r: r["P"])
    bottom = np.zeros(len(rs))
    xs = np.arange(len(rs))
    for comp in COMPONENTS:
        v = np.array([r[f"{comp}_ms"] / 1e3 for r in rs])
        ax2.bar(xs, v, bottom=bottom, label=comp)
        bottom += v
    ax2.plot(xs, [r["engine_median_ms"] / 1e3 for r in rs], "k^", label="one DeferralEngine")
    ax2.axhline(BUDGET_S, color="r", lw=1, ls=":")
    ax2.set_xticks(xs, [f"P={r['P']}" for r in rs])
    ax2.set_ylabel("s per batch, sum over partitions (median)")
    ax2.set_title(f"Q = {top:,}: where a batch goes", fontsize=9)
    ax2.legend(fontsize=7)
    fig.suptitle(f"{N_STREAMS:,} streams, AVG-of-9, c = 12, p = {P}: query partitions hosted as "
                 f"on Spark (pickle + JSON per batch)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
