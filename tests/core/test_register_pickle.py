"""A register and its windows pickle compactly and, unpickled, behave as if never pickled
(the Spark host pickles every node each batch)."""

from __future__ import annotations

import functools
import io
import pickle

import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tsmon.core.register import DuplicatePolicy, Register, RegisterConfig
from tsmon.core.sealed import SEAL_POINTS, Runs, Sealed, decode_ts, encode_ts, read_record
from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import STATS, open_window

SPECS = (WindowSpec.count(3), WindowSpec.time(2_500), WindowSpec.landmark(0))


@given(st.lists(st.integers(1, 2**40), max_size=40), st.integers(-(2**50), 2**50))
def test_timestamps_round_trip(deltas: list[int], first: int) -> None:
    ts = first + np.cumsum(np.array([0, *deltas], dtype=np.int64))
    for points in (ts, ts[:1], ts[:0]):
        back = decode_ts(encode_ts(points))
        assert back.dtype == np.int64
        assert back.tolist() == points.tolist()


@given(st.integers(2, 40), st.integers(1, 2**57), st.integers(-(2**60), 2**60))
@example(4, 2**55, 0)  # numpy's float count of the span would give 3 points
@example(3, 1, 2**63 - 3)  # the last timestamp is the largest int64
def test_even_timestamps_round_trip_over_any_span(n: int, step: int, first: int) -> None:
    """Evenly spaced timestamps decode exactly, spans past float precision included."""
    ts = first + step * np.arange(n, dtype=object)
    assume(-(2**63) <= ts[-1] < 2**63)
    points = ts.astype(np.int64)
    code = encode_ts(points)
    assert code == (first, step, n)
    assert decode_ts(code).tolist() == points.tolist()


@given(
    st.lists(st.lists(st.integers(1, 2**40), max_size=12), min_size=1, max_size=4),
    st.integers(-(2**50), 2**50),
    st.binary(max_size=9),
)
def test_run_records_read_back_exactly(runs: list[list[int]], first: int, lead: bytes) -> None:
    """Runs stored one after the other (a host's file of runs) read back from their offsets
    with the same start, timestamps (even or not) and values, bit for bit."""
    made, data, offsets = [], bytearray(lead), []
    for i, deltas in enumerate(runs):
        ts = first + np.cumsum(np.array([0, *deltas], dtype=np.int64))
        values = np.random.default_rng(i).normal(size=len(ts)) * 10.0 ** np.arange(len(ts))
        made.append(Sealed(7 * i, ts, values))
        offsets.append(len(data))
        data += made[-1].record()
    for run, offset in zip(made, offsets, strict=True):
        back = read_record(bytes(data), offset)
        assert (back.start, back.ts.tolist()) == (run.start, run.ts.tolist())
        assert back.values.tobytes() == run.values.tobytes()
        assert not back.ts.flags.writeable and not back.values.flags.writeable


def test_even_timestamps_pickle_to_a_few_bytes() -> None:
    reg = Register("s", RegisterConfig(retention_ms=None))
    reg.append(np.arange(1_000, dtype=np.int64) * 1_000, np.zeros(1_000))
    assert reg._ts.nbytes >= 8_000
    runs = 1_000 // SEAL_POINTS  # each sealed run adds its position and timestamp code
    assert len(pickle.dumps(reg, protocol=5)) < 8_000 + 500 + 40 * runs  # the values, little else


@given(
    st.one_of(st.none(), st.integers(1, 2**40)),
    st.one_of(st.none(), st.integers(1, 2**40)),
    st.integers(0, 2**40),
    st.sampled_from(list(DuplicatePolicy)),
)
def test_configs_load_equal_and_shared(
    capacity: int | None, retention: int | None, lateness: int, duplicates: DuplicatePolicy
) -> None:
    """A pickled config loads equal to the one pickled, its policy the enum member, and every
    load of an equal config is one object (a host loads a config per node each batch)."""
    config = RegisterConfig(capacity, retention, lateness, duplicates)
    regs = [
        Register(name, RegisterConfig(capacity, retention, lateness, duplicates)) for name in "ab"
    ]
    back = pickle.loads(pickle.dumps((config, regs), protocol=5))
    assert back[0] == config and back[0].duplicates is duplicates
    assert back[1][0].config is back[1][1].config is back[0]
    assert pickle.loads(pickle.dumps(config, protocol=5)) is back[0]


batches = st.lists(
    st.lists(st.tuples(st.integers(1, 2_000), st.floats(-1e3, 1e3)), min_size=1, max_size=12),
    min_size=1,
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(batches, st.lists(st.booleans(), min_size=10, max_size=10), st.sampled_from([None, 5]))
def test_pickled_each_batch_equals_never_pickled(
    steps: list[list[tuple[int, float]]], pickle_after: list[bool], capacity: int | None
) -> None:
    """Appends, evictions and per-point window statistics are equal with or without a pickle
    round trip between batches; pins of windows survive it (no stale pin holds points)."""
    config = RegisterConfig(capacity_points=capacity, retention_ms=4_000)
    plain = _series(config)
    pickled = _series(config)
    t = 0
    for n, step in enumerate(steps):
        ts = []
        for gap, _ in step:
            t += gap
            ts.append(t)
        values = np.array([v for _, v in step])
        got = [_advance(s, np.array(ts, dtype=np.int64), values) for s in (plain, pickled)]
        assert _same(got[0], got[1])
        assert _points(plain[0]) == _points(pickled[0])
        assert len(pickled[0]._pins) == 2  # the count and time windows, however often pickled
        if pickle_after[n]:
            pickled = pickle.loads(pickle.dumps(pickled, protocol=5))


def _series(config: RegisterConfig) -> tuple[Register, dict]:
    reg = Register("s", config)
    return reg, {spec: open_window(spec, reg) for spec in SPECS}


def _advance(series: tuple[Register, dict], ts: np.ndarray, values: np.ndarray) -> dict:
    reg, windows = series
    p0, p1 = reg.append(ts, values)
    views = {spec: w.advance(p0, p1, STATS) for spec, w in windows.items()}
    reg.evict()
    return {spec: {s: v.stat(s).tolist() for s in STATS} for spec, v in views.items()}


def _points(reg: Register) -> tuple:
    p0, p1 = reg.start, reg.end
    return p0, p1, reg.complete_from_ts, reg.ts(p0, p1).tolist(), reg.values(p0, p1).tobytes()


def _same(a: dict, b: dict) -> bool:
    return repr(a) == repr(b)  # NaN-aware, exact


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 300), st.integers(1, 3)),
        st.tuples(st.just("late"), st.integers(0, 400), st.floats(-1e3, 1e3)),
        st.tuples(st.just("replace"), st.integers(0, 10**6), st.floats(-1e3, 1e3)),
        st.tuples(st.just("pickle"), st.booleans(), st.just(0)),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(ops, st.sampled_from([None, 200, 700]))
def test_sealed_runs_always_hold_the_register_points(actions: list, capacity: int | None) -> None:
    """Appends, late inserts, keep-last replacements and evictions over many sealed runs: a
    register pickled (or only snapshotted, keeping its runs) between any two of them holds the
    same points as one never pickled, and its runs never hold stale points."""
    config = RegisterConfig(capacity_points=capacity, retention_ms=None)
    plain, reg = Register("s", config), Register("s", config)
    t, counter = 0, 0
    for action, a, b in actions:
        if action == "append":
            ts = t + b * np.arange(1, a + 1, dtype=np.int64) * 2  # even: room for late points
            t = int(ts[-1])
            values = np.arange(counter, counter + a, dtype=np.float64)
            counter += a
            for r in (plain, reg):
                r.append(ts, values)
        elif (
            action == "late"
            and len(plain)
            and (late := t - 2 * a - 1) > plain.ts(plain.start, plain.start + 1)[0]
        ):
            for r in (plain, reg):
                if r.position_of(late) is None:
                    r.insert(late, b)
        elif action == "replace" and len(plain):
            for r in (plain, reg):
                r.replace(r.start + a % len(r), b)
        elif action == "pickle":
            blob = pickle.dumps(reg, protocol=5)
            if a:
                reg = pickle.loads(blob)
        for r in (plain, reg):
            r.evict()
        assert _points(reg) == _points(plain)
        for run in reg._runs:  # as last pickled, minus runs that changed since
            if run.end > reg.start:
                lo = max(run.start, reg.start)
                assert run.ts[lo - run.start :].tolist() == reg.ts(lo, run.end).tolist()
                assert run.values[lo - run.start :].tobytes() == reg.values(lo, run.end).tobytes()


def _through_records(reg: Register) -> Register:
    """``reg`` pickled as the Spark host does (runs apart, as binary records, a register's
    references packed) and read back: its runs' points are read only when first needed."""
    out, records = io.BytesIO(), bytearray()

    def persistent_id(obj: object) -> tuple | None:
        if type(obj) is not Runs:
            return None
        offsets = []
        for run in obj:  # every run read and written again (the host writes only new ones)
            offsets.append(len(records))
            records.extend(run.record())
        return obj.origin, obj.size, offsets

    pickler = pickle.Pickler(out, protocol=5)
    pickler.persistent_id = persistent_id  # type: ignore[method-assign]
    pickler.dump(reg)
    read = functools.partial(read_record, bytes(records))

    def persistent_load(pid: tuple) -> Runs:
        origin, size, offsets = pid
        return Runs(origin, size, tuple(offsets), read)

    unpickler = pickle.Unpickler(io.BytesIO(out.getvalue()))
    unpickler.persistent_load = persistent_load  # type: ignore[method-assign]
    return unpickler.load()


reads = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["ts", "values"]), st.integers(0, 10**6), st.integers(0, 10**6)),
        st.tuples(st.just("search"), st.lists(st.integers(-50, 5_000), max_size=4), st.booleans()),
        st.tuples(st.just("position_of"), st.integers(0, 5_000), st.just(0)),
        st.tuples(st.just("last_ts"), st.just(0), st.just(0)),
        st.tuples(st.just("append"), st.integers(1, 200), st.integers(1, 3)),
        st.tuples(st.just("late"), st.integers(1, 3_000), st.floats(-1e3, 1e3)),
        st.tuples(st.just("replace"), st.integers(0, 10**6), st.floats(-1e3, 1e3)),
        st.tuples(st.sampled_from(["evict", "reload"]), st.just(0), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 1_200),
    reads,
    st.sampled_from([(None, 1_000), (300, None), (None, 3_000)]),
)
@example(0, 3 * SEAL_POINTS, [("evict", 0, 0), ("search", [5], True)], (None, 10))
def test_runs_read_lazily_answer_every_read_as_read_eagerly(
    seed: int, n: int, actions: list, limits: tuple[int | None, int | None]
) -> None:
    """A register unpickled with its runs unread (read from records only when a read, a
    search, an eviction, a late point or a replacement needs their points) answers every read
    exactly as one never pickled, whatever it is asked first."""
    capacity, retention = limits
    config = RegisterConfig(capacity, retention, allowed_lateness_ms=50)
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(1, 4, n) * 2)  # even, uneven gaps: room for late points
    values = rng.normal(size=n)
    eager, lazy = Register("s", config), Register("s", config)
    for r in (eager, lazy):
        r.append(ts, values)
    lazy = _through_records(lazy)
    t = int(ts[-1])
    for action, a, b in actions:
        got = []
        for r in (eager, lazy):
            if action in ("ts", "values"):
                p0 = r.start + a % (len(r) + 1)
                p1 = p0 + b % (r.end - p0 + 1)
                got.append(getattr(r, action)(p0, p1).tobytes())
            elif action == "search":
                side = "right" if b else "left"
                got.append((r.search(np.array(a, dtype=np.int64), side).tolist(),
                            [int(r.search(x, side)) for x in a]))  # fmt: skip
            elif action == "position_of":
                got.append(r.position_of(a))
            elif action == "last_ts":
                got.append(r.last_ts)
            elif action == "append":
                got.append(r.append(t + b * 2 * np.arange(1, a + 1), np.full(a, float(b))))
            elif action == "late" and len(r) and (late := t - 2 * a - 1) > r.ts(*_oldest(r))[0]:
                got.append(r.position_of(late) is None and r.insert(late, b))
            elif action == "replace" and len(r):
                r.replace(r.start + a % len(r), b)
            elif action == "evict":
                r.evict()
                got.append((r.start, r.complete_from_ts))
        if action == "append":
            t += b * 2 * a
        elif action == "reload":
            lazy = _through_records(lazy)
        assert got[:1] == got[1:]
    assert _points(lazy) == _points(eager)


def _oldest(reg: Register) -> tuple[int, int]:
    return reg.start, reg.start + 1
