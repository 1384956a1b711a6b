"""What the filter state machines share: a value history (the exact oracle as of any time) and
the rules that add, remove and alter random queries while a runtime runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from tests.protocols.filters.test_network import make_query
from tsmon.protocols.filters import Answer, Coordinator, Query


class History:
    """Every value each object took, to read the exact value as of any time."""

    def __init__(self, objects: Sequence[str]) -> None:
        self.ts: dict[str, list[int]] = {o: [] for o in objects}
        self.values: dict[str, list[float]] = {o: [] for o in objects}

    def add(self, obj: str, ts: int, value: float) -> None:
        self.ts[obj].append(ts)
        self.values[obj].append(value)

    def at(self, ts: int) -> dict[str, float]:
        """The last value of every object at or before ``ts`` (``nan`` if none yet)."""
        out = {}
        for o, stamps in self.ts.items():
            k = int(np.searchsorted(stamps, ts, side="right"))
            out[o] = self.values[o][k - 1] if k else math.nan
        return out


class QueryChanges(RuleBasedStateMachine):
    """Rules changing the queries of ``self.target`` (``add_query``/``remove_query``/
    ``alter_query``) over ``self.universe``; ``self.relaxing`` holds the queries whose δ was
    lowered without explicit shrinks (they narrow over the period shrinks, §3.4)."""

    universe: Sequence[str] = ()
    target: Any

    def start_changes(self, target: Any) -> None:
        self.target = target
        self.queries: dict[str, Query] = {}
        self.relaxing: set[str] = set()
        self.names = 0

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        name = f"q{self.names}"
        self.names += 1
        query = make_query(data.draw, name, list(self.universe))
        self.target.add_query(query)
        self.queries[name] = query

    @precondition(lambda self: self.queries)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        self.target.remove_query(name)
        del self.queries[name]
        self.relaxing.discard(name)

    @precondition(lambda self: self.queries)
    @rule(data=st.data(), delta=st.floats(0.05, 20.0), immediately=st.booleans())
    def alter(self, data: st.DataObject, delta: float, immediately: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        if delta < self.queries[name].delta and not immediately:
            self.relaxing.add(name)
        self.target.alter_query(name, delta, immediately=immediately)
        self.queries[name] = self.queries[name].with_delta(delta)

    def check_answers(
        self, coord: Coordinator, answers: Mapping[str, Answer], exact_values: dict[str, float]
    ) -> None:
        """Every bounded answer holds the exact aggregate; it is at most δ wide unless a
        narrower width is still unconfirmed or a lowered δ is still narrowing (§3.4, §4)."""
        for name, answer in answers.items():
            query = self.queries[name]
            if math.isinf(answer.width):
                continue
            exact = query.exact(exact_values)
            tol = 1e-9 * (1 + max(abs(v) for v in exact_values.values() if not math.isnan(v)))
            assert answer.lo - tol <= exact <= answer.hi + tol, (query, answer, exact)
            pending = any(coord.cache.index[o] in coord.cache.pending for o in query.objects)
            if name in self.relaxing and query.holds(coord.widths()):
                self.relaxing.discard(name)  # the period shrinks have narrowed it (§3.4)
            if not pending and name not in self.relaxing:
                assert answer.width <= query.delta * (1 + 1e-9), (query, answer)
