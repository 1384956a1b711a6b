"""Windows over a register with statistics maintained online (claims 1 and 2).

Sliding windows (count, time) live in ``sliding``, landmark windows in ``landmark``; both answer
``advance(p0, p1, wanted)`` with per-point statistics (``advance_many``: windows of one shape
over many series at once) (a window ``before`` the point, in
``preceding``, is a sliding window one point behind), ``populate(until)`` to rebuild from
history, ``fork(until)`` for the window as of a past point, and ``close()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tsmon.core.landmark import LandmarkWindow
from tsmon.core.preceding import PrecedingWindow
from tsmon.core.register import Register
from tsmon.core.sliding import SlidingWindow, advance_sliding
from tsmon.core.view import STATS, WindowView
from tsmon.core.window_spec import WindowKind, WindowSpec

Window = SlidingWindow | LandmarkWindow | PrecedingWindow

__all__ = [
    "STATS",
    "LandmarkWindow",
    "PrecedingWindow",
    "SlidingWindow",
    "Window",
    "WindowView",
    "advance_many",
    "open_window",
]


def open_window(spec: WindowSpec, register: Register, until: int | None = None) -> Window:
    """A new window of ``spec`` over ``register``, populated at once from its history as of
    position ``until`` (default: everything stored).

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(retention_ms=None))
    >>> type(open_window(WindowSpec.time(60_000), reg)).__name__
    'SlidingWindow'
    """
    if spec.kind is WindowKind.LANDMARK:
        return LandmarkWindow(spec, register, until)
    if spec.before:
        return PrecedingWindow(spec, register, until)
    return SlidingWindow(spec, register, until)


def _one_by_one(
    windows: Sequence[Window], spans: Sequence[tuple[int, int]], wanted: Iterable[str]
) -> WindowView:
    views = [w.advance(p0, p1, wanted) for w, (p0, p1) in zip(windows, spans, strict=True)]
    return WindowView.concat(windows[0].spec, views)


#: How windows of one kind advance together; the kinds not listed advance one by one.
_TOGETHER: dict[type, Callable[..., WindowView]] = {SlidingWindow: advance_sliding}


def advance_many(
    windows: Sequence[Window], spans: Sequence[tuple[int, int]], wanted: Iterable[str]
) -> WindowView:
    """Advance windows of one shape (of different series), each over the register points
    ``[p0, p1)`` just appended to its series (at least one); one view of their points in turn.

    Examples
    --------
    >>> import numpy as np
    >>> from tsmon.core.register import RegisterConfig
    >>> regs = [Register(name, RegisterConfig(retention_ms=None)) for name in "ab"]
    >>> wins = [open_window(WindowSpec.count(2), reg) for reg in regs]
    >>> ts, values = np.array([0, 1000]), (np.array([1.0, 3.0]), np.array([5.0, 9.0]))
    >>> spans = [reg.append(ts, x) for reg, x in zip(regs, values)]
    >>> advance_many(wins, spans, {"mean"}).stat("mean").tolist()
    [1.0, 2.0, 5.0, 7.0]
    """
    return _TOGETHER.get(type(windows[0]), _one_by_one)(windows, spans, wanted)
