"""A source node with a bug, for quarantine tests on Spark: a step whose points include the
value :data:`POISON` raises. Spark's Python workers import it by name (it is importable from
the repository root, as the node factory pickled with the job refers to it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tsmon.engine.node import SourceNode, new_node

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
