"""Live query management of a running job: command files in, applied once per batch.

``tsmon query add|alter|remove --job DIR`` never talks to the job; it drops a *command file*
into ``DIR/commands/`` (``DIR`` is the job's checkpoint directory)::

    DIR/commands/cmd-<UTC time, ns>-<pid>-<counter>.json   {"id", "op", "text"}
                 e.g. cmd-20250102T030405.123456789Z-0004711-000000.json
    DIR/commands/applied/batch-<N>.json                     the commands batch N applies
    DIR/commands/applied/outcomes-<N>.json                  what became of each of them

Files are written under a hidden temp name and renamed with :func:`os.replace`, so a reader
never sees half a file; names sort in submission order. Submitting also wakes the job
(:func:`tsmon.spark.control.wake`), so a job with no new input runs a batch for the command at
its next trigger. At the start of batch ``N`` the driver
calls :meth:`CommandLog.take`, applies the result to its coordinator with :func:`apply` and
keeps the outcomes with :meth:`CommandLog.record`. ``take`` is idempotent: the first call for
batch ``N`` records the pending commands in ``applied/batch-<N>.json``; a replay of batch ``N``
(after a crash, from the snapshot of batch ``N − 1``) gets exactly the recorded commands, even
if new files arrived since, so the replay gives the same coordinator state and control. A
command is taken by one batch only.

A bad command never stops the job: :func:`apply` rejects it with the reason, and ``tsmon query
list`` shows it as rejected.

**Supported:** ``add`` of bounded aggregates (``QUERY q AS SUM(a.x, b.x) WITHIN 0.5``;
globs cover the matching series as the rows show them, see
:meth:`~tsmon.kinds.bounded.BoundedCoordinator.add_glob_query`) and of watch queries (``QUERY q
ON host*.cpu WHEN ...``, sent to every source node, whose windows are first filled from the
node's stored history); ``alter`` (``ALTER QUERY q WITHIN 0.1 [IMMEDIATELY]``, or a watch
query redefined in place); ``remove`` by name. Standing (``... CONFIDENCE p``), top-k and
summary queries are added the same way.

``replica`` carries a summary reader's request (:class:`tsmon.spark.readers.JobReader`, JSON
text): the coordinator sends it to the source node of its series (SWAT-ASR, §3 of Bulut &
Singh); readers submit these themselves.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tsmon.engine.hub import CoordinatorNode
from tsmon.kinds import alter_kind, kind_of
from tsmon.query import QuerySyntaxError, parse_queries
from tsmon.spark.control import wake
from tsmon.spark.files import atomic_write

__all__ = ["OPS", "Command", "CommandError", "CommandLog", "apply", "check", "job_directory"]

#: The operations a command can ask for.
OPS = ("add", "alter", "remove", "replica")

#: ``source_of(series) -> {series: source}``: where the series of a new query come from.
SourceOf = Callable[[list[str]], Mapping[str, str]]

_COMMAND = re.compile(r"cmd-\d{8}T\d{6}\.\d{9}Z-\d+-\d+\.json")
_RECORD = re.compile(r"batch-(\d+)\.json")
_counter = itertools.count()
_last_ns = 0


class CommandError(ValueError):
    """A command that cannot be submitted or applied, or a directory that is no job."""


@dataclass(frozen=True)
class Command:
    """One submitted command: ``op`` is one of :data:`OPS`, ``text`` a statement or a name.

    ``problem`` is set when the command file could not be read; :func:`apply` rejects such a
    command with it.
    """

    id: str
    op: str
    text: str
    problem: str = ""

    def to_dict(self) -> dict[str, str]:
        """The JSON content of the command's file."""
        out = {"id": self.id, "op": self.op, "text": self.text}
        if self.problem:
            out["problem"] = self.problem
        return out

    @classmethod
    def from_dict(cls, data: Any, command_id: str = "") -> Command:
        """A command from its JSON content (a bad one becomes a command with a ``problem``)."""
        if not isinstance(data, Mapping):
            return cls(command_id, "?", "", f"command is not a JSON object: {data!r}")
        op, text = data.get("op", "?"), data.get("text", "")
        problem = str(data.get("problem", ""))
        if not (isinstance(op, str) and isinstance(text, str)):
            problem = problem or f"op and text must be strings, got {op!r}, {text!r}"
            op, text = str(op), str(text)
        return cls(command_id or str(data.get("id", "")), op, text, problem)


def job_directory(path: str | os.PathLike[str]) -> Path:
    """``path`` if it is a job's checkpoint directory (has ``coordinator/`` or ``control/``),
    or the checkpoint of ``path`` if it is a job file (as ``tsmon show --job`` takes one).

    Raises :class:`CommandError` saying what to pass instead.
    """
    directory = Path(path)
    if directory.is_file():
        from tsmon.spark.job import load_job

        directory = load_job(directory).checkpoint
    fix = "pass the job's checkpoint directory ([job] checkpoint in its job file) or job file"
    if not directory.is_dir():
        raise CommandError(f"--job {directory}: no such directory; {fix}")
    if not ((directory / "coordinator").is_dir() or (directory / "control").is_dir()):
        raise CommandError(
            f"--job {directory} is not a job checkpoint (no coordinator/ or control/ in it); "
            f"{fix}, after the job has started once"
        )
    return directory


def check(op: str, text: str) -> Any:
    """The statement (``add``, ``alter``) or query name (``remove``) of a command.

    Checks what can be checked without the job: the syntax (a :class:`QuerySyntaxError` with
    line and column), one statement of the right kind, a watch query that compiles. Anything else
    raises :class:`CommandError`.

    Examples
    --------
    >>> check("add", "QUERY d AS SUM(a.x, b.x) WITHIN 0.5").weights
    {'a.x': 1.0, 'b.x': 1.0}
    >>> check("remove", " d ")
    'd'
    >>> check("alter", "QUERY d AS SUM(host*.cpu) WITHIN 1")
    Traceback (most recent call last):
    ...
    tsmon.spark.commands.CommandError: alter takes ALTER QUERY name WITHIN δ [IMMEDIATELY],
        ALTER QUERY name TOP|BOTTOM k [WITHIN ε] or a watch query (QUERY name ON ...), got a
        bounded query definition; to define a query use add
    """
    if op not in OPS:
        raise CommandError(f"unknown op {op!r}; use one of {', '.join(OPS)}")
    if op == "replica":
        return _replica_request(text)
    if op == "remove":
        name = text.strip()
        if not name or any(ch.isspace() for ch in name):
            raise CommandError(f"remove takes a query name, got {text!r}; e.g. 'diff'")
        return name
    statements = parse_queries(text)
    if len(statements) != 1:
        raise CommandError(
            f"{op} takes exactly one statement, got {len(statements)}; submit one per command"
        )
    statement = statements[0]
    if op == "alter":
        try:
            kind = alter_kind(statement)
        except ValueError:
            raise CommandError(
                f"alter takes ALTER QUERY name WITHIN δ [IMMEDIATELY], ALTER QUERY name "
                f"TOP|BOTTOM k [WITHIN ε] or a watch query (QUERY name ON ...), got a "
                f"{kind_of(statement).name} query definition; to define a query use add"
            ) from None
    else:
        kind = kind_of(statement)
        if not kind.defines(statement):
            raise CommandError(
                "add takes a query definition (QUERY name AS ... or QUERY name ON ...); "
                f"got {type(statement).__name__}: to change a query use alter"
            )
    if kind.check is not None:
        kind.check(statement)
    return statement


def _replica_request(text: str) -> dict[str, Any]:
    """A reader's request: a JSON object naming its ``reader`` and ``series``."""
    try:
        request = json.loads(text)
    except ValueError as e:
        raise CommandError(f"replica takes a reader's request as JSON: {e}") from None
    if not (
        isinstance(request, dict)
        and isinstance(request.get("reader"), str)
        and isinstance(request.get("series"), str)
    ):
        raise CommandError(f"a replica request names its reader and series, got {text!r}")
    return request


class CommandLog:
    """The command files of one job checkpoint directory.

    Parameters
    ----------
    directory : str or Path
        The job's checkpoint directory; commands live in ``directory/commands``, created on
        the first write (listing never creates anything).

    Examples
    --------
    >>> import tempfile
    >>> log = CommandLog(tempfile.mkdtemp())
    >>> first = log.submit("add", "QUERY d AS SUM(a.x, b.x) WITHIN 0.5")
    >>> [c.op for c in log.take(0)]
    ['add']
    >>> second = log.submit("remove", "d")
    >>> [c.id for c in log.take(0)] == [first]  # batch 0 replayed: the same commands
    True
    >>> [c.id for c in log.take(1)] == [second], log.take(2)
    (True, [])
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory) / "commands"
        self.applied_dir = self.directory / "applied"
        self.control_dir = Path(directory) / "control"  # the job's control channel

    # -- the CLI side ---------------------------------------------------------------------------
    def submit(self, op: str, text: str) -> str:
        """Check the command (:func:`check`, nothing written if bad), write it; return its id."""
        check(op, text)
        global _last_ns
        ns = max(time.time_ns(), _last_ns)  # names sort in submission order within a process
        _last_ns = ns
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"
        command_id = f"cmd-{stamp}-{os.getpid():07d}-{next(_counter):06d}"
        command = Command(command_id, op, text.strip())
        _atomic_json(self.directory / f"{command_id}.json", command.to_dict())
        wake(self.control_dir, command_id)  # a batch at the next trigger, input or not
        return command_id

    def commands(self) -> list[Command]:
        """Every submitted command whose file is still there, in submission order."""
        if not self.directory.is_dir():
            return []
        out = []
        for path in sorted(p for p in self.directory.iterdir() if _COMMAND.fullmatch(p.name)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                out.append(Command(path.stem, "?", "", f"unreadable command file: {e}"))
                continue
            out.append(Command.from_dict(data, command_id=path.stem))
        return out

    def pending(self) -> list[Command]:
        """Submitted commands that no batch has taken yet, in submission order."""
        taken = {c.id for _, c in self.applied()}
        return [c for c in self.commands() if c.id not in taken]

    def applied(self) -> list[tuple[int, Command]]:
        """``(batch, command)`` for every command taken by a batch, in batch then take order."""
        return [(b, c) for b, cs in sorted(self._records().items()) for c in cs]

    def outcomes(self) -> dict[str, dict[str, Any]]:
        """The recorded outcome of each applied command, by command id."""
        out: dict[str, dict[str, Any]] = {}
        if not self.applied_dir.is_dir():
            return out
        for path in self.applied_dir.glob("outcomes-*.json"):
            for outcome in _read_json(path).get("outcomes", []):
                out[str(outcome.get("id"))] = outcome
        return out

    def states(self) -> list[dict[str, Any]]:
        """What ``tsmon query list`` shows: every command with its ``state``, in submission
        order: ``pending``, ``applied`` or ``rejected`` (with ``batch`` and ``detail``), or
        ``taken`` (by a batch that has not recorded its outcome yet)."""
        batch_of = {c.id: (b, c) for b, c in self.applied()}
        outcomes = self.outcomes()
        rows = []
        seen = set()
        for command in self.commands() + [c for _, c in self.applied()]:
            if command.id in seen:
                continue
            seen.add(command.id)
            batch, taken = batch_of.get(command.id, (None, command))
            outcome = outcomes.get(command.id)
            if batch is None:
                state, detail = "pending", ""
            elif outcome is None:
                state, detail = "taken", ""
            else:
                state = "applied" if outcome.get("ok") else "rejected"
                detail = str(outcome.get("detail", ""))
            rows.append({**taken.to_dict(), "state": state, "batch": batch, "detail": detail})
        return sorted(rows, key=lambda r: r["id"])

    # -- the driver side -----------------------------------------------------------------------
    def take(self, batch_id: int) -> list[Command]:
        """The commands batch ``batch_id`` applies: recorded the first time, the same after.

        The first call for a batch takes every pending command and records them (also none)
        in ``applied/batch-<N>.json``; later calls return the record. A batch older than the
        newest recorded one with no record (an empty record pruned) takes nothing.
        """
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise ValueError(f"batch_id must be an int >= 0, got {batch_id!r}")
        records = self._records()
        if batch_id in records:
            return records[batch_id]
        if records and batch_id < max(records):
            return []  # an empty batch: its record was pruned
        taken = {c.id for cs in records.values() for c in cs}
        commands = [c for c in self.commands() if c.id not in taken]
        record = {"batch": batch_id, "commands": [c.to_dict() for c in commands]}
        _atomic_json(self._record_path(batch_id), record)
        for old, cs in records.items():  # keep empty records of the last two batches only
            if not cs and old < batch_id - 1:
                self._record_path(old).unlink(missing_ok=True)
        return commands

    def record(self, batch_id: int, outcomes: Iterable[Mapping[str, Any]]) -> None:
        """Keep the outcomes of batch ``batch_id`` (from :func:`apply`) for ``tsmon query list``.

        Rewritten on a replay (it applies the same commands to the same state); nothing is
        written when there are none.
        """
        rows = [dict(o) for o in outcomes]
        if rows:
            path = self.applied_dir / f"outcomes-{batch_id}.json"
            _atomic_json(path, {"batch": batch_id, "outcomes": rows})

    def _record_path(self, batch_id: int) -> Path:
        return self.applied_dir / f"batch-{batch_id}.json"

    def _records(self) -> dict[int, list[Command]]:
        if not self.applied_dir.is_dir():
            return {}
        out = {}
        for path in self.applied_dir.iterdir():
            match = _RECORD.fullmatch(path.name)
            if match:
                raw = _read_json(path, pruned_ok=True).get("commands", [])
                out[int(match.group(1))] = [Command.from_dict(c) for c in raw]
        return out


def apply(
    node: CoordinatorNode, commands: Iterable[Command], source_of: SourceOf
) -> list[dict[str, Any]]:
    """Apply ``commands`` in order to ``node``; one outcome ``{"id", "op", "ok", "detail"}``
    per command.

    A command that cannot be applied (bad text, a duplicate name, an unknown query)
    changes nothing and gets ``ok: False`` with the reason. Query names are compared ignoring
    case, as in query files. ``source_of(series)`` maps the series of an added query to the
    sources the job declares; the coordinator learns the others from the rows.
    """
    out = []
    for command in commands:
        try:
            detail = _apply_one(node, command, source_of)
            ok = True
        except (ValueError, KeyError, TypeError) as e:  # QuerySyntaxError is a ValueError
            ok = False
            detail = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        out.append({"id": command.id, "op": command.op, "ok": ok, "detail": detail})
    return out


def _apply_one(node: CoordinatorNode, command: Command, source_of: SourceOf) -> str:
    if command.problem:
        raise CommandError(command.problem)
    try:
        what = check(command.op, command.text)
    except QuerySyntaxError as e:
        raise CommandError(f"not a valid statement: {e}") from None
    if command.op == "replica":
        node.part("replica").request(what)
        return f"reader {what['reader']!r}: request sent to the source of {what['series']!r}"
    if command.op == "remove":
        name = node.registered_name(what)
        node.remove_query(name)
        return f"removed {name!r}"
    if command.op == "alter":
        return node.alter(what)
    return node.add(what, source_of)


def _atomic_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically (:func:`tsmon.spark.files.atomic_write`)."""
    atomic_write(path, json.dumps(data, sort_keys=True, ensure_ascii=False))


def _read_json(path: Path, pruned_ok: bool = False) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        if pruned_ok and isinstance(e, FileNotFoundError):
            return {}  # an empty record a batch pruned since the caller listed it
        detail = f"{path}: unreadable command record ({e}); restore or delete it"
        raise CommandError(detail) from None
    if not isinstance(data, dict):
        raise CommandError(f"{path}: a command record must be a JSON object; restore or delete it")
    return data
