"""The source side: one bound filter per object (Olston, Jiang, Widom 2003, §1.2, §3.1)."""

from __future__ import annotations

import math

from tsmon.protocols.filters.messages import StreamedUpdate, WidthMessage


class SourceFilter:
    """Bound ``[L, H]`` of width ``W`` centred on the last value sent; drops values inside it.

    Every adjustment period the width shrinks to ``W·(1−S)`` without a message (§3.1); the
    coordinator shrinks its copy at the same event-time instants. Growth and shrink messages set
    the absolute width as of a period boundary. An object in no query has ``W = ∞`` and never
    sends; an object only in single-object queries is not ``adaptive`` and keeps its width.

    Parameters
    ----------
    object_id
        The object whose updates this filter sees.
    width
        Initial bound width ``W`` (``math.inf`` for an object in no query).
    shrink
        Shrink percentage ``S`` in ``[0, 1)``.
    adaptive
        Whether ``on_period`` shrinks the width (objects in a multi-object query).

    Examples
    --------
    >>> f = SourceFilter("a", width=2.0, shrink=0.5)
    >>> f.observe(0, 10.0)            # the first value is always sent
    StreamedUpdate(object_id='a', value=10.0, ts_ms=0)
    >>> f.observe(5, 10.9) is None    # inside [9, 11]: dropped
    True
    >>> f.on_period(10)               # W := 1.0, bound [9.5, 10.5] no longer holds 10.9
    StreamedUpdate(object_id='a', value=10.9, ts_ms=10)
    >>> f.low, f.high
    (10.4, 11.4)
    """

    def __init__(
        self, object_id: str, width: float, shrink: float, *, adaptive: bool = True
    ) -> None:
        if not width >= 0:
            raise ValueError(f"width must be >= 0, got {width}; pass a non-negative bound width")
        if not 0 <= shrink < 1:
            raise ValueError(f"shrink S must be in [0, 1), got {shrink}; e.g. pass 0.05")
        self.object_id = object_id
        self.width = float(width)
        self.shrink = float(shrink)
        self.adaptive = adaptive
        self.centre: float | None = None
        self.value: float | None = None
        self.period_ts_ms: int | None = None

    @property
    def low(self) -> float:
        """Lower end ``L = V − W/2`` of the bound (§1.2); ``-inf`` before any value is sent."""
        return -math.inf if self.centre is None else self.centre - self.width / 2

    @property
    def high(self) -> float:
        """Upper end ``H = V + W/2`` of the bound (§1.2); ``inf`` before any value is sent."""
        return math.inf if self.centre is None else self.centre + self.width / 2

    def _inside(self, value: float) -> bool:
        if math.isinf(self.width):
            return True
        # §1.2: the filter drops V with L_O <= V <= H_O
        return self.centre is not None and self.low <= value <= self.high

    def _check(self, now_ms: int) -> StreamedUpdate | None:
        assert self.value is not None
        if self._inside(self.value):
            return None
        self.centre = self.value  # §1.2: recentre on the value sent
        return StreamedUpdate(self.object_id, self.value, now_ms)

    def observe(self, now_ms: int, value: float) -> StreamedUpdate | None:
        """Take the object's new exact value; return the update to send, or ``None`` if inside."""
        if not math.isfinite(value):
            raise ValueError(
                f"value of {self.object_id!r} must be finite, got {value} at {now_ms} ms; "
                "reject it before the filter"
            )
        self.value = float(value)
        return self._check(now_ms)

    def on_period(self, period_ts_ms: int) -> StreamedUpdate | None:
        """Period boundary: ``W := W·(1−S)`` (§3.1), then re-apply the filter to the value.

        The shrink is skipped when a width message for this boundary was applied already.
        """
        if self.period_ts_ms is not None and period_ts_ms < self.period_ts_ms:
            raise ValueError(
                f"period boundaries must move forward: current {self.period_ts_ms} ms, "
                f"got {period_ts_ms} ms"
            )
        if self.period_ts_ms != period_ts_ms and self.adaptive:
            self.width = self.width * (1 - self.shrink)  # §3.1: W_i := W_i·(1 − S)
        self.period_ts_ms = period_ts_ms
        # §3.1: re-apply the filter to the current value after the width changed
        return None if self.value is None else self._check(period_ts_ms)

    def apply(self, message: WidthMessage) -> StreamedUpdate | None:
        """Set the absolute width from a growth or shrink message as of its period boundary.

        A message for a boundary this filter has not reached yet counts as that boundary's
        shrink. Returns an update if a narrower bound no longer holds the current value.
        """
        if message.object_id != self.object_id:
            raise ValueError(
                f"message for {message.object_id!r} sent to the filter of {self.object_id!r}"
            )
        if self.period_ts_ms is not None and message.ts_ms < self.period_ts_ms:
            raise ValueError(
                f"width message as of {message.ts_ms} ms is older than this filter's last "
                f"period boundary {self.period_ts_ms} ms; latency handling (§4) is not supported"
            )
        self.width = float(message.width)
        self.period_ts_ms = message.ts_ms
        return None if self.value is None else self._check(message.ts_ms)
