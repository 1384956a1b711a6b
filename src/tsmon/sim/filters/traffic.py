"""Network-traffic-like workloads standing in for the traces of §5 (Figures 7 and 8).

The paper's large-scale simulation (§5.1, Fig. 7) replays a two-hour wide-area trace [PF95]
of 200 hosts whose packet rates range from 0 to about 150 packets/s; its multi-query experiment
(§5.2, Fig. 8) monitors five predicates Q1..Q5 over 10 hosts. Neither trace is available here,
so this module synthesises traffic with the properties Paxson and Floyd report for wide-area
traffic [PF95]: sessions arrive as a Poisson process per host, last a Pareto-distributed
(heavy-tailed) time and send at a log-normal packet rate; their superposition is bursty on
every time scale. Hosts differ in activity (log-normal across hosts). A host's access link
saturates at ``max_rate`` packets/s. Packets per second are Poisson around the momentary rate.

As in §5, an object is the one-minute moving-window average of a packet rate, updated once per
second (one time unit = 1 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.workload import Workload, grid_workload

#: The five predicates of Example 2 (§1.1); Q2 and Q5 carry most of the volume (§5.2).
PREDICATES = ("Q1", "Q2", "Q3", "Q4", "Q5")
#: Probability that a session satisfies each predicate (independently; empty subsets redrawn):
#: Q1, Q3, Q4 are 100 times rarer than Q2, Q5, as in §5.2.
PREDICATE_PROBS = (0.007, 0.7, 0.007, 0.007, 0.7)


@dataclass(frozen=True)
class TrafficParams:
    """Parameters of the session model (defaults calibrated to §5.1: 0..~150 packets/s).

    Parameters
    ----------
    session_rate
        Median over hosts of the session arrival rate, sessions per second.
    host_spread
        Standard deviation of the log of a host's activity (multiplies ``session_rate``).
    duration_min_s, duration_alpha, duration_max_s
        Session duration: Pareto with minimum ``duration_min_s``, tail index ``duration_alpha``
        (1 < α < 2: finite mean, infinite variance [PF95]), truncated at ``duration_max_s``.
    packet_rate_median, packet_rate_sigma
        Packet rate of a session while it lasts: log-normal, packets per second.
    max_rate
        Saturation of a host's link, packets per second.
    """

    session_rate: float = 0.06
    host_spread: float = 1.0
    duration_min_s: float = 2.0
    duration_alpha: float = 1.3
    duration_max_s: float = 1_800.0
    packet_rate_median: float = 6.0
    packet_rate_sigma: float = 1.0
    max_rate: float = 150.0

    def __post_init__(self) -> None:
        positive = {
            "session_rate": self.session_rate,
            "duration_min_s": self.duration_min_s,
            "duration_alpha": self.duration_alpha,
            "packet_rate_median": self.packet_rate_median,
            "max_rate": self.max_rate,
        }
        for name, v in positive.items():
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0, got {v}")
        if not self.duration_max_s >= self.duration_min_s:
            raise ValueError(
                f"duration_max_s ({self.duration_max_s} s) must be >= duration_min_s "
                f"({self.duration_min_s} s)"
            )
        if not (self.host_spread >= 0 and self.packet_rate_sigma >= 0):
            raise ValueError("host_spread and packet_rate_sigma must be >= 0")


#: Busier hosts for Fig. 8: 10 hosts then carry 100..500 packets/s of Q5 traffic, the range of
#: §5.1 ("about 100 to 800 packets per second").
FIG8_PARAMS = TrafficParams(session_rate=0.3)


@dataclass(frozen=True, eq=False)
class PacketTrace:
    """Packets per second of every host and measurement group.

    ``counts[h, g, t]`` packets of host ``h`` in group ``g`` during second ``t``; the first
    ``window_s − 1`` seconds only fill the first window, so :meth:`rates` has one full window
    per second of the trace.
    """

    counts: np.ndarray
    window_s: int
    groups: tuple[str, ...]

    @property
    def n_hosts(self) -> int:
        """Number of hosts (sources)."""
        return self.counts.shape[0]

    @property
    def duration_s(self) -> int:
        """Seconds with a full window."""
        return self.counts.shape[2] - self.window_s + 1

    def rates(self) -> np.ndarray:
        """One-minute (``window_s``) moving-window packet rate, shape (hosts, groups, seconds).

        Examples
        --------
        >>> t = PacketTrace(np.arange(6).reshape(1, 1, 6), window_s=3, groups=("all",))
        >>> t.rates().tolist()
        [[[1.0, 2.0, 3.0, 4.0]]]
        """
        return moving_average(self.counts, self.window_s)

    def host_rates(self) -> np.ndarray:
        """Moving-window rate of all of a host's measured packets, shape (hosts, seconds)."""
        return moving_average(self.counts.sum(axis=1), self.window_s)


def moving_average(counts: np.ndarray, window: int) -> np.ndarray:
    """Mean of every full window of ``window`` samples along the last axis (§5: 1-min window).

    Integer counts are summed exactly before the division.

    Examples
    --------
    >>> moving_average(np.array([1, 2, 3, 4]), 2).tolist()
    [1.5, 2.5, 3.5]
    """
    if window < 1 or counts.shape[-1] < window:
        raise ValueError(f"need window >= 1 and at least {window} samples, got {counts.shape}")
    c = np.cumsum(counts, axis=-1)
    pad = np.zeros((*c.shape[:-1], 1), dtype=c.dtype)
    c = np.concatenate([pad, c], axis=-1)
    return (c[..., window:] - c[..., :-window]) / window


def group_names(n_predicates: int = len(PREDICATES)) -> tuple[str, ...]:
    """Names of the ``2^p − 1`` measurement groups (§5.2); bit ``j`` from the left is ``Q_{j+1}``.

    Examples
    --------
    >>> group_names(2)
    ('g10', 'g01', 'g11')
    """
    return tuple(
        "g" + "".join("1" if g >> j & 1 else "0" for j in range(n_predicates))
        for g in range(1, 2**n_predicates)
    )


def subset_probs(predicate_probs: tuple[float, ...]) -> np.ndarray:
    """Probability of each non-empty predicate subset (group ``g``: bit ``j`` = ``Q_{j+1}``).

    Predicates hold independently; sessions satisfying none are not measured.

    Examples
    --------
    >>> subset_probs((0.5, 0.5)).round(4).tolist()   # g10, g01, g11
    [0.3333, 0.3333, 0.3333]
    """
    p = np.asarray(predicate_probs, dtype=float)
    if not np.all((p >= 0) & (p <= 1)) or not p.any():
        raise ValueError(f"predicate probabilities must be in [0, 1], not all 0; got {p}")
    g = np.arange(1, 2 ** len(p))
    bits = (g[:, None] >> np.arange(len(p))) & 1
    prob = np.prod(np.where(bits == 1, p, 1 - p), axis=1)
    return prob / prob.sum()


def simulate_packets(
    n_hosts: int,
    duration_s: int,
    *,
    window_s: int = 60,
    seed: int = 0,
    params: TrafficParams | None = None,
    predicate_probs: tuple[float, ...] | None = None,
) -> PacketTrace:
    """Superposed Pareto on/off sessions [PF95] as packets per second, per host and group.

    Without ``predicate_probs`` every packet is in one group ``"all"``; with them every
    session satisfies a random subset of the predicates (independently with these
    probabilities, redrawn if empty) and all its packets fall in that group (§5.2). Sessions
    start up to ``duration_max_s`` before the trace so that it starts in steady state.

    Examples
    --------
    >>> t = simulate_packets(3, 120, seed=1)
    >>> t.counts.shape, t.groups, t.duration_s
    ((3, 1, 179), ('all',), 120)
    """
    params = params or TrafficParams()
    if n_hosts < 1 or duration_s < 1 or window_s < 1:
        raise ValueError(
            f"need n_hosts, duration_s, window_s >= 1, got {n_hosts}, {duration_s}, {window_s}"
        )
    if predicate_probs is None:
        groups, probs = ("all",), np.ones(1)
    else:
        groups, probs = group_names(len(predicate_probs)), subset_probs(predicate_probs)
    n_groups = len(groups)
    seconds = duration_s + window_s - 1
    burn = float(params.duration_max_s)
    rng = np.random.default_rng([seed, 8023])
    activity = params.session_rate * rng.lognormal(0.0, params.host_spread, n_hosts)
    n_sessions = rng.poisson(activity * (seconds + burn))  # Poisson session arrivals [PF95]
    total = int(n_sessions.sum())
    host = np.repeat(np.arange(n_hosts), n_sessions)
    start = rng.uniform(-burn, seconds, total)
    # Pareto durations with minimum x_m and tail index α [PF95], truncated
    duration = params.duration_min_s * (1.0 + rng.pareto(params.duration_alpha, total))
    duration = np.minimum(duration, params.duration_max_s)
    rate = rng.lognormal(math.log(params.packet_rate_median), params.packet_rate_sigma, total)
    group = rng.choice(n_groups, total, p=probs) if n_groups > 1 else np.zeros(total, np.int64)
    first = np.clip(np.floor(start), 0, seconds).astype(np.int64)
    stop = np.clip(np.floor(start + duration), 0, seconds).astype(np.int64)
    row = host * n_groups + group
    width = seconds + 1
    diff = np.bincount(row * width + first, rate, n_hosts * n_groups * width)
    diff -= np.bincount(row * width + stop, rate, n_hosts * n_groups * width)
    raw = np.cumsum(diff.reshape(n_hosts, n_groups, width)[..., :seconds], axis=-1)
    raw = np.maximum(raw, 0.0)  # cancellation residue of the running sum
    load = raw.sum(axis=1, keepdims=True)
    scale = np.minimum(1.0, params.max_rate / np.maximum(load, 1e-300))  # link saturation
    counts = rng.poisson(raw * scale)
    return PacketTrace(counts, window_s, groups)


def _host_names(n_hosts: int) -> list[str]:
    digits = max(2, len(str(n_hosts - 1)))
    return [f"h{h:0{digits}d}" for h in range(n_hosts)]


def trace_workload(trace: PacketTrace, queries: tuple[Query, ...] = ()) -> Workload:
    """One object per host and group, the windowed rate, updated every second (§5).

    Objects are ``h07.g10110`` (host ``h07``, group bits Q1..Q5) or ``h007.rate`` for a trace
    with a single group; each host is a source.

    Examples
    --------
    >>> w = trace_workload(simulate_packets(2, 5, window_s=2, seed=0))
    >>> w.objects, dict(w.source_of), len(w)
    (('h00.rate', 'h01.rate'), {'h00.rate': 'h00', 'h01.rate': 'h01'}, 10)
    """
    hosts = _host_names(trace.n_hosts)
    suffixes = ["rate"] if trace.groups == ("all",) else list(trace.groups)
    objects = [f"{h}.{s}" for h in hosts for s in suffixes]
    source_of = {f"{h}.{s}": h for h in hosts for s in suffixes}
    rates = trace.rates().reshape(len(objects), trace.duration_s)
    return grid_workload(objects, source_of, rates.T, time_unit_ms=1_000, queries=queries)


def fig7_workload(
    delta: float,
    *,
    n_hosts: int = 200,
    duration_s: int = 7_200,
    window_s: int = 60,
    seed: int = 0,
    params: TrafficParams | None = None,
) -> Workload:
    """Figure 7 (§5.1): one AVG query with precision ``delta`` over 200 hosts, two hours.

    Examples
    --------
    >>> w = fig7_workload(5.0, n_hosts=4, duration_s=30)
    >>> w.objects[:2], w.queries[0].delta, len(w)
    (('h00.rate', 'h01.rate'), 5.0, 120)
    """
    trace = simulate_packets(n_hosts, duration_s, window_s=window_s, seed=seed, params=params)
    w = trace_workload(trace)
    return w.with_queries([Query.avg("avg", w.objects, delta)])


def fig8_queries(
    objects: tuple[str, ...],
    n_hosts: int,
    delta: float,
    *,
    low_volume_factor: float = 100.0,
    aggregate: Literal["sum", "avg_per_host", "avg"] = "sum",
) -> tuple[Query, ...]:
    """Q1..Q5 of §5.2 over group objects ``hXX.gBBBBB``: Q_j reads every group with bit j.

    Q2 and Q5 get ``delta``, the low-volume Q1, Q3, Q4 get ``delta / low_volume_factor``
    (§5.2). ``aggregate`` fixes what ``delta`` bounds:

    - ``"sum"`` (default): the total volume of packets satisfying ``Q_j``, packets/s over all
      hosts — a SUM query, ``Σ W_i <= δ_j``;
    - ``"avg_per_host"``: that volume per host, a SUM with weights ``1/n_hosts``,
      ``Σ W_i <= n_hosts·δ_j``;
    - ``"avg"``: the paper's literal "AVG queries" over the ``|S_j|`` group objects (16 per
      host), ``Σ W_i <= |S_j|·δ_j``, so uniform allocation gives every object ``W = δ_j``.
      Use it to compare with the δ axis of Fig. 8; it equals ``"sum"`` with ``δ·|S_j|``.

    Examples
    --------
    >>> objs = ("h0.g11000", "h0.g01000", "h0.g10111")
    >>> [sorted(q.weights) for q in fig8_queries(objs, 1, 1.0)]
    [['h0.g10111', 'h0.g11000'], ['h0.g01000', 'h0.g11000'], ['h0.g10111'], ['h0.g10111'],
     ['h0.g10111']]
    """
    if aggregate not in ("sum", "avg_per_host", "avg"):
        raise ValueError(f"aggregate must be 'sum', 'avg_per_host' or 'avg', got {aggregate!r}")
    weight = 1.0 / n_hosts if aggregate == "avg_per_host" else 1.0
    make = Query.avg if aggregate == "avg" else Query.sum
    out = []
    for j, name in enumerate(PREDICATES):
        members = {o: weight for o in objects if o.rsplit(".g", 1)[1][j] == "1"}
        d = delta if name in ("Q2", "Q5") else delta / low_volume_factor
        out.append(make(name, members, d))
    return tuple(out)


def fig8_workload(
    delta: float,
    *,
    n_hosts: int = 10,
    duration_s: int = 7_200,
    window_s: int = 60,
    seed: int = 0,
    params: TrafficParams | None = None,
    predicate_probs: tuple[float, ...] = PREDICATE_PROBS,
    low_volume_factor: float = 100.0,
    aggregate: Literal["sum", "avg_per_host", "avg"] = "sum",
    trace: PacketTrace | None = None,
) -> Workload:
    """Figure 8 (§5.2): 10 hosts × 31 measurement groups, five overlapping queries Q1..Q5.

    ``params`` defaults to :data:`FIG8_PARAMS`. Pass ``trace`` (from :func:`simulate_packets`
    with five predicate probabilities) to reuse a simulation across a sweep of ``delta``; the
    other trace arguments are then ignored.

    Examples
    --------
    >>> w = fig8_workload(4.0, n_hosts=2, duration_s=10)
    >>> len(w.objects), w.objects[0], [len(q.weights) for q in w.queries]
    (62, 'h00.g10000', [32, 32, 32, 32, 32])
    >>> [q.delta for q in w.queries]
    [0.04, 4.0, 0.04, 0.04, 4.0]
    """
    if trace is None:
        trace = simulate_packets(
            n_hosts,
            duration_s,
            window_s=window_s,
            seed=seed,
            params=params or FIG8_PARAMS,
            predicate_probs=predicate_probs,
        )
    if len(trace.groups) != 2 ** len(PREDICATES) - 1:
        raise ValueError(
            f"the trace needs {2 ** len(PREDICATES) - 1} groups (five predicates), "
            f"got {len(trace.groups)}; simulate it with predicate_probs"
        )
    w = trace_workload(trace)
    queries = fig8_queries(
        w.objects,
        trace.n_hosts,
        delta,
        low_volume_factor=low_volume_factor,
        aggregate=aggregate,
    )
    return w.with_queries(queries)
