"""Distributed top-k monitoring within ε (Babcock & Olston, SIGMOD 2003).

Monitor nodes keep partial values ``V_ij`` and adjustment factors ``δ_ij`` and check local
constraints against the top-k set ``T``; the coordinator resolves violations in up to three
phases and reallocates leeway by Algorithm 3.1. Pure code: no clock, no I/O; the simulated
networks that run it are in :mod:`tsmon.sim.topk`.
"""

from tsmon.protocols.topk.allocation import Policy, apportion, reallocate
from tsmon.protocols.topk.coordinator import PHANTOM, Coordinator
from tsmon.protocols.topk.messages import (
    CacheUpdate,
    Install,
    MessageCounts,
    ResolutionRequest,
    ValueReply,
    ValueRequest,
)
from tsmon.protocols.topk.node import MonitorNode

__all__ = [
    "PHANTOM",
    "CacheUpdate",
    "Coordinator",
    "Install",
    "MessageCounts",
    "MonitorNode",
    "Policy",
    "ResolutionRequest",
    "ValueReply",
    "ValueRequest",
    "apportion",
    "reallocate",
]
