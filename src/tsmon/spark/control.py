"""The control channel: coordinator (driver) to source nodes (executors), one batch late.

Why files: in ``foreachBatch`` the coordinator cannot push into the running stateful operator,
so it writes ``ctrl-<batchId>.json`` into a directory that the same query reads as a second
file stream. Control written in batch N is therefore applied in batch N+1 (or later).

Each file is JSON lines with columns ``source`` (string), ``seq`` (long) and ``payload`` (a
JSON document stored as a string, so the stream schema never changes). ``seq`` is
``batch_id * SEQ_STRIDE + i``: it orders control across files, so a micro-batch that picks up
several files (e.g. after a restart) still applies them in the order they were written.

Spark deletes a control file once the batch that read it is committed (the file source's
``cleanSource = "delete"``): a replay never needs it again (a replayed batch ``N`` is not
committed, so batch ``N + 1``, which reads ``ctrl-N``, has not run), so the directory holds
the control of the last batch or two, not one file per batch of the job's life.

Files are written under a hidden temp name (the file source skips names starting with ``.``)
and renamed with :func:`os.replace`, so the stream never sees a partial file. Rewriting a
batch (a replay after a failure) with the same content is a no-op; with different content it
is an error, because the nodes may already have applied the first version.

**Wake files.** Spark runs a micro-batch only when a source has new input, and commands
(:mod:`tsmon.spark.commands`) are taken by the driver at the start of a batch: on a job whose
input is idle a command would wait for the next input file. So submitting a command also drops
an empty ``wake-<command id>.json`` here (:func:`wake`): a new file of the control stream, so
the next trigger runs a batch (with no rows from it) that takes the command; the control that
batch writes makes the next one, which brings the change to the nodes. Wake files are deleted
like control files once their batch is committed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tsmon.spark.files import atomic_write

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CONTROL_DDL", "SEQ_STRIDE", "ControlChannel", "ControlConflictError", "wake"]

SEQ_STRIDE = 1 << 32
"""Control ``seq`` = ``batch_id * SEQ_STRIDE + index``: orders control rows across files."""

CONTROL_DDL = "source STRING, seq BIGINT, payload STRING"
"""Schema of a control file row (DDL), as the stream reader must declare it."""


class ControlConflictError(RuntimeError):
    """A replayed batch tried to write different control than the first attempt."""


class ControlChannel:
    """Write and stream control files in one directory.

    Parameters
    ----------
    directory : str or Path
        Created if missing. Only this channel should write into it.
    clean_source : str
        The stream's ``cleanSource``: ``"delete"`` (files of committed batches) or ``"off"``.

    Examples
    --------
    >>> import tempfile
    >>> ch = ControlChannel(tempfile.mkdtemp())
    >>> ch.write(3, {"s1": [{"add": 2}], "s0": []})
    True
    >>> print(ch.path(3).read_text(), end="")
    {"source": "s1", "seq": 12884901888, "payload": "{\\"add\\": 2}"}
    >>> ch.write(3, {"s1": [{"add": 2}]})  # replay of batch 3: same content, nothing to do
    False
    >>> ch.write(4, {})  # no control: no file
    False
    >>> [p.name for p in ch.files()]
    ['ctrl-3.json']
    """

    def __init__(self, directory: str | os.PathLike[str], clean_source: str = "delete") -> None:
        self.directory = Path(directory)
        self.clean_source = clean_source  # the file source's cleanSource ("off": keep files)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, batch_id: int) -> Path:
        """Where the control written by batch ``batch_id`` lives."""
        return self.directory / f"ctrl-{batch_id}.json"

    def files(self) -> list[Path]:
        """Control files written so far, in batch order."""
        found = self.directory.glob("ctrl-*.json")
        return sorted(found, key=lambda p: int(p.stem.split("-", 1)[1]))

    @staticmethod
    def encode(batch_id: int, rows_by_source: Mapping[str, Sequence[Any]]) -> str:
        """The file content for one batch: JSON lines, sources sorted, ``seq`` per file order."""
        if batch_id < 0:
            raise ValueError(f"batch_id must be >= 0, got {batch_id}")
        lines = []
        index = 0
        for source in sorted(rows_by_source):
            for payload in rows_by_source[source]:
                row = {
                    "source": source,
                    "seq": batch_id * SEQ_STRIDE + index,
                    "payload": json.dumps(payload, sort_keys=True),
                }
                lines.append(json.dumps(row) + "\n")
                index += 1
        if index >= SEQ_STRIDE:
            raise ValueError(f"batch {batch_id} has {index} control rows, at most {SEQ_STRIDE}")
        return "".join(lines)

    def write(self, batch_id: int, rows_by_source: Mapping[str, Sequence[Any]]) -> bool:
        """Write the control of batch ``batch_id`` atomically; True if a file was written.

        ``rows_by_source`` maps a source to the JSON-able payloads it must apply, in order.
        No payloads at all means no file. Idempotent for a replayed batch with the same
        content; raises :class:`ControlConflictError` if the content differs.
        """
        content = self.encode(batch_id, rows_by_source)
        if not content:
            return False
        target = self.path(batch_id)
        if target.exists():
            previous = target.read_text(encoding="utf-8")
            if previous == content:
                return False
            raise ControlConflictError(
                f"{target} already holds different control for batch {batch_id}; the "
                "coordinator must be deterministic for a replayed batch (same messages in, "
                "same control out)"
            )
        atomic_write(target, content)
        return True

    def read_stream(
        self, spark: SparkSession, max_files_per_trigger: int | None = None
    ) -> DataFrame:
        """The control files as a streaming DataFrame with schema :data:`CONTROL_DDL`.

        Leave ``max_files_per_trigger`` unset so that one micro-batch applies all pending
        control (order is kept by ``seq``). Files of committed batches are deleted (see the
        module's notes) unless the channel was made with ``clean_source="off"``.
        """
        reader = spark.readStream.schema(CONTROL_DDL).option("cleanSource", self.clean_source)
        if max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
        return reader.json(str(self.directory))


def wake(directory: str | os.PathLike[str], name: str) -> bool:
    """Make the job whose control channel is ``directory`` run a batch at its next trigger,
    even with no input (an empty ``wake-<name>.json``, see the module's notes); False, and
    nothing written, when the directory does not exist (the job has not started: its first
    batch comes anyway).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> wake(d, "cmd-1"), [p.name for p in d.iterdir()], wake(d / "nope", "cmd-1")
    (True, ['wake-cmd-1.json'], False)
    """
    directory = Path(directory)
    if not directory.is_dir():
        return False
    atomic_write(directory / f"wake-{name}.json", b"")
    return True
