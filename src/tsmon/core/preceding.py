"""Windows taken before the point: a count or time window as it stood at the series' previous
point, so that a point is compared with the points before it (a z-score whose window holds the
point itself is bounded by (n - 1) / sqrt(n): 3.18 for 12 points, so `> 3.5 * stddev` could
never fire).

A preceding window runs the same sliding window one point behind: after the points ``[p0, p1)``
it has taken in the points up to ``p1 - 2``, and the statistics it hands the point ``p`` are
those of the sliding window as of ``p - 1``.
The series' first point has an empty window before it: ``count`` and ``sum`` 0, ``coverage``
0, every other statistic NaN (as an empty landmark window).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tsmon.core.register import Register
from tsmon.core.sliding import SlidingWindow
from tsmon.core.view import WindowView, check_follows
from tsmon.core.window_spec import WindowSpec

_EMPTY = {"count": 0.0, "sum": 0.0, "coverage": 0.0}  # every other statistic: NaN


class PrecedingWindow:
    """A ``before`` window of one series, shared and reference-counted like the others.

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(retention_ms=None))
    >>> win = PrecedingWindow(WindowSpec.count(2, before=True), reg)
    >>> p0, p1 = reg.append(np.array([0, 1000, 2000, 3000]), np.array([1.0, 5.0, 3.0, 9.0]))
    >>> view = win.advance(p0, p1, {"count", "mean"})
    >>> view.stat("count").tolist(), view.stat("mean").tolist()
    ([0.0, 1.0, 2.0, 2.0], [nan, 1.0, 3.0, 4.0])
    """

    def __init__(
        self,
        spec: WindowSpec,
        register: Register,
        until: int | None = None,
        inner: SlidingWindow | None = None,
    ) -> None:
        if not spec.before:
            raise ValueError(f"{spec} includes the point; open it with open_window")
        self.spec = spec
        self.register = register
        self.refcount = 0
        self.end = register.end if until is None else until
        self.inner = inner or SlidingWindow(spec.base, register, self._lagged(self.end))

    def _lagged(self, until: int) -> int:
        """Where the sliding window stands for a preceding window as of ``until``: one point
        behind, when there is a point before ``until``."""
        return until - 1 if until > self.register.start else until

    def populate(self, until: int) -> None:
        """Set the window to hold, as of position ``until`` (exclusive), what history allows."""
        self.inner.populate(self._lagged(until))
        self.end = until

    def fork(self, until: int) -> PrecedingWindow:
        """A private window as of position ``until``."""
        return PrecedingWindow(
            self.spec, self.register, until, self.inner.fork(self._lagged(until))
        )

    def close(self) -> None:
        """Release the register points the sliding window pinned."""
        self.inner.close()

    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)``; each gets the statistics in ``wanted`` of
        the window as of the point before it."""
        check_follows(self.spec, self.end, p0, p1)
        wanted = frozenset(wanted)
        q0, q1 = self.inner.end, p1 - 1  # q0 is p0 - 1, or p0 when no point precedes p0
        parts = (
            [{name: np.array([_EMPTY.get(name, np.nan)]) for name in wanted}] if q0 == p0 else []
        )
        if q1 > q0:
            view = self.inner.advance(q0, q1, wanted)
            parts.append({name: view.stat(name) for name in wanted})
        self.end = p1
        return WindowView(
            self.spec, {name: np.concatenate([part[name] for part in parts]) for name in wanted}
        )
