"""Bounded aggregates (``QUERY q AS SUM|AVG|MIN|MAX(...) WITHIN δ``): adaptive filters at the
source nodes, the filter coordinator at the driver (Olston, Jiang & Widom, SIGMOD 2003).

Time (the choice, since the paper assumes a coordinator clock): the coordinator's time after
batch ``N`` is ``min over known sources of now_ms, minus the lag``, never going back; the lag is
``HostSettings.bounded_lag_ms``. A source's ``now_ms`` is the newest timestamp it has processed;
it has then sent every update stamped before ``now_ms`` (it ran every period boundary up to
``now_ms`` for all its filters), but a later batch may still hold points stamped exactly
``now_ms`` (a batch can end between two points of one instant), hence a lag of 1 ms in the batch
runtimes and on Spark. The updates of the batch go into the coordinator's
serializing queue (§4, latency ``λ = 0``), which releases them in timestamp order up to that
time, interleaved with the period boundaries; so answers are exact *as of* the coordinator's
time, and the coordinator never shrinks past a boundary a source has not reached. Width
messages are stamped with that time (or a boundary before it), which every source has passed:
a source applies them late, replaying the period shrinks since their stamp (§3.1), so both
sides hold the same width to the bit. Meanwhile a grown bound is narrower at the source than
the coordinator assumes, and a shrink is assumed only once the source confirms it (§3.4, §4):
the coordinator's view is never narrower than the source's.

The embedded Monitor's host (an instant transport: one ``ingest`` is one batch, stepped until no
control is left, :mod:`tsmon.engine.embedded`) runs at lag 0: an answer after ``ingest`` is as
of the newest point and includes the points just ingested; a later ``ingest``'s point stamped at
that same time reaches the coordinator at its time and is applied there (late, §4: the answer
then is as of that time, with the newer value). Its answers equal those of
:class:`~tsmon.engine.batched.BatchedRuntime` at lag 0 fed the same batches
(``tests/kinds/test_contract.py``).

The period ``T`` is ``HostSettings.period_ms``, or, when None (the Monitor's default), chosen
by the coordinator from the streamed updates (:mod:`tsmon.protocols.filters.tuning`): until
then every series is static at its uniform width; the chosen ``T`` and each series' uniform
width travel in the width messages that make the series adaptive (and in every width message
after), counted as any other, and a source's filter takes ``T`` from the first it applies,
anchored at the message's period: both ends shrink by the same periods from then on, to the
bit, however late the message lands. When the safety net trips, width messages make every
series static again (no wider than it is until each source confirms, then its uniform width),
so the sources stop shrinking.

Query changes (§3.4) between batches happen at the coordinator's time at once (before any source
reported a time, a query is registered at the first step's time, with the δ it has then); their
width messages go out with the next step's control, so sources apply them a batch later. A width
message for a series whose source is not known yet waits until a row shows where the series
lives.

Idle sources (docs/time.md): a source whose newest time is more than ``idle_timeout`` behind
the job's newest time no longer holds the coordinator's time back
(:meth:`~tsmon.engine.hub.CoordinatorNode.watermark`); its series keep their last reported
values, the answers over them name it in the progress (``waitingOn``), and its updates, when
it comes back, arrive late and are applied at the coordinator's time. A host with an
event-time watermark can also move an idle node with
:meth:`~tsmon.engine.node.SourceNode.advance`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tsmon.core.timestamps import format_instant_and_ms
from tsmon.core.units import format_value
from tsmon.kinds.base import Part, QueryKind
from tsmon.kinds.bounded.coordinator import BoundedCoordinator
from tsmon.kinds.bounded.node import BoundedNode
from tsmon.kinds.bounded.queries import to_query
from tsmon.protocols.filters.coordinator import Answer
from tsmon.query import AggregateDef, AlterPrecision, format_terms, resolve_aggregate
from tsmon.query.patterns import is_glob

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode

__all__ = ["KIND", "PART", "BoundedCoordinator", "BoundedNode"]


def _add(hub: CoordinatorNode, statement: AggregateDef, source_of: Any) -> str:
    part = hub.part("bounded")
    globs = [t.series for t in statement.terms if is_glob(t.series)]
    if globs:
        part.add_glob_query(hub, statement)
        return (
            f"added {statement.name!r}: {statement.aggregate.upper()} over the series matching "
            f"{', '.join(globs)} as they appear, within {statement.delta:g}"
        )
    names = [t.series for t in statement.terms]
    query = to_query(resolve_aggregate(statement, names))
    part.add_query(hub, query, dict(source_of(list(query.objects))) if source_of else None)
    return (
        f"added {query.name!r}: {statement.aggregate.upper()} of {len(names)} series "
        f"within {statement.delta:g}"
    )


def _alter(hub: CoordinatorNode, statement: AlterPrecision) -> str:
    name = hub.registered_name(statement.name)
    hub.alter_precision(name, statement.delta, now=statement.immediately)
    now = " immediately" if statement.immediately else ""
    return f"altered {name!r} to within {statement.delta:g}{now}"


def _describe(statement: AggregateDef | AlterPrecision) -> tuple[str, str, str]:
    if isinstance(statement, AlterPrecision):
        now = " IMMEDIATELY" if statement.immediately else ""
        return "ALTER", "-", f"WITHIN {statement.delta:g}{now}"
    of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
    return of, "-", f"WITHIN {statement.delta:g}"


def _job_check(statement: AggregateDef) -> None:
    if not any(is_glob(t.series) for t in statement.terms):
        to_query(resolve_aggregate(statement, [t.series for t in statement.terms]))


def _line(a: Answer) -> str:
    """``2 in [1.5, 2.5] as of 2024-01-01T00:00:00.119Z (1704067200119 ms)``; an answer not
    known yet says why instead of ``nan in [-inf, inf]``."""
    if a.as_of_ms is None:
        return "not known yet: no data yet"
    as_of = f"as of {format_instant_and_ms(a.as_of_ms)}"
    if math.isnan(a.value):
        return f"not known yet: some of its series have sent no value, {as_of}"
    bounds = f"[{format_value(a.lo)}, {format_value(a.hi)}]"
    return f"{format_value(a.value)} in {bounds} {as_of}"


PART = Part(
    "bounded",
    node=BoundedNode,
    coordinator=BoundedCoordinator,
    sink="answers",
    title="bounded answers",
    line=_line,
    band=lambda a: (a.value, a.lo, a.hi),
)
KIND = QueryKind(
    "bounded",
    "bounded",
    (AggregateDef,),
    add=_add,
    describe=_describe,
    alters=(AlterPrecision,),
    alter=_alter,
    job_check=_job_check,
)
