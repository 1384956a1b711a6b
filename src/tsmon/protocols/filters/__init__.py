"""Adaptive bound filters (Olston, Jiang, Widom, SIGMOD 2003): bounded answers with δ.

Sources drop values inside a bound of width ``W_i`` around the last value sent; the coordinator
keeps the bounds, answers AVG/SUM/MIN/MAX queries with intervals of width at most ``δ``, and
reallocates width every period ``T`` (shrink by ``S``, grow by burden score).
"""

from tsmon.protocols.filters.bounds import BoundCache
from tsmon.protocols.filters.coordinator import Answer, Coordinator
from tsmon.protocols.filters.messages import Growth, MessageCounts, Shrink, StreamedUpdate
from tsmon.protocols.filters.precision import (
    burden_scores,
    burden_targets,
    deviations,
    grow_greedily,
    initial_widths,
)
from tsmon.protocols.filters.queries import Aggregate, Query
from tsmon.protocols.filters.serializing import SerializingQueue
from tsmon.protocols.filters.source import SourceFilter

__all__ = [
    "Aggregate",
    "Answer",
    "BoundCache",
    "Coordinator",
    "Growth",
    "MessageCounts",
    "Query",
    "SerializingQueue",
    "Shrink",
    "SourceFilter",
    "StreamedUpdate",
    "burden_scores",
    "burden_targets",
    "deviations",
    "grow_greedily",
    "initial_widths",
]
