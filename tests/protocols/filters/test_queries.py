"""Queries: width constraints (App. A, B), bounded answers (App. D) and argument checks."""

from __future__ import annotations

import pytest

from tsmon.protocols.filters.queries import Aggregate, Query


def test_a_query_built_directly_refuses_an_aggregate_that_is_not_an_aggregate() -> None:
    """A string aggregate fell through every branch: constraints as MIN (W_i ≤ δ each, App. A)
    but answers as an unweighted SUM, n·δ wide."""
    with pytest.raises(TypeError, match="Aggregate"):
        Query("q", "sum", {"a": 1.0, "b": 1.0}, 1.0)  # type: ignore[arg-type]


def test_a_query_built_directly_refuses_weights_that_are_not_a_mapping() -> None:
    with pytest.raises(TypeError, match="weights"):
        Query("q", Aggregate.SUM, ["a", "b"], 1.0)  # type: ignore[arg-type]
