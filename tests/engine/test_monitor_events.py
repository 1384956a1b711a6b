"""Monitor events against a brute-force reference monitor, on hypothesis-generated workloads.

The reference keeps the stored points of every series in a plain dict, classifies each offered
point (unknown series, too late, duplicate, late insert, new) by the documented rules, and
evaluates every query triggered by an accepted point from scratch: the window "as of" the point
is recomputed with ``tests.oracle.window_index``/``window_stats`` over the stored points with
``ts <= t_p``, and the query's syntax tree is interpreted with plain floats. Each numeric value
carries an error bound (from ``tests.oracle.tolerance``), so a comparison that is too close to
call is treated as "either way" and never makes a test flaky, while every clear-cut firing or
non-firing must match exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tsmon.query as A
from tests.oracle import observed_coverage, tolerance, window_index, window_stats
from tests.query.watch_strategies import _CMP, _div, _mod
from tsmon import Monitor
from tsmon.core.window_spec import WindowSpec
from tsmon.query import format_expr, parse_query

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
LANDMARK = "since 2023-11-14T22:14:20Z"  # T0 + 60 s

POOL = [
    "QUERY hi ON s.* WHEN last > mean(1m) + 1.5 * stddev(1m) EMIT series, mean(1m), stddev(1m)",
    "QUERY cnt ON s.a, s.b WHEN count(5 points) >= 3 AND max(5 points) - min(5 points) > "
    "0.5 * abs(first(5 points) - last(5 points)) "
    "EMIT max(5 points), min(5 points), first(5 points), last(5 points)",
    f"QUERY lm ON s.* WHEN NOT (mean({LANDMARK}) < first({LANDMARK})) "
    f"EMIT count({LANDMARK}), sum({LANDMARK}), var({LANDMARK}), ts, ts_ms",
    "QUERY trend ON s.* WHEN slope(2m) > 0 OR rate(3 points) < 0 "
    "EMIT slope(2m), rate(3 points), slope(2m) * 1m AS per_min",
    "QUERY dev ON s.b, s.c WHEN abs(last - mean(10 points)) > 2 * stddev(10 points) "
    "EMIT abs(last - mean(10 points)) AS dev, ts, series",
    "QUERY every ON s.a",
    "QUERY mix ON s.* WHEN sum(30s) / count(30s) >= min(30s) AND (max(30s) - last) * 2 >= 0 "
    "AND count(30s) % 2 == 1 EMIT sum(30s) / count(30s) AS m2, last - first(30s) AS d, "
    "ts - 1700000000 AS rel",
    "QUERY ties ON s.* WHEN max(4 points) == last OR min(4 points) = value "
    "EMIT max(4 points), min(4 points), -value AS neg",
    "QUERY cov ON s.c, s.a WHEN mean(45s) - mean(8 points) > 0 AND NOT coverage(45s) < 1 "
    "EMIT mean(45s), mean(8 points), coverage(45s), var(8 points)",
    "QUERY z ON s.* WHEN abs(last - mean(1m before)) > 1.5 * stddev(1m before) "
    "EMIT mean(1m before), count(3 points before), coverage(1m before), "
    "last - last(1 point before) AS step, max(3 points before)",
]

EXACT_STATS = {"count", "min", "max", "first", "last", "coverage"}


# ---- a scalar interpreter with error bounds ------------------------------------------------


@dataclass
class Ctx:
    """What one evaluation reads: the trigger point, its window stats and their error bounds."""

    value: float
    ts_ms: int
    stats: dict[tuple[str, WindowSpec], float]
    errs: dict[tuple[str, WindowSpec], float]


def _clean(err: float) -> float:
    return math.inf if math.isnan(err) else err


def _prod_err(x: float, ex: float, y: float, ey: float) -> float:
    def term(a: float, e: float) -> float:
        return 0.0 if e == 0 else abs(a) * e

    return term(x, ey) + term(y, ex) + (ex * ey if ex and ey else 0.0)


def _as_num(v: object, e: float) -> tuple[float, float]:
    if v is None:  # an undecided boolean used as a number: 0 or 1
        return 0.5, 0.5
    return float(v), e


def _truth(v: object, e: float) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    x = float(v)
    if math.isnan(x):
        return False
    if e == 0:
        return x != 0
    if not math.isfinite(e) or abs(x) <= e:
        return None
    return True


def _compare(op: str, x: float, ex: float, y: float, ey: float) -> bool | None:
    if math.isnan(x) or math.isnan(y):
        return False
    margin = ex + ey
    if margin == 0:
        return _CMP[op](x, y)
    if not math.isfinite(margin):
        return None
    diff = x - y
    if math.isnan(diff):
        return None
    if abs(diff) <= margin:
        return None
    return _CMP[op](diff, 0.0)


def approx(e: A.Expr, c: Ctx) -> tuple[object, float]:
    """Evaluate ``e``: (value, error bound); booleans are True, False or None (too close)."""
    if isinstance(e, A.Number):
        return e.value, 0.0
    if isinstance(e, A.Duration):
        return e.ms / 1000, 0.0
    if isinstance(e, A.Value):
        return c.value, 0.0
    if isinstance(e, A.Timestamp):
        return c.ts_ms / 1000, 0.0
    if isinstance(e, A.Stat):
        key = (e.name, e.window)
        return c.stats[key], c.errs[key]
    if isinstance(e, A.Call):
        x, ex = _as_num(*approx(e.args[0], c))
        return abs(x), ex
    if isinstance(e, A.Neg | A.Pos):
        x, ex = _as_num(*approx(e.operand, c))
        return (-x if isinstance(e, A.Neg) else x), ex
    if isinstance(e, A.Not):
        t = _truth(*approx(e.operand, c))
        return (None if t is None else not t), 0.0
    if isinstance(e, A.BoolOp):
        lt, rt = _truth(*approx(e.left, c)), _truth(*approx(e.right, c))
        if e.op == "and":
            if lt is False or rt is False:
                return False, 0.0
            return (True if lt and rt else None), 0.0
        if lt is True or rt is True:
            return True, 0.0
        return (False if lt is False and rt is False else None), 0.0
    x, ex = _as_num(*approx(e.left, c))
    y, ey = _as_num(*approx(e.right, c))
    if isinstance(e, A.Compare):
        return _compare(e.op, x, ex, y, ey), 0.0
    assert isinstance(e, A.BinOp)
    exact = ex == 0 and ey == 0
    if e.op in "+-":
        out = x + y if e.op == "+" else x - y
        err = ex + ey
    elif e.op == "*":
        out, err = x * y, _prod_err(x, ex, y, ey)
    elif e.op == "/":
        out = _div(x, y)
        if exact:
            err = 0.0
        elif abs(y) <= ey:
            err = math.inf
        else:
            err = (ex + abs(out) * ey) / (abs(y) - ey)
    else:
        out, err = _mod(x, y), (0.0 if exact else math.inf)
    if not exact or e.op != "%":
        err += 4e-16 * abs(out) if math.isfinite(out) else 0.0
    return out, _clean(err)


# ---- the reference monitor -------------------------------------------------------------------


@dataclass
class Expected:
    """One evaluation of one query at one accepted point."""

    query: str
    series: str
    ts_ms: int
    value: float
    fires: bool | None  # None: too close to call
    payload: dict[str, tuple[object, float]]
    coverage: float = 1.0


def payload_items(q: A.QueryDef) -> list[tuple[str, A.Expr]]:
    items = q.emit or (A.EmitItem(A.SeriesName()), A.EmitItem(A.Value()))
    return [(it.alias if it.alias is not None else format_expr(it.expr), it.expr) for it in items]


def needs(q: A.QueryDef) -> set[tuple[str, WindowSpec]]:
    exprs = [it.expr for it in q.emit] + ([q.when] if q.when is not None else [])
    return {(n.name, n.window) for x in exprs for n in x.walk() if isinstance(n, A.Stat)}


def evaluate_at(
    q: A.QueryDef,
    series: str,
    ts: np.ndarray,
    vals: np.ndarray,
    j: int,
    scale_vals: np.ndarray,
    scale_ts: np.ndarray,
) -> Expected:
    """Evaluate ``q`` as of point ``j`` of the sorted stored points ``ts``/``vals`` (nothing
    evicted: a window's coverage is the share of its span since the first point)."""
    stats: dict[tuple[str, WindowSpec], float] = {}
    errs: dict[tuple[str, WindowSpec], float] = {}
    coverage = min((observed_coverage(ts, j, spec) for _, spec in needs(q)), default=1.0)
    for name, spec in needs(q):
        if name == "coverage":
            stats[(name, spec)], errs[(name, spec)] = observed_coverage(ts, j, spec), 0.0
            continue
        idx = window_index(ts, j, spec)
        v = window_stats(ts[idx], vals[idx])[name]
        stats[(name, spec)] = v
        if name in EXACT_STATS:
            errs[(name, spec)] = 0.0
        else:
            rtol, atol = tolerance(name, scale_vals, scale_ts)
            errs[(name, spec)] = rtol * abs(v) + atol if math.isfinite(v) else 0.0
    c = Ctx(float(vals[j]), int(ts[j]), stats, errs)
    fires = True if q.when is None else _truth(*approx(q.when, c))
    payload: dict[str, tuple[object, float]] = {}
    for label, expr in payload_items(q):
        if isinstance(expr, A.SeriesName):
            payload[label] = (series, 0.0)
        elif isinstance(expr, A.TimestampMs):
            payload[label] = (int(ts[j]), 0.0)
        else:
            payload[label] = approx(expr, c)
    return Expected(q.name, series, int(ts[j]), float(vals[j]), fires, payload, coverage)


@dataclass
class Reference:
    """Stores points by the documented rules (no retention) and evaluates queries per point."""

    patterns: list[str]
    lateness_ms: int
    keep_first: bool
    queries: list[A.QueryDef] = field(default_factory=list)
    stored: dict[str, dict[int, float]] = field(default_factory=dict)
    reasons: list[str | None] = field(default_factory=list)  # per offered point
    expected: list[Expected] = field(default_factory=list)
    late_inserted: int = 0
    duplicates_replaced: int = 0
    now_ms: int | None = None

    def classify(self, series: str, ts: int) -> str | None:
        if series not in self.stored and not any(fnmatchcase(series, p) for p in self.patterns):
            return "unknown_series"
        points = self.stored.get(series, {})
        if points and max(points) - ts > self.lateness_ms:  # lateness first, duplicates too
            return "too_late"
        if ts in points:
            return "duplicate" if self.keep_first else None
        return None

    def offer(self, series: str, ts: int, value: float, scale: tuple[np.ndarray, np.ndarray]):
        reason = self.classify(series, ts)
        self.reasons.append(reason)
        if reason is not None:
            return
        points = self.stored.setdefault(series, {})
        if ts in points:
            self.duplicates_replaced += 1
        elif points and ts < max(points):
            self.late_inserted += 1
        points[ts] = value
        self.now_ms = ts if self.now_ms is None else max(self.now_ms, ts)
        s_ts, s_vals = self.arrays(series)
        j = int(np.searchsorted(s_ts, ts))
        for q in self.queries:
            if any(fnmatchcase(series, p) for p in q.triggers):
                self.expected.append(evaluate_at(q, series, s_ts, s_vals, j, *scale))

    def arrays(self, series: str) -> tuple[np.ndarray, np.ndarray]:
        items = sorted(self.stored[series].items())
        return (
            np.array([t for t, _ in items], dtype=np.int64),
            np.array([v for _, v in items], dtype=np.float64),
        )

    def replay(self, q: A.QueryDef, scale: tuple[np.ndarray, np.ndarray]) -> list[Expected]:
        """What ``SINCE`` must produce: every stored point with ts >= now - since, as of it."""
        assert q.since_ms is not None and self.now_ms is not None
        out = []
        for series in sorted(self.stored):
            if not any(fnmatchcase(series, p) for p in q.triggers):
                continue
            s_ts, s_vals = self.arrays(series)
            for j in np.flatnonzero(s_ts >= self.now_ms - q.since_ms):
                out.append(evaluate_at(q, series, s_ts, s_vals, int(j), *scale))
        return out


# ---- comparing ---------------------------------------------------------------------------


def check_payload(event, exp: Expected) -> None:
    assert list(event.payload) == list(exp.payload), (event.payload, exp.payload)
    for label, (want, err) in exp.payload.items():
        got = event.payload[label]
        where = f"{exp.query} {exp.series} @{exp.ts_ms}: payload {label!r}"
        if isinstance(want, str | int) and not isinstance(want, bool):
            assert got == want, f"{where}: got {got!r}, want {want!r}"
            continue
        if want is None or isinstance(want, bool):
            continue  # a comparison too close to call
        got = float(got)
        if math.isnan(want):
            assert math.isnan(got), f"{where}: got {got!r}, want nan"
        elif math.isinf(want) and err == 0:
            assert got == want, f"{where}: got {got!r}, want {want!r}"
        elif math.isfinite(err):
            assert abs(got - want) <= err + 1e-12 * abs(want), (
                f"{where}: got {got!r}, want {want!r} ± {err:g}"
            )


def _compatible(event, exp: Expected, replayed: bool) -> bool:
    """Whether an undecided evaluation could be this event (a keep-last duplicate triggers
    again at the same timestamp, so the key alone does not tell which evaluation fired)."""
    try:
        assert event.value == exp.value and event.replayed is replayed
        check_payload(event, exp)
    except AssertionError:
        return False
    return True


def match_events(got: list, expected: list[Expected], replayed: bool = False) -> None:
    """``got`` must be the expected firings in order: every certain one, and only undecided
    ones besides."""
    i = 0
    for k, event in enumerate(got):
        key = (event.query, event.series, event.ts_ms)
        while i < len(expected):
            exp = expected[i]
            i += 1
            same = (exp.query, exp.series, exp.ts_ms) == key
            if same and (
                exp.fires is True or (exp.fires is None and _compatible(event, exp, replayed))
            ):
                break
            assert exp.fires is not True, (
                f"missing event {exp.query} {exp.series} @{exp.ts_ms} (value {exp.value}) "
                f"before got[{k}] = {key}"
            )
        else:
            raise AssertionError(f"unexpected event got[{k}] = {event}")
        assert event.value == exp.value, f"{key}: value {event.value} != {exp.value}"
        assert event.replayed is replayed, key
        assert event.coverage == exp.coverage, f"{key}: coverage {event.coverage}"
        check_payload(event, exp)
    rest = [e for e in expected[i:] if e.fires is True]
    assert not rest, f"missing events at the end: {[(e.query, e.series, e.ts_ms) for e in rest]}"


# ---- workloads ---------------------------------------------------------------------------


@dataclass
class Workload:
    series: list[str]
    ts: np.ndarray
    values: np.ndarray
    cuts: list[int]  # batch boundaries, 0 ... n


@st.composite
def workloads(draw: st.DrawFn, max_points: int = 120) -> Workload:
    names = ["s.a", "s.b", "s.c"][: draw(st.integers(2, 3))]
    n = draw(st.integers(1, max_points))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offset = draw(st.sampled_from([0.0, 1e6, -250.0, 1e9]))
    sd = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    steps = draw(st.booleans())
    p_late, p_dup, p_unknown = draw(
        st.sampled_from([(0.0, 0.0, 0.0), (0.15, 0.1, 0.03), (0.3, 0.2, 0.05)])
    )
    max_gap = draw(st.sampled_from([2_000, 20_000]))
    grid = draw(st.sampled_from([1, 5_000]))  # on a grid, points land on window edges
    newest: dict[str, int] = {}
    seen: dict[str, list[int]] = {s: [] for s in names}
    out_s, out_t = [], []
    for _ in range(n):
        u = rng.random()
        if u < p_unknown:
            s = "x.unknown"
            t = T0 + int(rng.integers(0, 10**6))
        else:
            s = names[int(rng.integers(len(names)))]
            if seen[s] and u < p_unknown + p_dup:
                t = seen[s][int(rng.integers(len(seen[s])))]
            elif s in newest and u < p_unknown + p_dup + p_late:
                t = newest[s] - grid * int(rng.integers(1, 9_000 // grid + 1))
            else:
                t = newest.get(s, T0 + grid * int(rng.integers(0, 30_000 // grid))) + grid * int(
                    rng.integers(1, max(max_gap // grid, 2) + 1)
                )
                newest[s] = t
            seen[s].append(t)
        out_s.append(s)
        out_t.append(t)
    noise = rng.normal(0.0, sd, n)
    if steps:
        noise = np.round(noise / sd) * sd
    values = offset + noise
    cuts = draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=6))
    return Workload(
        out_s,
        np.array(out_t, dtype=np.int64),
        values,
        sorted({0, n, *[c for c in cuts if 0 < c < n]}),
    )


def scale_of(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    known = np.array([s != "x.unknown" for s in w.series], dtype=bool)
    return w.values[known], w.ts[known]


def feed(mon: Monitor, ref: Reference, w: Workload, lo: int, hi: int, scale) -> None:
    cuts = [c for c in w.cuts if lo < c < hi]
    for a, b in zip([lo, *cuts], [*cuts, hi], strict=True):
        if a == b:
            continue
        report = mon.ingest(w.series[a:b], w.ts[a:b], w.values[a:b])
        for i in range(a, b):
            ref.offer(w.series[i], int(w.ts[i]), float(w.values[i]), scale)
        bad = sum(r is not None for r in ref.reasons[-(b - a) :])
        assert (report.received, report.accepted, report.rejected) == (b - a, b - a - bad, bad)


def check_stats(mon: Monitor, ref: Reference) -> None:
    stats = mon.stats()
    reasons = [r for r in ref.reasons if r is not None]
    want = {r: reasons.count(r) for r in set(reasons)}
    assert stats["received"] == len(ref.reasons)
    assert stats["rejected"] == len(reasons)
    assert stats["accepted"] == len(ref.reasons) - len(reasons)
    assert stats["rejected_by_reason"] == want
    assert stats["late_inserted"] == ref.late_inserted
    assert stats["duplicates_replaced"] == ref.duplicates_replaced
    assert stats["points_stored"] == sum(len(p) for p in ref.stored.values())
    dead = mon.dead_letters()
    bad_seq = [i for i, r in enumerate(ref.reasons) if r is not None]
    assert dead["seq"].tolist() == bad_seq
    assert dead["reason"].tolist() == reasons


SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(
    w=workloads(),
    picks=st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=3, unique=True),
    keep_first=st.booleans(),
    glob=st.booleans(),
)
def test_events_match_reference(
    w: Workload, picks: list[int], keep_first: bool, glob: bool
) -> None:
    patterns = ["s.*"] if glob else ["s.a", "s.b", "s.c"]
    mon = Monitor(
        patterns,
        retention=None,
        allowed_lateness=5000,
        duplicates="keep_first" if keep_first else "keep_last",
    )
    ref = Reference(patterns, 5000, keep_first)
    for k in picks:
        mon.add_query(POOL[k])
        ref.queries.append(parse_query(POOL[k]))
    scale = scale_of(w)
    feed(mon, ref, w, 0, len(w.series), scale)
    match_events(mon.events(), ref.expected)
    assert mon.events() == []  # drained
    check_stats(mon, ref)
    for series in ref.stored:
        s_ts, s_vals = ref.arrays(series)
        spec = WindowSpec.count(7)
        got = mon.window_stats(series, spec)
        want = window_stats(s_ts[-7:], s_vals[-7:])
        for name, v in want.items():
            rtol, atol = tolerance(name, *scale)
            np.testing.assert_allclose(
                got[name],
                v,
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{series} {name}(7 points)",
            )


@SETTINGS
@given(
    w=workloads(),
    pick=st.integers(0, len(POOL) - 1),
    live=st.integers(0, len(POOL) - 1),
    since_s=st.sampled_from([1, 20, 90, 600]),
    split=st.floats(0.2, 0.9),
)
def test_since_replays_stored_history_then_runs_live(
    w: Workload, pick: int, live: int, since_s: int, split: float
) -> None:
    patterns = ["s.*"]
    mon = Monitor(patterns, retention=None, allowed_lateness=5000)
    ref = Reference(patterns, 5000, keep_first=False)
    mon.add_query(POOL[live])
    ref.queries.append(parse_query(POOL[live]))
    scale = scale_of(w)
    mid = max(1, int(len(w.series) * split))
    feed(mon, ref, w, 0, mid, scale)
    match_events(mon.events(), ref.expected)
    ref.expected.clear()

    text = POOL[pick].replace("QUERY ", "QUERY back_", 1) + f" SINCE -{since_s}s"
    q = parse_query(text)
    assert q.since_ms == since_s * 1000
    assert mon.add_query(text) == [q.name]
    replayed = mon.events()
    if ref.now_ms is None:
        assert replayed == []
    else:
        assert mon.now_ms == ref.now_ms
        want = ref.replay(q, scale)
        order = sorted(range(len(replayed)), key=lambda i: (replayed[i].ts_ms, replayed[i].series))
        assert [replayed[i].ts_ms for i in order] == [e.ts_ms for e in replayed]
        match_events(sorted(replayed, key=lambda e: (e.series, e.ts_ms)), want, replayed=True)

    ref.queries.append(q)
    feed(mon, ref, w, mid, len(w.series), scale)
    match_events(mon.events(), ref.expected)
    check_stats(mon, ref)


def test_reference_catches_a_wrong_window() -> None:
    """The comparison is not vacuous: a reference reading one point too many disagrees."""
    ts = T0 + np.arange(0, 10_000, 1000, dtype=np.int64)
    vals = np.arange(10, dtype=float)
    q = parse_query("QUERY q ON s WHEN mean(3 points) > 7.5 EMIT mean(3 points)")
    mon = Monitor(["s"], retention=None)
    mon.add_query("QUERY q ON s WHEN mean(3 points) > 7.5 EMIT mean(3 points)")
    mon.ingest(["s"] * 10, ts, vals)
    got = mon.events()
    good = [evaluate_at(q, "s", ts, vals, j, vals, ts) for j in range(10)]
    match_events(got, good)
    assert [e.ts_ms for e in got] == [int(ts[9])]  # mean(7, 8, 9) = 8 only
    q4 = parse_query("QUERY q ON s WHEN mean(4 points) > 7.5 EMIT mean(4 points)")
    bad = [evaluate_at(q4, "s", ts, vals, j, vals, ts) for j in range(10)]
    for e in bad:  # relabel the payload so only the values differ
        e.payload = {"mean(3 points)": e.payload["mean(4 points)"]}
    try:
        match_events(got, bad)
    except AssertionError:
        pass
    else:
        raise AssertionError("a wrong reference went unnoticed")
