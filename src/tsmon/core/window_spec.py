"""What a window covers: the last N points, the last span of event time, or since an instant."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tsmon.core.units import format_duration_ms


class WindowKind(str, Enum):
    """The three window shapes tsmon maintains online."""

    COUNT = "count"  # the last `size` points
    TIME = "time"  # points with ts in (t - size_ms, t]
    LANDMARK = "landmark"  # points with ts >= a fixed instant


@dataclass(frozen=True, order=True)
class WindowSpec:
    """A window shape; equal specs on one series share one window.

    ``size`` is a point count (COUNT), a span in ms (TIME) or the landmark instant in epoch
    ms (LANDMARK).

    Examples
    --------
    >>> str(WindowSpec.count(100)), str(WindowSpec.time(300_000)), str(WindowSpec.landmark(0))
    ('100 points', '5m', 'since 0')
    """

    kind: WindowKind
    size: int

    def __post_init__(self) -> None:
        if self.kind is not WindowKind.LANDMARK and self.size <= 0:
            unit = "points" if self.kind is WindowKind.COUNT else "ms"
            raise ValueError(
                f"{self.kind.value} window size must be > 0, got {self.size} {unit}; "
                "pass a positive size"
            )

    @classmethod
    def count(cls, points: int) -> WindowSpec:
        """The last ``points`` points."""
        return cls(WindowKind.COUNT, int(points))

    @classmethod
    def time(cls, span_ms: int) -> WindowSpec:
        """Points whose timestamp lies in ``(t - span_ms, t]`` for the latest time ``t``."""
        return cls(WindowKind.TIME, int(span_ms))

    @classmethod
    def landmark(cls, since_ms: int) -> WindowSpec:
        """Points whose timestamp is at or after ``since_ms``."""
        return cls(WindowKind.LANDMARK, int(since_ms))

    def __str__(self) -> str:
        if self.kind is WindowKind.COUNT:
            return f"{self.size} points"
        if self.kind is WindowKind.TIME:
            return format_duration_ms(self.size)
        return f"since {self.size}"
