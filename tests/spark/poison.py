"""Steps with a bug, for quarantine tests on Spark.

- :class:`PoisonedNode`: a source node whose step raises on a batch holding the value
  :data:`POISON`. Spark's Python workers import it by name (it is importable from the
  repository root, as the node factory pickled with the job refers to it).
- :class:`PoisonedHub`: a coordinator whose bounded part raises, after changing its state, in
  a step that receives a filter update carrying :data:`POISON` (the driver's coordinator and
  the in-process reference's both run it, so that they quarantine the same rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import SourceNode, new_node
from tsmon.kinds.bounded.coordinator import BoundedCoordinator

POISON = 666.0


class PoisonedNode(SourceNode):
    """A :class:`SourceNode` whose step raises on a batch holding the value :data:`POISON`."""

    def step_columns(self, control: Any, series: Any, ts: Any, value: Any, *rest: Any, **kw: Any):
        if (np.asarray(value) == POISON).any():
            raise RuntimeError(f"a bug on the value {POISON}")
        return super().step_columns(control, series, ts, value, *rest, **kw)


def poisoned_node(key: str, settings: Any) -> Any:
    """:func:`tsmon.engine.node.new_node`, with :class:`PoisonedNode` for data sources."""
    node = new_node(key, settings)
    return PoisonedNode(key, settings) if type(node) is SourceNode else node


class PoisonedBounded(BoundedCoordinator):
    """The bounded coordinator part with a bug: its control step raises once it has applied
    a streamed update of the value :data:`POISON` (its state changed: the quarantine must
    undo that)."""

    def control(self, hub: CoordinatorNode) -> dict[str, list[dict]]:
        poisoned = any(u.value == POISON for u in self.updates)
        out = super().control(hub)
        if poisoned:
            raise RuntimeError(f"a bug on the update {POISON}")
        return out


class PoisonedHub(CoordinatorNode):
    """A :class:`CoordinatorNode` running :class:`PoisonedBounded` as its bounded part."""

    def __init__(self, settings: Any, source_of: Mapping[str, str] | None = None) -> None:
        super().__init__(settings, source_of)
        self.parts["bounded"] = PoisonedBounded(settings)
