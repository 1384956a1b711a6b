"""Standing aggregates hosted apart: stream models at the sources, queries in partitions.

A million standing queries (Zhu & Ravishankar 2004, :mod:`tsmon.protocols.deferral`) do not
fit one coordinator loop. The batch-synchronous runtimes (Spark,
:class:`~tsmon.engine.batched.BatchedRuntime` as its in-process reference, and the batch host
of a :class:`~tsmon.engine.monitor.Monitor`) split the work:

1. **Source nodes** keep the :class:`~tsmon.protocols.deferral.model.StreamModels` of the
   series standing queries read (:class:`StandingSource`): they observe the in-order points,
   re-estimate ``μ, σ`` on Algorithm 2's schedule at the node's time, and send per batch one
   ``streams`` row with the state of each stream that changed (value, last timestamp, ``μ``,
   ``σ``, mean period). The ``k`` items behind each estimate never leave the node.
2. **The coordinator** (:class:`StandingCoordinator`) merges them into one stream table,
   detects interrupted streams at the job's time — the newest time any source reported, so a
   silent source's streams fall silent (§4.5) — forms the tick's snapshot (``Ŝ_i``, Eq. 13)
   and sends it, with the queries' adds and removes, to every query partition through the
   control channel.
3. **Query partitions** (:class:`StandingPartition`, keys :data:`PARTITION_PREFIX` ``+ i``,
   hosted like source nodes, so Spark spreads them over executors) each hold the queries whose
   name hashes to them (CRC-32 of the lower-case name) in a
   :class:`~tsmon.protocols.deferral.partition.QueryPartition`, and evaluate the due ones
   vectorised on the snapshot. Their answers reach the coordinator with the next batch's rows.

Choices the paper leaves open
    * **Ticks.** One tick per batch in which the job's time moved on, at that time.
      ``tick_ms`` is the event time a batch is expected to span: a query due before the next
      tick is evaluated at this one (early, which only tightens its error); when batches
      are further apart than ``tick_ms``, deadlines between them are served late and counted
      as missed, which says the batches are too coarse for the query's ``ε``. A jump in event
      time is one tick (``O(1)``, not one per elapsed ``tick_ms``).
    * **In a Monitor** (the batch host with an instant transport,
      :class:`~tsmon.engine.embedded.InstantHost`; ``standing_tick`` is ``tick_ms``): while
      standing queries run, the points one ``ingest`` accepted are cut at tick boundaries,
      each group of points in one interval ``(b − tick, b]`` one batch, followed by its round
      trips (the snapshot to the query partition, the answers back) before the next group.
      An interval without points is not stepped. So an ingest spanning many ticks (a whole
      CSV) still ticks in each interval, and when ``ingest`` returns the answers are as of its
      last group. An answer is stamped with its batch's time: the job's newest point then,
      which may be before the boundary ``b``. An ingest that ends mid-interval ticks there,
      and the next one ticks again in the same interval; an ingest that ends mid-instant
      leaves the instant's later points to the next tick. A Monitor has one query partition.
    * **Series** must be named, or globs expand over the series the coordinator knows when
      the query is added (a Monitor's series). Each series must come from one source.
    * **Points** reach the models in order: a point not newer than its stream's last item is
      left out of the model (counted as ``skipped``); late points go to a Monitor's registers
      and watch queries but not to the models, which assume in-order delivery. Stream
      parameters are estimated from each series' own timestamps (irregular sampling included).
    * **AVG** divides by the number of distinct series. ``MAX|MIN OVER <duration>`` is the
      sliding-window extremum of Theorem 1; a count window (``OVER 100 points``) is refused
      (the model is in time). ``SINCE START`` is a landmark at the query's first tick.
    * ``ALTER QUERY q WITHIN w`` registers the query again with the new tolerance (the
      stream models are kept, so nothing is re-learned).
    * **Drift test** (not in the paper): a stream's estimated drift is used only when it is
      significant, ``|μ̂| ≥ 2 σ̂/√span``
      (:data:`~tsmon.engine.standing_settings.DEFAULT_DRIFT_Z`). With ``k = 100`` items the
      paper's plain ``μ̂`` is noisy, and any nonzero drift shortens Eq. 7's interval, so
      fidelity lands 2-5 points above ``p`` on driftless walks; with the test it lands within
      half a point (``benchmarks/deferral/README.md``). ``drift_test = false``: the paper's rule.
    * **Caps in sampling intervals.** ``Δt`` is capped at ``max_dt`` (100) sampling intervals
      of a query's fastest series and Algorithm 2's ``t_max`` at ``reestimate`` (100) sampling
      intervals of each series, so both follow the data whatever the tick; either may be a
      duration instead. An interruption is flagged at the tick it is detected (a series silent
      for more than ``interrupt_after`` sampling intervals). All settings:
      :data:`~tsmon.engine.standing_settings.SETTINGS_KEYS` (a Monitor's ``standing=`` option
      and a job file's ``[standing]`` section).
    * **Latency.** Control written after batch ``N`` is applied in batch ``N+1``: a source
      tracks a newly named series from then, and a tick of batch ``N``'s snapshot is evaluated
      in batch ``N+1``; its answer is stamped with batch ``N``'s time (in a Monitor, batch
      ``N+1`` is the round trip that follows ``N`` at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tsmon.core.timestamps import format_instant_and_ms, format_instant_ms
from tsmon.core.units import format_value
from tsmon.kinds.base import Part, QueryKind
from tsmon.kinds.standing.coordinator import StandingPart
from tsmon.kinds.standing.node import StandingNode
from tsmon.kinds.standing.partition import PARTITION_PREFIX, StandingPartition
from tsmon.kinds.standing.statements import StandingAnswer, check_window, series_weights
from tsmon.query import StandingDef, format_percent, format_terms
from tsmon.query.patterns import is_glob

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode

__all__ = ["KIND", "PART", "StandingNode", "StandingPart"]


def _add(hub: CoordinatorNode, statement: StandingDef, source_of: Any) -> str:
    """Start a standing query at its query partition; globs expand over the known series."""
    hub.free(statement.name)
    hub.part("standing").standing.add(statement, hub.known_series())
    within = f"{100 * statement.eps:g}%" if statement.relative else f"{statement.eps:g}"
    return (
        f"added standing query {statement.name!r} within {within} at confidence "
        f"{statement.confidence:g}"
    )


def _describe(statement: StandingDef) -> tuple[str, str, str]:
    of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
    window = "-"
    if statement.extremum is not None:
        if statement.window is not None:
            window = str(statement.window)
        elif statement.landmark_ms is not None:
            window = f"since {format_instant_ms(statement.landmark_ms)}"
        else:
            window = "since START"
        of = f"{statement.extremum.upper()} OF {of}"
    eps = f"{format_percent(statement.eps)}%" if statement.relative else f"{statement.eps:g}"
    return of, window, f"WITHIN {eps} CONFIDENCE {statement.confidence:g}"


def _job_check(statement: StandingDef) -> None:
    check_window(statement)
    series_weights(statement, [])  # a glob matches no series before the job runs


def _line(a: StandingAnswer) -> str:
    """``12.5 ±0.5 at 1970-01-01T00:00:01Z (1000 ms), next 1970-01-01T00:00:01.800Z (1800
    ms)`` (and the interruption error if any)."""
    line = (
        f"{format_value(a.value)} ±{format_value(a.eps)} at {format_instant_and_ms(a.ts_ms)}, "
        f"next {format_instant_and_ms(a.next_due_ms)}"
    )
    return f"{line} (interrupted: ±{format_value(a.eps_intr)})" if a.interrupted else line


def _band(a: StandingAnswer) -> tuple[float, float, float]:
    """The value ± its bound (the interruption's expected error when interrupted)."""
    eps = a.eps_intr if a.interrupted else a.eps
    return a.value, a.value - eps, a.value + eps


PART = Part(
    "standing",
    node=StandingNode,
    coordinator=StandingPart,
    sink="standing",
    title="standing queries (deferred)",
    line=_line,
    tracks=lambda statements: list(
        dict.fromkeys(t.series for s in statements for t in s.terms if not is_glob(t.series))
    ),
    reserved_prefix=PARTITION_PREFIX,
    reserved_node=lambda settings, key: StandingPartition(key, settings.standing),
    band=_band,
)
KIND = QueryKind(
    "standing", "standing", (StandingDef,), add=_add, describe=_describe, job_check=_job_check
)
