"""The driver side of a job: its queries parsed and checked once (:class:`JobQueries`), and
the coordinator stepped per batch and snapshotted to disk (:class:`Coordinator`)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from tsmon.engine.guard import Quarantine, coordinator_step
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.settings import HostSettings
from tsmon.kinds import JobStatements, kind_of
from tsmon.query import parse_queries
from tsmon.query.patterns import is_glob, series_matches
from tsmon.spark.files import atomic_write
from tsmon.spark.job import Job, JobError

__all__ = [
    "Coordinator",
    "JobQueries",
    "known_sources",
    "latest_answers",
    "latest_snapshot",
    "running_queries",
]


@dataclass(frozen=True)
class JobQueries:
    """A job's queries, parsed and checked once, split by where they start
    (:class:`~tsmon.kinds.JobStatements`)."""

    statements: JobStatements

    @classmethod
    def of(cls, job: Job) -> JobQueries:
        """Parse and check ``job``'s queries (a :class:`JobError` for one that a running job
        cannot register, or that cannot be evaluated, e.g. weights summing to 0)."""
        statements = []
        for s in parse_queries(job.queries):
            try:
                kind = kind_of(s)
                if not kind.defines(s):
                    raise ValueError(
                        f"line {s.line}: {type(s).__name__} statements do not run in a Spark "
                        "job; give them to a Monitor (tsmon watch) or submit them as commands"
                    )
                for check in (kind.check, kind.job_check):
                    if check is not None:
                        check(s)
            except ValueError as e:  # QuerySyntaxError is one
                raise JobError(str(e)) from None
            statements.append(s)
        return cls(JobStatements.of(statements))

    def settings(self, job: Job) -> HostSettings:
        """The settings every node and the coordinator of ``job`` start with."""
        f = job.filters
        return HostSettings(
            f.period_ms,
            f.shrink,
            seed=0,
            growth=f.growth,
            registers=job.registers,
            standing=job.standing,
            replica_phase_ms=job.replica_phase_ms,
            queries=dict(self.statements.node_text),
            tracked=self.statements.tracked,
            max_future_ms=job.max_future_ms,
            idle_timeout_ms=job.idle_timeout_ms,
            backlog=f.backlog,
        )

    def register(self, node: CoordinatorNode, job: Job) -> None:
        """Register the queries that start at the coordinator (bounded aggregates, standing
        queries) at a fresh one."""
        for statement in self.statements.registered:
            node.add(statement, partial(known_sources, job))


class Coordinator:
    """The driver side: one :class:`CoordinatorNode` stepped per batch, snapshotted to disk.

    Every batch starts from the snapshot of the previous one (kept in memory, else read from
    ``coordinator/coord-<N−1>.pkl``), so a batch that fails half-way, or is replayed after a
    crash, starts again from the same state.
    """

    def __init__(self, job: Job, queries: JobQueries) -> None:
        self.job = job
        self.queries = queries
        self.directory = job.checkpoint / "coordinator"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._last: tuple[int, bytes] | None = None  # (batch id, snapshot) of the last step

    def _fresh(self) -> CoordinatorNode:
        node = CoordinatorNode(self.queries.settings(self.job))
        self.queries.register(node, self.job)
        return node

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"coord-{batch_id:09d}.pkl"

    def node_for(self, batch_id: int) -> CoordinatorNode:
        """A new copy of the coordinator as of the end of batch ``batch_id − 1``."""
        if self._last is not None and self._last[0] == batch_id - 1:
            return pickle.loads(self._last[1])
        previous = self._path(batch_id - 1)
        if previous.exists():
            return pickle.loads(previous.read_bytes())
        if any(self.directory.glob("coord-*.pkl")) and batch_id > 0:
            raise RuntimeError(
                f"no coordinator snapshot for batch {batch_id - 1} in {self.directory}; the "
                "checkpoint is incomplete — start the job from a fresh checkpoint directory"
            )
        return self._fresh()

    def step(
        self, batch_id: int, rows: list[dict], prepare: Callable[[CoordinatorNode], Any]
    ) -> tuple[CoordinatorNode, dict, Any, Quarantine]:
        """Run ``prepare(node)`` (live query commands), then step on batch ``batch_id``'s node
        outputs; returns the node, the control rows, what ``prepare`` returned and what the
        step quarantined (:func:`tsmon.engine.guard.coordinator_step`)."""
        node = self.node_for(batch_id)
        prepared = prepare(node)
        node, control, quarantine = coordinator_step(node, batch_id, rows)
        snapshot = node.snapshot()
        atomic_write(self._path(batch_id), snapshot)
        for old in sorted(self.directory.glob("coord-*.pkl"))[:-2]:
            old.unlink()  # keep the last two snapshots
        self._last = (batch_id, snapshot)
        return node, control, prepared, quarantine


def latest_snapshot(checkpoint: Path) -> tuple[int, CoordinatorNode] | None:
    """The batch and coordinator of the newest snapshot in a job's checkpoint, if any."""
    snapshots = sorted((checkpoint / "coordinator").glob("coord-*.pkl"))
    if not snapshots:
        return None
    return int(snapshots[-1].stem.split("-")[1]), pickle.loads(snapshots[-1].read_bytes())


def running_queries(node: CoordinatorNode) -> dict[str, list[str]]:
    """The queries of coordinator ``node`` by part, parts with none left out (a batch's
    progress ``queries``, ``GET /queries``)."""
    return {name: p.names() for name, p in node.parts.items() if p.names()}


def latest_answers(node: CoordinatorNode) -> dict[str, Mapping[str, Any]]:
    """Every query's newest answer of coordinator ``node``, by part (a batch's answers to its
    sinks; ``GET /answers`` before a restarted job's first batch)."""
    return {name: part.answers() for name, part in node.parts.items()}


def known_sources(job: Job, objects: list[str]) -> dict[str, str]:
    """Where the job says each series lives, as rows will show it: by its ``[sources]`` glob;
    else, without a source column, the series itself. With a source column the rows decide,
    so such series are left out (the coordinator learns them from the rows)."""
    out = {}
    for obj in objects:
        literal = job.sources.get(obj) if not is_glob(obj) else None  # literal names first,
        globs = (s for g, s in job.sources.items() if is_glob(g) and series_matches(obj, [g]))
        source = literal if literal is not None else next(globs, None)  # as in _source_expr
        if source is None and "source" not in job.input.columns:
            source = obj
        if source is not None:
            out[obj] = source
    return out
