"""The coordinator's bound cache: per object a centre and a width (§1.2.3, Figure 1)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class BoundCache:
    """Cached bound ``[centre − W/2, centre + W/2]`` of every object, mirroring its source filter.

    Parameters
    ----------
    objects
        Object ids, in the index order used by the precision manager.
    widths
        Initial widths ``W_i``, one per object.

    Examples
    --------
    >>> cache = BoundCache(["a", "b"], np.array([2.0, 1.0]))
    >>> cache.has_value("a")
    False
    >>> cache.recentre("a", 5.0)
    >>> cache.bound("a")
    (4.0, 6.0)
    """

    def __init__(self, objects: Sequence[str], widths: np.ndarray) -> None:
        self.objects = list(objects)
        self.index = {obj: i for i, obj in enumerate(self.objects)}
        if len(self.index) != len(self.objects):
            raise ValueError(f"object ids must be distinct, got {self.objects!r}")
        self.widths = np.array(widths, dtype=float)
        if self.widths.shape != (len(self.objects),):
            raise ValueError(
                f"need one width per object: {len(self.objects)} objects, "
                f"{self.widths.shape} widths"
            )
        self.centres = np.full(len(self.objects), np.nan)

    def _i(self, object_id: str) -> int:
        try:
            return self.index[object_id]
        except KeyError:
            raise KeyError(
                f"unknown object {object_id!r}; known objects: {self.objects[:10]!r}"
            ) from None

    def has_value(self, object_id: str) -> bool:
        """Whether a streamed update of ``object_id`` has been received."""
        return not math.isnan(self.centres[self._i(object_id)])

    def recentre(self, object_id: str, value: float) -> None:
        """A streamed update: the bound is re-centred on ``value`` (§1.2)."""
        self.centres[self._i(object_id)] = value

    def set_width(self, object_id: str, width: float) -> None:
        """Set the absolute width ``W_i`` (growth or shrink)."""
        self.widths[self._i(object_id)] = width

    def width(self, object_id: str) -> float:
        """Current width ``W_i`` of ``object_id``."""
        return float(self.widths[self._i(object_id)])

    def bound(self, object_id: str) -> tuple[float, float]:
        """Cached bound ``(L_i, H_i)``; ``(-inf, inf)`` before any update was received."""
        i = self._i(object_id)
        if math.isnan(self.centres[i]):
            return -math.inf, math.inf
        half = self.widths[i] / 2
        return float(self.centres[i] - half), float(self.centres[i] + half)
