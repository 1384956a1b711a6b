"""A bucket's pickled nodes and sealed register points in files beside its Spark state
(issue 15, "state proportional to change").

``applyInPandasWithState`` keeps one state value per key (a bucket of sources) and the host
rewrites it whole every batch. Registers retain history (``[registers] retention``, 1 h by
default), so a node pickled whole would write all of it every batch. Registers pickle their
older points as :class:`~tsmon.core.sealed.Sealed` runs that stay the same until evicted,
held in one :class:`~tsmon.core.sealed.Runs` per register; this module stores each run once,
in a file per bucket and batch, and the node's pickle keeps a reference to it, one integer:
file number × 2³² + byte offset, a register's references pickled together as one call of
:func:`runs_at` that only a :class:`History` resolves. What a batch writes is then its new
runs, each node's newer points and the references. Loaded, a register's runs stay references
(a tuple of ints, no object per run) until the register reads one (``STATE_FORMAT`` 8; a
reference per run, each made a ``Sealed`` on load, cost ~1.3 µs per run and per batch:
``benchmarks/README.md``, "A register's runs as one object").

The pickler finds the runs through its ``dispatch_table``, a dict that pickle looks up (in C)
for objects other than plain ints, floats, strings, bytes, tuples, lists and dicts, so it
calls Python for a register's runs only. Pickle's persistent ids (format 4) called Python for
every one of a node's ~2,100 objects (228 → 154 µs per node pickled on ``bench_spark.py``'s
nodes), ``reducer_override`` for each of its ~90 objects of other types (~10 µs more per node).

The pickled nodes themselves go to a file of the batch too, and the Spark state value keeps
the rest of :class:`BucketState` (the run files each node refers to, the files to delete, the
batch count): a state value crosses between the JVM and Python twice a batch (Spark's
Pyrolite pickles bytes character by character) and goes through RocksDB's changelog
(``benchmarks/README.md``, "What pyspark's workers and the JVM spent around the host").

Files (``b<key>``: the bucket's key, :func:`~tsmon.spark.buckets.bucket_keys`):
``<checkpoint>/history/b<key>/<n>.runs``, the runs' binary records one after the
other (:meth:`~tsmon.core.sealed.Sealed.record`: no pickle per run, so loading one costs no
class lookup), and ``<n>.nodes``, the pickled ``{source: pickled node}`` of the bucket after
batch ``n``; ``n`` the bucket's count of committed batches, kept in its state: a replayed
batch starts from the same state and writes the same files with the same bytes (a node's step
is deterministic), written atomically (temporary file, then rename). A file no node refers to
after a batch, and the nodes' file the batch replaced, is deleted at the bucket's next batch,
when the state that still named it can no longer be replayed. The checkpoint must be on a
file system every executor reads and writes at the same path, as Spark's own state files need
on a cluster. A process killed while writing leaves its temporary file (``.<name>.<pid>``); it
is deleted with ``<name>`` (by then every batch that could write it has committed). Files are
not fsynced: a crash of the process loses nothing, a crash of the machine may lose the newest.
"""

from __future__ import annotations

import copyreg
import functools
import io
import os
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tsmon.core.sealed import Runs, Sealed, read_record

__all__ = ["Blobs", "BucketState", "History", "runs_at"]

PROTOCOL = pickle.HIGHEST_PROTOCOL

_OFFSET_BITS = 32
"""A reference is ``number << 32 | offset``: a file of one bucket and batch stays below 4 GB."""


class BucketState:
    """One bucket's nodes and their files: each source's pickled node, the run files each
    node refers to, the files to delete at the bucket's next batch, and the number of batches
    committed. Its codec (:class:`Blobs`, :class:`History`) opens and commits it."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.refs: dict[str, frozenset[int]] = {}
        self.garbage: list[str] = []
        self.batches = 0


class Blobs:
    """Nodes pickled whole, in the Spark state (no files): the host's codec when it has no
    directory."""

    @classmethod
    def open(cls, value: bytes | None) -> tuple[Blobs, BucketState]:
        """The codec and the state stored as ``value`` (None: a new bucket)."""
        return cls(), BucketState() if value is None else pickle.loads(value)

    def loads(self, blob: bytes) -> Any:
        return pickle.loads(blob)

    def dumps(self, source: str, node: Any) -> bytes:
        return pickle.dumps(node, protocol=PROTOCOL)

    def commit(self, state: BucketState) -> bytes:
        """Count the batch; the value to store (the whole state)."""
        state.batches += 1
        return pickle.dumps(state, protocol=PROTOCOL)


class History(Blobs):
    """Nodes pickled with their sealed runs stored in this bucket's history files, and the
    pickled nodes in a file of their own: the Spark state keeps the rest, a few bytes per
    source."""

    def __init__(self, root: Path, key: int, state: BucketState) -> None:
        self.directory = root / f"b{key}"
        self.number = state.batches  # this batch's files
        # id(run) -> (run, its reference), for runs sealed since their register was loaded
        self.known: dict[int, tuple[Sealed, int]] = {}
        self.files: dict[int, bytes] = {}
        self.new = io.BytesIO()  # this batch's file of runs
        self.refs: dict[str, set[int]] = {}  # files of the nodes pickled in this batch

    @classmethod
    def open(  # type: ignore[override]
        cls, root: Path, key: int, value: bytes | None
    ) -> tuple[History, BucketState]:
        """The codec and the state of the bucket of ``key`` stored as ``value`` (None: a new
        bucket), its nodes read from the file the last committed batch wrote."""
        state = BucketState()
        if value is not None:
            state.refs, state.garbage, state.batches = pickle.loads(value)
        history = cls(root, key, state)
        if state.batches:
            state.nodes = pickle.loads(history._read(f"{state.batches - 1}.nodes"))
        return history, state

    def _read(self, name: str) -> bytes:
        path = self.directory / name
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise RuntimeError(
                f"the history file {path} is missing: the checkpoint must be on a "
                "file system every executor reads at the same path, and files under "
                "history/ must not be removed"
            ) from None

    def loads(self, blob: bytes) -> Any:
        """The node pickled as ``blob``. Its registers read their runs from this bucket's
        files when they need them, so it is used in the batch that loaded it: a file it refers
        to may be deleted once the bucket's next batch commits."""
        return _Unpickler(io.BytesIO(blob), self).load()

    def _runs(self, origin: int, size: int, refs: tuple[int, ...]) -> Runs:
        """A register's runs, each a reference read only when the register needs it."""
        return Runs(origin, size, refs, self._load)

    def _load(self, ref: int) -> Sealed:
        number, offset = ref >> _OFFSET_BITS, ref & ((1 << _OFFSET_BITS) - 1)
        data = self.files.get(number)
        if data is None:
            data = self.files[number] = self._read(f"{number}.runs")
        return read_record(data, offset)

    def dumps(self, source: str, node: Any) -> bytes:
        out = io.BytesIO()
        self.refs[source] = set()
        _Pickler(out, self, self.refs[source]).dump(node)
        return out.getvalue()

    def _ref(self, run: Sealed) -> int:
        """The reference of ``run``, sealed since its register was loaded: written to this
        batch's file the first time."""
        known = self.known.get(id(run))
        if known is None:
            ref = self.number << _OFFSET_BITS | self.new.tell()
            known = self.known[id(run)] = (run, ref)
            self.new.write(run.record())
        return known[1]

    def commit(self, state: BucketState) -> bytes:
        """Delete the files the last committed state no longer referred to, write this
        batch's runs and nodes, note each pickled node's files and the files no node refers
        to any more (deleted at the bucket's next batch: until this one commits, a replay
        needs them); the value to store in Spark's state."""
        for name in state.garbage:
            (self.directory / name).unlink(missing_ok=True)
            for partial in self.directory.glob(f".{name}.*"):  # a killed writer's leftovers
                partial.unlink(missing_ok=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.new.tell():
            self._write(f"{self.number}.runs", self.new.getvalue())
        self._write(f"{self.number}.nodes", pickle.dumps(state.nodes, protocol=PROTOCOL))
        before = _union(state.refs.values())
        state.refs.update({source: frozenset(refs) for source, refs in self.refs.items()})
        state.garbage = [f"{n}.runs" for n in sorted(before - _union(state.refs.values()))]
        if state.batches:
            state.garbage.append(f"{state.batches - 1}.nodes")
        state.batches += 1
        return pickle.dumps((state.refs, state.garbage, state.batches), protocol=PROTOCOL)

    def _write(self, name: str, data: bytes) -> None:
        """Write a file atomically (temporary file, then rename)."""
        path = self.directory / name
        partial = path.with_name(f".{name}.{os.getpid()}")
        partial.write_bytes(data)
        os.replace(partial, path)


def runs_at(origin: int, size: int, refs: tuple[int, ...]) -> Runs:
    """What a node's pickle calls for each register's runs; a :class:`History` makes them
    instead, so a node pickled with its runs apart loads only through its bucket's history."""
    raise pickle.UnpicklingError(
        f"the runs of a register from position {origin} are stored in history files: load "
        "the node with tsmon.spark.history.History.loads"
    )


class _Pickler(pickle.Pickler):
    """Pickles a node with each register's runs as a call of :func:`runs_at` on their
    references."""

    def __init__(self, out: io.BytesIO, history: History, files: set[int]) -> None:
        super().__init__(out, protocol=PROTOCOL)
        # not a bound method: a cycle through the pickler would keep its memo, the whole
        # node, alive until the cyclic garbage collector finds it
        self.dispatch_table = {
            **copyreg.dispatch_table,
            Runs: functools.partial(_reduce, history, files),
        }


def _reduce(history: History, files: set[int], runs: Runs) -> tuple[Any, tuple[int, int, tuple]]:
    """A register's runs as a call of :func:`runs_at` on their references (new runs written
    by :meth:`History._ref`), their files noted in ``files``. Runs another history loaded (a
    node moved between buckets or testers) are written again, as new: their references name
    that history's files."""
    if runs.refs and runs.read != history._load:
        refs = tuple(map(history._ref, runs))
    else:
        refs = runs.refs_with(history._ref)
    files.update({ref >> _OFFSET_BITS for ref in refs})
    return runs_at, (runs.origin, runs.size, refs)


class _Unpickler(pickle.Unpickler):
    """Loads a node pickled by :class:`_Pickler`, each :func:`runs_at` from the history."""

    def __init__(self, data: io.BytesIO, history: History) -> None:
        super().__init__(data)
        self.history = history

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "runs_at":
            return self.history._runs
        found = _FOUND.get((module, name))
        if found is None:
            found = _FOUND[module, name] = super().find_class(module, name)
        return found


_FOUND: dict[tuple[str, str], Any] = {}
"""What :class:`_Unpickler` found by ``(module, name)``: a node's pickle names ~20 classes,
each an import and a walk of attributes per load otherwise (~0.8 µs each; ~0.25 from here)."""


def _union(sets: Iterable[frozenset[int]]) -> set[int]:
    return set().union(*sets)
