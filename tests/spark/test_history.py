"""Register history kept apart from the Spark state (tsmon.spark.history), without Spark:
the host's answers are the same with or without history files, a batch's state stays small
however much history is retained, unreferenced files go, and a replayed batch writes the
same bytes."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.sealed import SEAL_POINTS
from tsmon.engine.node import SourceNode
from tsmon.engine.settings import HostSettings, RegisterSettings
from tsmon.spark.history import BucketState, History
from tsmon.spark.host import data_row
from tsmon.spark.host_tester import HostTester

SOURCES = ("a", "b", "c")


def _node(retention: str):
    def new_node(key: str) -> SourceNode:
        queries = {"local": "QUERY up ON *.x WHEN avg(5 points) > 1 EMIT mean(40s)"}
        registers = RegisterSettings(retention=retention)
        return SourceNode(key, HostSettings(1_000, 0.1, registers=registers, queries=queries))

    return new_node


def _batches(n: int, per: int, seed: int, late: bool = False) -> list[list[dict]]:
    """``n`` batches of ``per`` 1 s points for two series of each source (a random walk);
    ``late``: some points come a few seconds late."""
    rng = np.random.default_rng(seed)
    out, seq, value = [], 0, 0.0
    for b in range(n):
        rows = []
        for t in range(b * per, (b + 1) * per):
            for source in SOURCES:
                for series in ("x", "y"):
                    value += float(rng.normal())
                    ts = t * 1_000 - (3_000 if late and rng.random() < 0.05 and t > 5 else 0)
                    rows.append(data_row(source, f"{source}.{series}", ts, round(value, 3), seq))
                    seq += 1
        out.append(rows)
    return out


def _outputs(t: HostTester, rows: list[dict]) -> list:
    return sorted((r["source"], r["kind"], r["payload"]) for r in t.test(rows, clock_ms=0))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 400), st.sampled_from(["20s", "2m", "1h"]), st.booleans(), st.integers(0, 9))
def test_answers_equal_with_and_without_history_files(tmp_path_factory, per, retention, late, seed):
    root = tmp_path_factory.mktemp("history")
    apart = HostTester(_node(retention), buckets=2, history=str(root))
    whole = HostTester(_node(retention), buckets=2)
    for rows in _batches(6, per, seed, late):
        assert _outputs(apart, rows) == _outputs(whole, rows)
    for source in SOURCES:  # the nodes themselves, registers and all, pickled whole
        assert pickle.dumps(apart.peek(source)) == pickle.dumps(whole.peek(source))


def test_state_per_batch_does_not_grow_with_retained_history(tmp_path):
    """With 1 h retained, what a batch writes (state and files) stays about the same after
    10 or 40 batches, and the Spark state is a small part of it; pickled whole, the state
    grows with every batch."""
    apart = HostTester(_node("1h"), buckets=1, history=str(tmp_path))
    whole = HostTester(_node("1h"), buckets=1)
    sizes: dict[str, list[int]] = {"apart": [], "whole": [], "state": []}
    for rows in _batches(40, 60, seed=1):
        before = _files(tmp_path)
        for name, t in (("apart", apart), ("whole", whole)):
            _outputs(t, rows)
            sizes[name].append(len(t.states[0]))
        new = {k: len(v) for k, v in _files(tmp_path).items() if k not in before}
        assert sorted(new) == sorted({f"b0/{apart._stored('a').batches - 1}.nodes", *new})
        sizes["state"].append(sizes["apart"][-1])
        sizes["apart"][-1] += sum(new.values())
    assert sizes["apart"][39] < 1.3 * sizes["apart"][9]
    assert sizes["whole"][39] > 3 * sizes["whole"][9]
    assert sizes["apart"][39] < sizes["whole"][39] / 5
    assert sizes["state"][39] < sizes["apart"][39] / 5


def test_files_no_node_refers_to_are_deleted_a_batch_later(tmp_path):
    t = HostTester(_node("20s"), buckets=1, history=str(tmp_path))
    for rows in _batches(30, 50, seed=2):
        _outputs(t, rows)
        stored = t._stored("a")
        live = set().union(*stored.refs.values())
        garbage = {int(n.removesuffix(".runs")) for n in stored.garbage if n.endswith(".runs")}
        on_disk = {int(p.stem) for p in tmp_path.rglob("*.runs")}
        assert on_disk == live | garbage  # garbage goes at the next batch
        assert not live & garbage
        nodes = {p.name for p in tmp_path.rglob("*.nodes")}  # this batch's and the last's
        last = {f"{stored.batches - 2}.nodes"} if stored.batches > 1 else set()
        assert nodes == {f"{stored.batches - 1}.nodes", *last}
        assert last <= set(stored.garbage)
    assert len(on_disk) <= 3  # 20 s retained of 50 s batches: a file or two, not 30


def test_a_killed_writers_temporary_files_go_with_their_file(tmp_path):
    """A process killed mid-write leaves ``.<name>.<pid>``; the replay writes ``<name>`` under
    its own pid, and the leftover is deleted when ``<name>`` is, nothing else."""
    t = HostTester(_node("2m"), buckets=1, history=str(tmp_path))
    batches = _batches(4, 200, seed=5)
    _outputs(t, batches[0])
    b0 = tmp_path / "b0"
    leftovers = [b0 / ".1.nodes.99999", b0 / ".1.runs.99999"]
    for p in leftovers:
        p.write_bytes(b"half a file")
    _outputs(t, batches[1])
    assert (b0 / "1.nodes").exists() and (b0 / "1.runs").exists()
    assert all(p.exists() for p in leftovers)  # their files are still in use
    for rows in batches[2:]:
        _outputs(t, rows)
    assert not (b0 / "1.nodes").exists() and not (b0 / "1.runs").exists()
    assert not [p.name for p in b0.iterdir() if p.name.startswith(".")]


def test_a_replayed_batch_writes_the_same_files_and_rows(tmp_path):
    """Spark replays a failed batch from the last committed state: same rows, same bytes."""
    t = HostTester(_node("1h"), buckets=2, history=str(tmp_path))
    batches = _batches(8, 90, seed=3, late=True)
    for rows in batches[:-1]:
        _outputs(t, rows)
    committed = dict(t.states)
    first = _outputs(t, batches[-1])
    written = _files(tmp_path)
    t.states = dict(committed)  # the batch failed after writing its files: replay it
    assert _outputs(t, batches[-1]) == first
    assert _files(tmp_path) == written
    assert json.dumps(first)  # rows came out


def test_a_node_with_runs_apart_loads_only_through_its_history(tmp_path):
    """A node's runs are references into the bucket's files (a call of ``runs_at`` per
    register): a codec of that bucket reads them back, bit for bit; a plain unpickling refuses
    them."""
    node = _node("1h")("a")
    for rows in _batches(3, 200, seed=1):
        cols = [r for r in rows if r["source"] == "a"]
        node.step([], cols)
    state = BucketState()
    codec = History(tmp_path, 0, state)
    blob = codec.dumps("a", node)
    codec.commit(state)
    assert state.refs["a"] == {0} and sorted(_files(tmp_path)) == ["b0/0.nodes", "b0/0.runs"]
    back = History(tmp_path, 0, state).loads(blob)
    for series, kept in node.part("local").local.store.nodes.items():
        reg, got = kept.register, back.part("local").local.store.nodes[series].register
        assert len(reg._runs) == len(got._runs) == 600 // SEAL_POINTS
        assert got.ts(got.start, got.end).tolist() == reg.ts(reg.start, reg.end).tolist()
        assert got.values(got.start, got.end).tobytes() == reg.values(reg.start, reg.end).tobytes()
    with pytest.raises(pickle.UnpicklingError, match="history file"):
        pickle.loads(blob)


def _points(node: SourceNode) -> dict[str, tuple[list, bytes]]:
    out = {}
    for series, kept in node.part("local").local.store.nodes.items():
        reg = kept.register
        out[series] = (
            reg.ts(reg.start, reg.end).tolist(),
            reg.values(reg.start, reg.end).tobytes(),
        )
    return out


def test_a_node_moved_to_another_history_takes_its_runs_along(tmp_path):
    """A node loaded through one bucket's files and pickled by another codec (another bucket,
    another checkpoint) has its runs written to the new files, not references into the old:
    with the old files gone, it loads with every point."""
    node = _node("1h")("a")
    for rows in _batches(3, 200, seed=2):
        node.step([], [r for r in rows if r["source"] == "a"])
    want = _points(node)
    state = BucketState()
    first = History(tmp_path / "one", 0, state)
    blob = first.dumps("a", node)
    first.commit(state)
    loaded = History(tmp_path / "one", 0, state).loads(blob)
    moved, other = BucketState(), History(tmp_path / "two", 1, BucketState())
    moved_blob = other.dumps("a", loaded)
    other.commit(moved)
    for path in sorted((tmp_path / "one").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    assert _points(History(tmp_path / "two", 1, moved).loads(moved_blob)) == want


def test_a_peeked_node_keeps_its_points_after_later_batches(tmp_path):
    """``HostTester.peek`` gives a copy that holds its points: the bucket's files its runs
    were read from are deleted by later batches."""
    t = HostTester(_node("3m"), buckets=1, history=str(tmp_path))
    batches = _batches(8, 200, seed=3)
    for rows in batches[:3]:
        _outputs(t, rows)
    peeked, want = t.peek("a"), _points(t.peek("a"))  # peeked: not read yet
    for rows in batches[3:]:
        _outputs(t, rows)
    assert not (tmp_path / "b0" / "2.runs").exists()
    assert _points(peeked) == want


def test_pickling_a_node_leaves_no_cycle_behind(tmp_path):
    """The codec's pickler is freed when its pickle is made, with its memo of the whole node:
    a cycle through it (a bound method in its dispatch table, where a partial of a module
    function is) would wait for the cyclic garbage collector, which then has every object of
    the node to walk. A guard for the dispatch table's reducer, not a regression test: the
    earlier ``reducer_override`` left no cycle either."""
    node = _node("1h")("a")
    for rows in _batches(3, 200, seed=1):
        node.step([], [r for r in rows if r["source"] == "a"])
    codec = History(tmp_path, 0, BucketState())
    gc.collect()
    gc.disable()
    try:
        blob = codec.dumps("a", node)
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert codec.refs["a"] == {0} and blob


def test_a_missing_nodes_file_fails_with_its_path(tmp_path):
    """The Spark state names the nodes' file of its batch: without it, one clear error."""
    t = HostTester(_node("1h"), buckets=1, history=str(tmp_path))
    batches = _batches(3, 20, seed=4)
    for rows in batches[:2]:
        _outputs(t, rows)
    (tmp_path / "b0" / "1.nodes").unlink()
    with pytest.raises(RuntimeError, match=r"history file .*b0/1\.nodes is missing"):
        _outputs(t, batches[2])
