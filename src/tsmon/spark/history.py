"""A bucket's sealed register points in files beside its Spark state (issue 15, "state
proportional to change").

``applyInPandasWithState`` keeps one state value per key (a bucket of sources) and the host
rewrites it whole every batch. Registers retain history (``[registers] retention``, 1 h by
default), so a node pickled whole would write all of it every batch. Registers pickle their
older points as :class:`~tsmon.core.sealed.Sealed` runs that stay the same objects until
evicted; this module stores each run once, in a file per bucket and batch, and the node's
pickle keeps a reference to it, one integer: file number × 2³² + byte offset (pickle's
persistent ids). What a
batch writes is then its new runs, each node's newer points and the references.

Files: ``<checkpoint>/history/b<bucket>/<n>.runs``, the runs' binary records one after the
other (:meth:`~tsmon.core.sealed.Sealed.record`: no pickle per run, so loading one costs no
class lookup), ``n`` the bucket's count of committed batches, kept in its state: a replayed
batch starts from the same state and writes the same files with the same bytes (a node's step
is deterministic), written atomically (temporary file, then rename). A file no node refers to
after a batch is deleted at the bucket's next batch, when the state that still named it can no
longer be replayed. The checkpoint must be on a file system every executor reads and writes at
the same path, as Spark's own state files need on a cluster.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tsmon.core.sealed import Sealed, read_record

__all__ = ["Blobs", "BucketState", "History"]

PROTOCOL = pickle.HIGHEST_PROTOCOL

_OFFSET_BITS = 32
"""A reference is ``number << 32 | offset``: a file of one bucket and batch stays below 4 GB."""


class BucketState:
    """What Spark stores for one bucket: each source's pickled node, the history files each
    node refers to, the files to delete, and the number of batches committed."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.refs: dict[str, frozenset[int]] = {}
        self.garbage: list[int] = []
        self.batches = 0

    @classmethod
    def loads(cls, blob: bytes) -> BucketState:
        return pickle.loads(blob)

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=PROTOCOL)


class Blobs:
    """Nodes pickled whole (no history files): the host's codec when it has no directory."""

    def loads(self, blob: bytes) -> Any:
        return pickle.loads(blob)

    def dumps(self, source: str, node: Any) -> bytes:
        return pickle.dumps(node, protocol=PROTOCOL)

    def commit(self, state: BucketState) -> None:
        """Count the batch (nothing to write)."""
        state.batches += 1


class History(Blobs):
    """Nodes pickled with their sealed runs stored in this bucket's history files."""

    def __init__(self, root: Path, bucket: int, state: BucketState) -> None:
        self.directory = root / f"b{bucket}"
        self.number = state.batches  # this batch's file
        self.known: dict[int, tuple[Sealed, int]] = {}  # id(run) -> (run, its reference)
        self.files: dict[int, bytes] = {}
        self.new = io.BytesIO()  # this batch's file
        self.refs: dict[str, set[int]] = {}  # files of the nodes pickled in this batch

    def _path(self, number: int) -> Path:
        return self.directory / f"{number}.runs"

    def loads(self, blob: bytes) -> Any:
        unpickler = pickle.Unpickler(io.BytesIO(blob))
        unpickler.persistent_load = self._load  # type: ignore[method-assign]
        return unpickler.load()

    def _load(self, ref: int) -> Sealed:
        number, offset = ref >> _OFFSET_BITS, ref & ((1 << _OFFSET_BITS) - 1)
        data = self.files.get(number)
        if data is None:
            path = self._path(number)
            try:
                data = self.files[number] = path.read_bytes()
            except FileNotFoundError:
                raise RuntimeError(
                    f"the register history file {path} is missing: the checkpoint must be on a "
                    "file system every executor reads at the same path, and files under "
                    "history/ must not be removed"
                ) from None
        run = read_record(data, offset)
        self.known[id(run)] = (run, ref)
        return run

    def dumps(self, source: str, node: Any) -> bytes:
        out = io.BytesIO()
        pickler = pickle.Pickler(out, protocol=PROTOCOL)
        refs = self.refs[source] = set()

        def persistent_id(obj: object) -> int | None:
            if type(obj) is not Sealed:
                return None
            known = self.known.get(id(obj))
            if known is None:
                ref = self.number << _OFFSET_BITS | self.new.tell()
                known = self.known[id(obj)] = (obj, ref)
                self.new.write(obj.record())
            refs.add(known[1] >> _OFFSET_BITS)
            return known[1]

        pickler.persistent_id = persistent_id  # type: ignore[method-assign]
        pickler.dump(node)
        return out.getvalue()

    def commit(self, state: BucketState) -> None:
        """Delete the files the last committed state no longer referred to, write this
        batch's file, note each pickled node's files and the files no node refers to any
        more (deleted at the bucket's next batch: until this one commits, a replay needs them)."""
        for number in state.garbage:
            self._path(number).unlink(missing_ok=True)
        if self.new.tell():
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self._path(self.number)
            partial = path.with_name(f".{path.name}.{os.getpid()}")
            partial.write_bytes(self.new.getvalue())
            os.replace(partial, path)
        before = _union(state.refs.values())
        state.refs.update({source: frozenset(refs) for source, refs in self.refs.items()})
        state.garbage = sorted(before - _union(state.refs.values()))
        state.batches += 1


def _union(sets: Iterable[frozenset[int]]) -> set[int]:
    return set().union(*sets)
