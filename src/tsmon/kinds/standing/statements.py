"""Standing statements: the registry of a host's statements and their last evaluations, and
how a statement becomes a protocol query (:class:`~tsmon.protocols.deferral.StandingQuery`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from tsmon.core.window_spec import WindowKind, WindowSpec
from tsmon.engine.waiting import Groups
from tsmon.protocols.deferral import StandingQuery
from tsmon.protocols.deferral.snapshot import Answer
from tsmon.query import StandingDef, query_key
from tsmon.query.patterns import is_glob, series_matches

__all__ = [
    "StandingAnswer",
    "StandingRegistry",
    "check_window",
    "series_weights",
    "standing_query",
]

StandingAnswer = Answer


class StandingRegistry:
    """Standing statements by query key and their last evaluations; where the queries run
    is the subclass's business (:meth:`add`, :meth:`_drop`)."""

    def __init__(self) -> None:
        self.statements: dict[str, StandingDef] = {}  # by query key
        self.latest: dict[str, Answer] = {}  # by name: the last evaluation
        self.series_of: dict[str, tuple[str, ...]] = {}  # by name: the series it reads

    def defines(self, name: str) -> bool:
        return query_key(name) in self.statements

    def names(self) -> list[str]:
        return [s.name for s in self.statements.values()]

    def texts(self) -> dict[str, str]:
        return {s.name: s.text for s in self.statements.values()}

    def add(self, statement: StandingDef, series: Iterable[str]) -> None:
        raise NotImplementedError

    def _drop(self, statement: StandingDef) -> None:
        raise NotImplementedError

    def _statement(self, name: str) -> StandingDef:
        return self.statements[query_key(name)]

    def alter(self, name: str, eps: float, series: Iterable[str]) -> None:
        """A new tolerance: the query is registered again (stream models are kept)."""
        statement = self._statement(name)
        self.remove(name)
        self.add(dataclasses.replace(statement, eps=float(eps)), series)

    def remove(self, name: str) -> None:
        statement = self.statements.pop(query_key(name))
        self.latest.pop(statement.name, None)
        self.series_of.pop(statement.name, None)
        self._drop(statement)

    def reads(self, names: Iterable[str] | None = None) -> dict[str, Groups]:
        """Each series of each query (globs were expanded when it was added), for
        :mod:`tsmon.engine.waiting`; ``names``: only these queries (None: all)."""
        series_of = self.series_of
        wanted = series_of if names is None else [n for n in names if n in series_of]
        return {name: tuple((s,) for s in series_of[name]) for name in wanted}

    def answers(self) -> dict[str, Answer]:
        """The last evaluation of every query (queries not evaluated yet are left out)."""
        names = [s.name for s in self.statements.values()]
        return {n: self.latest[n] for n in names if n in self.latest}


def check_window(statement: StandingDef) -> None:
    """Refuse a MAX/MIN window counted in points: the deferral model is in time."""
    if statement.window is not None and not _duration_ms(statement.window):
        raise ValueError(
            f"query {statement.name!r}: MAX/MIN OVER {statement.window} counts points; the "
            "deferral model is in time, so give a duration (e.g. OVER 30m)"
        )


def series_weights(statement: StandingDef, series: Iterable[str]) -> dict[str, float]:
    """The weight ``a_i`` of each series in the aggregate (Eq. 2): globs expanded over
    ``series``, repeated series pooled, zero weights left out, AVG divided by ``|S|``."""
    known = list(series)
    pooled: dict[str, float] = {}
    for term in statement.terms:
        names = (
            [s for s in known if series_matches(s, [term.series])]
            if is_glob(term.series)
            else [term.series]
        )
        if not names:
            raise ValueError(
                f"query {statement.name!r}: {term.series!r} matches no series; add the "
                "series first (globs expand when the query is added)"
            )
        for name in names:
            pooled[name] = pooled.get(name, 0.0) + term.coefficient
    pooled = {s: w for s, w in pooled.items() if w != 0.0}
    if not pooled:
        raise ValueError(f"query {statement.name!r}: the weights sum to 0 for every series")
    scale = 1.0 / len(pooled) if statement.aggregate == "avg" else 1.0  # AVG over |S|
    return {s: w * scale for s, w in pooled.items()}


def standing_query(
    s: StandingDef, weights: dict[int, float], landmark_ms: int | None
) -> StandingQuery:
    """The protocol query of ``s`` over stream ids; ``landmark_ms`` is its first tick when it
    runs ``SINCE START``."""
    landmark = landmark_ms if s.since_start else s.landmark_ms
    return StandingQuery(
        s.name,
        weights,
        s.eps,
        s.confidence,
        kind=s.extremum or "linear",  # type: ignore[arg-type]
        window_ms=None if s.window is None else _duration_ms(s.window),
        landmark_ms=landmark,
        relative=s.relative,
    )


def _duration_ms(window: WindowSpec) -> int | None:
    """Milliseconds of a duration window (``30m``), ``None`` for a count (``100 points``)."""
    return window.size if window.kind is WindowKind.TIME else None
