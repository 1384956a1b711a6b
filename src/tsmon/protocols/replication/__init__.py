"""Adaptive replication of SWAT summaries over a tree of sites (Bulut & Singh 2003, §3-§4).

SWAT-ASR (§3): the source site keeps a SWAT; each of its slots is a *window segment* with a
*data range* and a *subscription list* (Table 1). Client sites answer queries from replicas
whose ranges meet the query's precision and forward the rest towards the source (Fig. 8a); at
the end of each phase, expansion and contraction tests grow a segment's replication scheme
towards the sites that read it and shrink it where writes outnumber reads (Fig. 8b).
Baselines (§4): per-item interval caching with Divergence Caching or Adaptive Precision
Setting widths. Pure classes: values, messages and phase ends in; messages and answers out.

**Supported**: window mode (``N`` a power of two), ``k`` blocks per segment (``k = 1`` is §3's
single range), any tree, queries ``(I, W, delta)`` with any weights.
**Not supported**: message latency or reordering (sites assume every update reached them
before the next query, as in a zero-latency simulation; :mod:`tsmon.engine.replicas` hosts the
protocol one micro-batch wide, requests applied before the batch's values); whole-stream SWAT
(``window=None``) and §2.5's reduced levels; [16]'s switch test (the source always holds every
segment, §3).
Interpretations: answers are the midpoint of a range, off by at most its *half* width (the
paper compares the full width with ``delta``); a fringe site that keeps its replica also runs
the expansion test (§3's example, where Fig. 8b reads "else if"); a dropped replica is
announced to the parent with a :class:`Decache` message.
"""

from tsmon.protocols.replication.client import ClientSite
from tsmon.protocols.replication.cover import Decomposition, decompose
from tsmon.protocols.replication.directory import AsrSite, Reaction, Row
from tsmon.protocols.replication.invariants import check_replication, replication_violations
from tsmon.protocols.replication.items import ItemClient, ItemServer
from tsmon.protocols.replication.messages import (
    Answer,
    Decache,
    Insert,
    MessageCounts,
    Query,
    ReadRequest,
    Refresh,
    Update,
)
from tsmon.protocols.replication.policies import (
    AdaptivePrecision,
    DivergenceCaching,
    WidthPolicy,
    dc_costs,
)
from tsmon.protocols.replication.segments import SLOTS, Approx, Segment
from tsmon.protocols.replication.source import SourceSite

__all__ = [
    "SLOTS",
    "AdaptivePrecision",
    "Answer",
    "Approx",
    "AsrSite",
    "ClientSite",
    "Decache",
    "Decomposition",
    "DivergenceCaching",
    "Insert",
    "ItemClient",
    "ItemServer",
    "MessageCounts",
    "Query",
    "Reaction",
    "ReadRequest",
    "Refresh",
    "Row",
    "Segment",
    "SourceSite",
    "Update",
    "WidthPolicy",
    "check_replication",
    "dc_costs",
    "decompose",
    "replication_violations",
]
