"""Windows over a register with statistics maintained online (claims 1 and 2).

Sliding windows (count, time) live in ``sliding``, landmark windows in ``landmark``; both answer
``advance(p0, p1, wanted)`` with per-point statistics (a window ``before`` the point, in
``preceding``, is a sliding window one point behind), ``populate(until)`` to rebuild from
history, ``fork(until)`` for the window as of a past point, and ``close()``.
"""

from __future__ import annotations

from tsmon.core.landmark import LandmarkWindow
from tsmon.core.preceding import PrecedingWindow
from tsmon.core.register import Register
from tsmon.core.sliding import SlidingWindow
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
