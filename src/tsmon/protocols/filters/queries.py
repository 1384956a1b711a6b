"""Bounded-answer queries: weighted AVG/SUM (Appendix B, D) and MIN/MAX (Appendix A).

Every query is reduced to *width constraints* ``Σ_i |K_i,j|·W_i ≤ budget_j`` over the bound
widths; the precision manager allocates widths against those constraints only.
"""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np


class Aggregate(enum.Enum):
    """The aggregate a query computes over its objects' current values."""

    AVG = "avg"
    SUM = "sum"
    MIN = "min"
    MAX = "max"


def check_delta(name: str, delta: object) -> None:
    """Refuse a precision constraint δ that is not a finite width > 0 (``ValueError``)."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"query {name!r}: delta must be a finite width > 0, got {delta!r}")
    if not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"query {name!r}: delta must be a finite width > 0, got {delta}")


@dataclass(frozen=True)
class Query:
    """A persistent query ``aggregate`` over weighted objects with precision constraint ``delta``.

    The bounded answer ``[lo, hi]`` always holds the exact aggregate and ``hi − lo ≤ delta``.
    Weights ``K_i,j`` (Appendix B) may be negative for AVG and SUM; MIN and MAX take weight 1.
    ``size`` is ``|S_j|``, the divisor of AVG; it defaults to the number of objects and differs
    only when sources pre-aggregate several objects into one (§5.2.1).

    Examples
    --------
    >>> q = Query.sum("diff", {"a": 2.0, "b": -1.0}, delta=0.5)
    >>> q.answer({"a": 10.0, "b": 4.0}, {"a": 0.1, "b": 0.2})   # 16 ± (2·0.1 + 0.2)/2
    (15.8, 16.2)
    >>> Query.min("low", ["a", "b"], delta=1.0).answer({"a": 1.0, "b": 1.2}, {"a": 1.0, "b": 0.4})
    (0.5, 1.4)
    """

    name: str
    aggregate: Aggregate
    weights: Mapping[str, float]
    delta: float
    size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.aggregate, Aggregate):
            raise TypeError(
                f"query {self.name!r}: aggregate must be an Aggregate, got {self.aggregate!r}; "
                "use Query.avg/sum/min/max or pass e.g. Aggregate.SUM"
            )
        if not isinstance(self.weights, Mapping):
            raise TypeError(
                f"query {self.name!r}: weights must map object to weight K, got "
                f"{type(self.weights).__name__}; use Query.avg/sum/min/max to pass a list"
            )
        if not self.weights:
            raise ValueError(f"query {self.name!r} has no objects; pass at least one object")
        if self.size is not None and not (isinstance(self.size, int) and self.size >= 1):
            raise ValueError(
                f"query {self.name!r}: size |S_j| must be an int >= 1, got {self.size}"
            )
        check_delta(self.name, self.delta)
        for obj, k in self.weights.items():
            if not (math.isfinite(k) and k != 0):
                raise ValueError(
                    f"query {self.name!r}: weight of {obj!r} must be finite and non-zero, got {k}"
                )
            if self.aggregate in (Aggregate.MIN, Aggregate.MAX) and k != 1:
                raise ValueError(
                    f"query {self.name!r}: {self.aggregate.name} takes no weights, got {k} "
                    f"for {obj!r}; pass a list of objects"
                )

    @classmethod
    def avg(cls, name: str, objects: Iterable[str] | Mapping[str, float], delta: float) -> Query:
        """Weighted average ``(1/|S_j|)·Σ K_i,j·V_i`` (Appendix B)."""
        return cls(name, Aggregate.AVG, _weights(objects), delta)

    @classmethod
    def sum(cls, name: str, objects: Iterable[str] | Mapping[str, float], delta: float) -> Query:
        """Weighted sum ``Σ K_i,j·V_i`` (Appendix B)."""
        return cls(name, Aggregate.SUM, _weights(objects), delta)

    @classmethod
    def min(cls, name: str, objects: Iterable[str], delta: float) -> Query:
        """Minimum of the objects' values (Appendix A)."""
        return cls(name, Aggregate.MIN, _weights(objects), delta)

    @classmethod
    def max(cls, name: str, objects: Iterable[str], delta: float) -> Query:
        """Maximum of the objects' values (Appendix A, symmetric to MIN)."""
        return cls(name, Aggregate.MAX, _weights(objects), delta)

    @property
    def objects(self) -> list[str]:
        """The objects read, in the order of ``weights``."""
        return list(self.weights)

    @property
    def divisor(self) -> int:
        """``|S_j|`` for AVG, 1 for the other aggregates."""
        if self.aggregate is not Aggregate.AVG:
            return 1
        return len(self.weights) if self.size is None else self.size

    def with_delta(self, delta: float) -> Query:
        """The same query with precision constraint ``delta`` (§3.4)."""
        return Query(self.name, self.aggregate, self.weights, delta, self.size)

    def constraints(self) -> list[tuple[dict[str, float], float]]:
        """Width constraints ``({object: |K_i,j|}, budget)`` meaning ``Σ |K|·W ≤ budget``."""
        absk = {obj: abs(k) for obj, k in self.weights.items()}
        if self.aggregate is Aggregate.AVG:
            return [(absk, self.delta * self.divisor)]  # App. B: Σ|K_i,j|·W_i ≤ δ_j·|S_j|
        if self.aggregate is Aggregate.SUM:
            return [(absk, self.delta)]  # SUM = |S_j|·AVG, so Σ|K_i,j|·W_i ≤ δ_j
        # App. A: a MIN/MAX query is one single-object query per object, each W_i ≤ δ_j
        return [({obj: 1.0}, self.delta) for obj in absk]

    def holds(self, widths: Mapping[str, float], rtol: float = 1e-9) -> bool:
        """Whether bound widths meet every width constraint of this query (App. A, B).

        Not the same as a narrow answer: a MIN/MAX answer can be narrower than δ while some
        bound is still wider (the bound could become the minimum with the next update).

        Examples
        --------
        >>> q = Query.min("low", ["a", "b"], delta=1.0)
        >>> q.holds({"a": 1.0, "b": 0.5}), q.holds({"a": 1.5, "b": 0.5})
        (True, False)
        """
        return all(
            sum(k * widths[o] for o, k in absk.items()) <= budget * (1 + rtol)
            for absk, budget in self.constraints()
        )

    def answer(
        self, centres: Mapping[str, float], widths: Mapping[str, float]
    ) -> tuple[float, float]:
        """Bounded answer ``(lo, hi)`` from cached bound centres and widths."""
        objs = self.objects
        c = np.array([centres[o] for o in objs], dtype=float)
        w = np.array([widths[o] for o in objs], dtype=float)
        return self.answer_arrays(c, w)

    def answer_arrays(self, c: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        """Bounded answer from centres ``c`` and widths ``w`` in the order of :attr:`objects`."""
        if self.aggregate is Aggregate.MIN:
            return float(np.min(c - w / 2)), float(np.min(c + w / 2))  # App. A: [min L, min H]
        if self.aggregate is Aggregate.MAX:
            return float(np.max(c - w / 2)), float(np.max(c + w / 2))  # App. A, symmetric
        k = np.fromiter(self.weights.values(), dtype=float, count=len(self.weights))
        mid = float(k @ c)
        half = float(np.abs(k) @ w) / 2  # App. D: width = Σ|K_i,j|·(H_i − L_i)
        n = self.divisor
        return (mid - half) / n, (mid + half) / n

    def exact(self, values: Mapping[str, float]) -> float:
        """The exact aggregate of ``values`` (the oracle tests compare against)."""
        v = np.array([values[o] for o in self.weights], dtype=float)
        if self.aggregate is Aggregate.MIN:
            return float(v.min())
        if self.aggregate is Aggregate.MAX:
            return float(v.max())
        k = np.array(list(self.weights.values()), dtype=float)
        return float(k @ v) / self.divisor


def _weights(objects: Iterable[str] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(objects, Mapping):
        return {str(o): float(k) for o, k in objects.items()}
    objs = list(objects)
    if isinstance(objects, str) or len(set(objs)) != len(objs):
        raise ValueError(f"objects must be distinct names, got {objects!r}")
    return dict.fromkeys(objs, 1.0)
