"""What a window covers: the last N points, the last span of event time, or since an instant;
a count or time window may be taken *before* the point (as it stood at the series' previous
point, so the point itself is not in it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS, format_instant_ms
from tsmon.core.units import MAX_DURATION_MS, format_duration_ms

#: The largest count window: 2**40 points (about 1.1e12), far beyond what fits in memory.
MAX_POINTS: int = 2**40


class WindowKind(str, Enum):
    """The three window shapes tsmon maintains online."""

    COUNT = "count"  # the last `size` points
    TIME = "time"  # points with ts in (t - size_ms, t]
    LANDMARK = "landmark"  # points with ts >= a fixed instant


@dataclass(frozen=True, order=True)
class WindowSpec:
    """A window shape; equal specs on one series share one window.

    ``size`` is a point count (COUNT, 1 .. :data:`MAX_POINTS`), a span in ms (TIME, 1 ..
    :data:`~tsmon.core.units.MAX_DURATION_MS`) or the landmark instant in epoch ms (LANDMARK,
    within :data:`~tsmon.core.units.MIN_INSTANT_MS` .. :data:`~tsmon.core.units.MAX_INSTANT_MS`).
    ``before`` (count and time windows only) takes the window as it stood at the series'
    previous point, so a point is compared with the points before it and never with itself.
    ``str(spec)`` is the window in query syntax, and reads back as an equal spec.

    Examples
    --------
    >>> str(WindowSpec.count(100)), str(WindowSpec.count(1)), str(WindowSpec.time(300_000))
    ('100 points', '1 point', '5m')
    >>> str(WindowSpec.landmark(1_704_067_200_000))
    'since 2024-01-01T00:00:00Z'
    >>> str(WindowSpec.time(3_600_000, before=True)), WindowSpec.count(12, before=True).base
    ('1h before', WindowSpec(kind=<WindowKind.COUNT: 'count'>, size=12))
    """

    kind: WindowKind
    size: int
    before: bool = False

    def __post_init__(self) -> None:
        if self.before and self.kind is WindowKind.LANDMARK:
            raise ValueError(
                "a landmark window cannot be taken before the point; use a count or time window"
            )
        low, high, unit = {
            WindowKind.COUNT: (1, MAX_POINTS, "points"),
            WindowKind.TIME: (1, MAX_DURATION_MS, "ms"),
            WindowKind.LANDMARK: (MIN_INSTANT_MS, MAX_INSTANT_MS, "ms since the epoch"),
        }[self.kind]
        if not low <= self.size <= high:
            raise ValueError(
                f"{self.kind.value} window size must be in {low} .. {high} {unit}, "
                f"got {self.size}; pass a size in that range"
            )

    @classmethod
    def count(cls, points: int, before: bool = False) -> WindowSpec:
        """The last ``points`` points (``before``: those before the point)."""
        return cls(WindowKind.COUNT, int(points), before)

    @classmethod
    def time(cls, span_ms: int, before: bool = False) -> WindowSpec:
        """Points whose timestamp lies in ``(t - span_ms, t]`` for the latest time ``t``
        (``before``: ``t`` is the series' previous point's time)."""
        return cls(WindowKind.TIME, int(span_ms), before)

    @classmethod
    def landmark(cls, since_ms: int) -> WindowSpec:
        """Points whose timestamp is at or after ``since_ms``."""
        return cls(WindowKind.LANDMARK, int(since_ms))

    def __repr__(self) -> str:
        """The fields, ``before`` only when set (most windows include the point)."""
        before = ", before=True" if self.before else ""
        return f"WindowSpec(kind={self.kind!r}, size={self.size}{before})"

    @property
    def base(self) -> WindowSpec:
        """The same window including the point (``before`` dropped)."""
        return WindowSpec(self.kind, self.size)

    def __str__(self) -> str:
        """The window as written in a query: ``100 points``, ``1 point``, ``5m``, ``since ...Z``,
        ``1h before``."""
        if self.before:
            return f"{self.base} before"
        if self.kind is WindowKind.COUNT:
            return "1 point" if self.size == 1 else f"{self.size} points"
        if self.kind is WindowKind.TIME:
            return format_duration_ms(self.size)
        return f"since {format_instant_ms(self.size)}"
