"""Seeded update streams ``(node, object, Δ)`` for the top-k monitoring experiments (Babcock &
Olston 2003, §4.1), synthetic stand-ins for the paper's World Cup and LBL traces plus the NAB
tweet volumes.

Every generator returns a :class:`Workload`: ``m`` monitor nodes (numbered 1..m), ``k``, the
initial partial values (at least ``k`` objects, as :class:`TopKNetwork` needs) and the list of
updates. Sliding windows are modelled with *cancelling* updates: an arrival ``(j, O, +Δ)`` at
time ``t`` is followed by ``(j, O, −Δ)`` as soon as the stream reaches time ``t + window``, so
partial values stay ≥ 0.

* :func:`popular_documents` — Monitoring Query 1: Zipf(1) page requests over 20,000 documents
  at 27 servers, all-day counts (no cancelling); popularity drifts by a slowly rotating rank
  permutation (every ``requests / rotations`` requests each document moves down one rank and
  the least popular one becomes the most popular: "breaking news").
* :func:`least_loaded` — Monitoring Query 2: the least loaded of 8 servers, load = requests in
  the last 15 minutes, BOTTOM-1 (``Workload.bottom``: run with ``TopKNetwork(bottom=True)``);
  a request is ``+1`` on its server, its expiry ``−1``; every server starts known at load 0.
  By default each server is its own monitor node (the paper's special case ``V_ij = V_i`` for
  ``i = j``, 0 otherwise); ``frontends=F`` instead counts each request at one of ``F``
  front-end nodes.
* :func:`busiest_destination` — Monitoring Query 3: packets to 2,000 destination hosts seen
  at 4 nodes over one hour, 15-minute sliding window, Zipf(1.1) destinations with packet
  trains (a packet repeats the previous destination with probability ``burst``) and a drifting
  rank permutation; each destination is mostly seen at one "route" node.
* :func:`tweets` — the ten NAB ``realTweets`` series (5-minute tweet counts per company),
  objects = companies, each row's count split multinomially over 4 nodes (company-specific
  Dirichlet weights), 1-hour sliding window; ``None`` if the data directory is absent. A
  company is its index in alphabetical order: integers hash alike in every process, so set
  order, tie-breaks and message counts do not depend on ``PYTHONHASHSEED`` (with the names
  as objects they did).
"""

from __future__ import annotations

import csv
import heapq
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

Update = tuple[int, Hashable, int]

NAB_TWEETS = Path("/work/shared/data/nab/realTweets")


@dataclass
class Workload:
    """A monitoring problem: ``m`` nodes, top-``k``, initial partial values and the updates."""

    name: str
    description: str
    m: int
    k: int
    initial: list[dict[Hashable, int]]
    updates: list[Update]
    max_value: int = 0  # largest exact value V_i over the run (filled by the harness)
    bottom: bool = False  # bottom-k (smallest values) instead of top-k
    info: dict[str, float] = field(default_factory=dict)
    # the stream as points for a host that cancels by itself: (t seconds, node, object, Δ > 0)
    # in time order, counted over the last ``window`` seconds (None: all-time counts)
    arrivals: list[tuple[float, int, Hashable, int]] = field(default_factory=list)
    window: float | None = None


def _zipf_cum(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=float) ** s
    return np.cumsum(w)


def _draw(rng: np.random.Generator, cum: np.ndarray, size: int) -> np.ndarray:
    return np.searchsorted(cum, rng.random(size) * cum[-1], side="right")


def _windowed(arrivals: Sequence[tuple[float, int, Hashable, int]], window: float) -> list[Update]:
    """Arrivals ``(t, node, obj, Δ)`` in time order → updates with expiries at ``t + window``
    (an expiry at time ``≤ t'`` is emitted before the arrival at ``t'``)."""
    out: list[Update] = []
    expiring: list[tuple[float, int, int, Hashable, int]] = []  # (t_exp, seq, node, obj, Δ)
    for seq, (t, node, obj, delta) in enumerate(arrivals):
        while expiring and expiring[0][0] <= t:
            _, _, n, o, d = heapq.heappop(expiring)
            out.append((n, o, -d))
        out.append((node, obj, delta))
        heapq.heappush(expiring, (t + window, seq, node, obj, delta))
    return out


def popular_documents(
    seed: int,
    requests: int = 200_000,
    docs: int = 20_000,
    servers: int = 27,
    k: int = 10,
    zipf: float = 1.0,
    rotations: int = 24,
) -> Workload:
    """Query 1: Zipf(``zipf``) requests over ``docs`` documents at ``servers`` nodes (log-normal
    server shares), all-day counts; ``rotations`` rank shifts spread evenly over the run."""
    rng = np.random.default_rng(seed)
    ranks = _draw(rng, _zipf_cum(docs, zipf), requests)
    perm = rng.permutation(docs)
    shift = (np.arange(requests) * rotations) // requests
    objs = perm[(ranks - shift) % docs]
    server_cum = np.cumsum(rng.lognormal(0.0, 0.5, servers))
    nodes = _draw(rng, server_cum, requests) + 1
    updates = [(n, o, 1) for n, o in zip(nodes.tolist(), objs.tolist(), strict=True)]
    initial: list[dict[Hashable, int]] = [{int(perm[r]): 0 for r in range(k)}]
    initial += [{} for _ in range(servers - 1)]
    day = 86_400.0 / requests  # seconds between requests: the run is one day
    arrivals = [(t * day, n, o, 1) for t, (n, o, _) in enumerate(updates)]
    return Workload(
        "a",
        f"popular documents: Zipf({zipf:g}) over {docs:,} docs, {servers} servers, "
        f"{requests:,} requests, {rotations} rank rotations, all-day counts, top-{k}",
        servers,
        k,
        initial,
        updates,
        arrivals=arrivals,
    )


def least_loaded(
    seed: int,
    requests: int = 60_000,
    servers: int = 8,
    window: float = 900.0,
    per_window: int = 4_000,
    frontends: int | None = None,
) -> Workload:
    """Query 2: BOTTOM-1 load over ``servers``; ``per_window`` requests per 15-minute window on
    average; server shares follow a mean-reverting log random walk (one step per simulated
    minute)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(window / per_window, requests)
    times = np.cumsum(gaps)
    minutes = int(times[-1] // 60) + 1
    logw = np.zeros((minutes, servers))
    x = rng.normal(0.0, 0.1, servers)
    for t in range(minutes):
        x = 0.98 * x + rng.normal(0.0, 0.03, servers)
        logw[t] = x
    weights = np.exp(logw)
    cum = np.cumsum(weights, axis=1)
    minute = (times // 60).astype(int)
    u = rng.random(requests) * cum[minute, -1]
    chosen = np.array([np.searchsorted(cum[mi], ui, side="right") for mi, ui in
                       zip(minute.tolist(), u.tolist(), strict=True)])  # fmt: skip
    nodes_of = chosen + 1 if frontends is None else rng.integers(1, frontends + 1, requests)
    m = servers if frontends is None else frontends
    arrivals = [
        (t, int(n), int(s), 1)
        for t, n, s in zip(times.tolist(), nodes_of.tolist(), chosen.tolist(), strict=True)
    ]
    updates = _windowed(arrivals, window)
    load = [0] * servers
    peak = 0
    for _, s, d in updates:
        load[s] += d
        peak = max(peak, load[s])
    if frontends is None:
        initial: list[dict[Hashable, int]] = [{j: 0} for j in range(servers)]
    else:
        initial = [dict.fromkeys(range(servers), 0) for _ in range(frontends)]
    where = "each server its own node" if frontends is None else f"{frontends} front-ends"
    return Workload(
        "b",
        f"least loaded of {servers} servers: {requests:,} requests, 15-min window "
        f"(~{per_window:,} live), {where}, BOTTOM-1",
        m,
        1,
        initial,
        updates,
        bottom=True,
        info={"peak_load": peak},
        arrivals=arrivals,
        window=window,
    )


def busiest_destination(
    seed: int,
    packets: int = 100_000,
    hosts: int = 2_000,
    nodes: int = 4,
    k: int = 1,
    duration: float = 3600.0,
    window: float = 900.0,
    zipf: float = 1.1,
    burst: float = 0.6,
    rotations: int = 12,
    route: float = 0.7,
) -> Workload:
    """Query 3: ``packets`` over ``duration`` seconds, 15-minute window, top-``k`` destination."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.random(packets) * duration)
    ranks = _draw(rng, _zipf_cum(hosts, zipf), packets)
    perm = rng.permutation(hosts)
    shift = (np.arange(packets) * rotations) // packets
    fresh = perm[(ranks - shift) % hosts]
    repeat = rng.random(packets) < burst
    dest = fresh.copy()
    for i in range(1, packets):  # packet trains
        if repeat[i]:
            dest[i] = dest[i - 1]
    home = rng.integers(1, nodes + 1, hosts)  # each destination's usual route
    other = rng.integers(1, nodes + 1, packets)
    node = np.where(rng.random(packets) < route, home[dest], other)
    arrivals = [
        (t, int(n), int(o), 1)
        for t, n, o in zip(times.tolist(), node.tolist(), dest.tolist(), strict=True)
    ]
    initial: list[dict[Hashable, int]] = [{int(perm[r]): 0 for r in range(k)}]
    initial += [{} for _ in range(nodes - 1)]
    return Workload(
        "c",
        f"busiest destination: {packets:,} packets / {duration / 60:g} min, {hosts:,} hosts, "
        f"Zipf({zipf:g}), trains p={burst:g}, {nodes} nodes, 15-min window, top-{k}",
        nodes,
        k,
        initial,
        _windowed(arrivals, window),
        arrivals=arrivals,
        window=window,
    )


def tweets(
    seed: int,
    k: int = 1,
    days: float | None = 7.0,
    nodes: int = 4,
    window: float = 3600.0,
    directory: Path = NAB_TWEETS,
) -> Workload | None:
    """NAB tweet volumes of ten companies over the first ``days`` days (all if ``None``),
    each 5-minute count split over ``nodes`` nodes; ``None`` if ``directory`` is absent."""
    files = sorted(directory.glob("*.csv")) if directory.is_dir() else []
    if not files:
        return None
    rng = np.random.default_rng(seed)
    rows: list[tuple[float, str, int]] = []
    for f in files:
        company = f.stem.rsplit("_", 1)[-1]
        with f.open() as fh:
            for rec in csv.DictReader(fh):
                ts = datetime.strptime(rec["timestamp"], "%Y-%m-%d %H:%M:%S").timestamp()
                rows.append((ts, company, int(float(rec["value"]))))
    rows.sort()
    start = rows[0][0]
    if days is not None:
        rows = [r for r in rows if r[0] < start + days * 86_400]
    companies = sorted({c for _, c, _ in rows})
    split = {c: rng.dirichlet(np.full(nodes, 2.0)) for c in companies}
    index = {c: i for i, c in enumerate(companies)}
    arrivals: list[tuple[float, int, Hashable, int]] = []
    for ts, company, value in rows:
        if value <= 0:
            continue
        for j, share in enumerate(rng.multinomial(value, split[company]).tolist(), start=1):
            if share:
                arrivals.append((ts, j, index[company], share))
    initial: list[dict[Hashable, int]] = [dict.fromkeys(range(len(companies)), 0)]
    initial += [{} for _ in range(nodes - 1)]
    span = f"first {days:g} days" if days is not None else "all days"
    return Workload(
        f"d{k}",
        f"NAB realTweets: {len(companies)} companies, {span} ({len(rows):,} rows), "
        f"{nodes} nodes (multinomial split), 1-hour window, top-{k}",
        nodes,
        k,
        initial,
        _windowed(arrivals, window),
        arrivals=arrivals,
        window=window,
    )
