"""Why a query has no answer yet, for every kind: the series it reads that no row has shown.

Each coordinator part says which series patterns its queries read
(:meth:`tsmon.kinds.base.CoordinatorPart.reads`), as *groups*: a group is satisfied when a
series that matches it has sent a point (a watch query's ``ON`` list is one group, each term
of an aggregate one). A query waits while one of its groups is not, and :func:`why_waiting`
says why, in the words of the first such group:

* no series the job knows matches it: ``no series matches nab.* (series now: 'a.x')``;
* the series it names are known only from the job's ``[sources]`` and their source has sent
  nothing: ``for source 'dc1', which has sent nothing yet``;
* their source has reported, or a series is its own source: ``for series 'a.x', which has
  sent no point yet``.

Shown after ``waits:`` (``query 'q' waits: for source 'dc1', which has sent nothing yet``).

:class:`Waiting` keeps the notes of every query of a coordinator, recomputed only when the
series, the sources or the queries changed, and the queries whose note went away in the last
step (``startedMatching``). Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tsmon.query.patterns import is_glob, no_match

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode

__all__ = ["Groups", "Waiting", "why_waiting"]

#: A query's series patterns: each group must match a series that has sent a point.
Groups = tuple[tuple[str, ...], ...]


@lru_cache(maxsize=4096)
def _glob(pattern: str) -> Any:
    return re.compile(translate(pattern)).match  # fnmatchcase's rule, compiled once


def _matching(group: Sequence[str], names: Sequence[str], known: Set[str]) -> list[str]:
    """The series of ``names`` (sorted) that match ``group``, in order."""
    if not any(is_glob(p) for p in group):
        return sorted(p for p in set(group) if p in known)
    found = set()
    for p in group:
        if is_glob(p):
            match = _glob(p)
            found.update(n for n in names if match(n))
        elif p in known:
            found.add(p)
    return sorted(found)


def why_waiting(
    groups: Groups,
    names: Sequence[str],
    seen: Set[str],
    declared: Mapping[str, str],
    reporting: Set[str],
) -> str | None:
    """None when every group matches a series of ``seen`` (series rows showed); else why not.

    ``names`` are the series the job knows (``seen`` and those ``declared``, sorted),
    ``declared`` maps a series to the source the job says it comes from, ``reporting`` are the
    sources that have reported.

    Examples
    --------
    >>> names = ["a.x", "b.x"]
    >>> why_waiting((("nab.*",),), names, {"a.x", "b.x"}, {}, {"s"})
    "no series matches nab.* (series now: 'a.x', 'b.x')"
    >>> why_waiting((("a.x",), ("b.x",)), names, {"a.x"}, {"b.x": "dc2"}, {"dc1"})
    "for source 'dc2', which has sent nothing yet"
    >>> why_waiting((("a.x",), ("b.x",)), names, {"a.x"}, {"b.x": "b.x"}, {"a.x"})
    "for series 'b.x', which has sent no point yet"
    >>> why_waiting((("*.x",),), names, {"a.x"}, {}, {"a.x"}) is None
    True
    """
    known = set(names)
    for group in groups:
        matched = _matching(group, names, known)
        if not matched:
            return no_match(group, names)
        if seen.isdisjoint(matched):
            silent = sorted(
                {declared[s] for s in matched if s in declared and declared[s] != s} - reporting
            )
            if silent:
                return f"for source {silent[0]!r}, which has sent nothing yet"
            return f"for series {matched[0]!r}, which has sent no point yet"
    return None


@dataclass
class Waiting:
    """The queries of one coordinator that wait, and why (:func:`why_waiting`).

    ``notes`` maps a waiting query to why; ``started`` the queries whose note went away in the
    last :meth:`step` to the series they now read (``now matches 'a.x', 'b.x'``).
    """

    notes: dict[str, str] = field(default_factory=dict)
    started: dict[str, str] = field(default_factory=dict)
    _key: Any = None
    _last: Any = None  # (series, declared, {query: (groups, why)}) of the last look

    def __getstate__(self) -> dict[str, Any]:
        """The state without the last look (a cache: a copy looks at every query again)."""
        return {k: v for k, v in self.__dict__.items() if k != "_last"}

    def step(self, hub: CoordinatorNode, series: Any, queries: Any) -> None:
        """Look at ``hub``'s queries (:meth:`~tsmon.engine.hub.CoordinatorNode.reads`) and
        series again, unless ``series`` and ``queries`` (what they depend on) are the last
        step's. When only the queries changed (the same ``series`` and the same sources
        declared), a query whose groups did not keeps its note (:func:`why_waiting` depends on
        nothing else): a query added costs its own look."""
        self.started = {}
        if (series, queries) == self._key:
            return
        self._key = series, queries
        last = {}
        if self._last is not None and self._last[:2] == (series, hub.declared):
            last = self._last[2]
        names, seen = hub.known_series(), hub.learned.keys()
        notes, looked = {}, {}
        for name, groups in hub.reads().items():
            before = last.get(name)
            if before is not None and before[0] == groups:
                why = before[1]
            else:
                why = why_waiting(groups, names, seen, hub.declared, hub.sources)
            looked[name] = groups, why
            if why is not None:
                notes[name] = why
            elif name in self.notes:
                self.started[name] = "now matches " + _some(_seen(groups, names, seen))
        self.notes, self._last = notes, (series, dict(hub.declared), looked)


def _seen(groups: Groups, names: Sequence[str], seen: Set[str]) -> list[str]:
    known = set(names)
    return sorted({s for g in groups for s in _matching(g, names, known) if s in seen})


def _some(series: Sequence[str], shown: int = 3) -> str:
    """``'a.x', 'b.x' and 5 more``."""
    more = f" and {len(series) - shown} more" if len(series) > shown else ""
    return ", ".join(repr(s) for s in series[:shown]) + more
