"""The source side: one bound filter per object (Olston, Jiang, Widom 2003, §1.2, §3.1, §4)."""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence

from tsmon.protocols.filters.bounds import shrunk
from tsmon.protocols.filters.messages import Shrink, StreamedUpdate, WidthMessage

Sent = tuple[int, StreamedUpdate]  # an update and the index of the point that sent it


class SourceFilter:
    """Bound ``[L, H]`` of width ``W`` centred on the last value sent; drops values inside it.

    Period boundaries are the event-time multiples of ``T``. At each one an *adaptive* filter
    shrinks ``W := W·(1−S)`` without a message (§3.1) and re-applies itself to the current value;
    the coordinator shrinks its copy at the same instants. A filter starts with ``W = inf`` (the
    object is in no query) until a width message sets it.

    Width messages carry an absolute width as of their timestamp ``t_m``. A message from the
    future (``t_m`` after this filter's time) is held until the filter's time reaches ``t_m``; a
    late one is applied with the shrinks of every boundary passed since ``t_m`` replayed, so the
    width equals the coordinator's to the bit (both evaluate :func:`~tsmon.protocols.filters.
    bounds.shrunk` from the message's period). Time moves in closed form: a jump over ``k``
    periods costs O(log k) float comparisons (the first boundary whose bound drops the value),
    not ``k`` iterations.
    A message older than the last one applied (by sequence number) is ignored. A shrink, or a
    change of adaptivity, is answered with the current value (a *forced* update) so that the
    coordinator learns the narrower bound is in force (§3.4, §4).

    Parameters
    ----------
    object_id
        The object whose updates this filter sees.
    period_ms
        Adjustment period ``T`` in milliseconds (event time); ``None`` until the coordinator
        chooses it (the first width message carrying ``period_ms``): no shrinks until then.
    shrink
        Shrink percentage ``S`` in ``[0, 1)``.
    value
        The object's current value when the filter starts after it (sent once a width
        message makes the width finite), else ``None``.

    Examples
    --------
    >>> from tsmon.protocols.filters.messages import Growth
    >>> f = SourceFilter("a", period_ms=10, shrink=0.5)
    >>> f.apply(Shrink("a", 2.0, 0, seq=1), 0)    # no value yet: nothing to reply with
    []
    >>> f.observe(0, 10.0)                         # the first value is always sent
    [StreamedUpdate(object_id='a', value=10.0, ts_ms=0, width_seq=1, forced=False, seq=1)]
    >>> f.observe(5, 10.9)                         # inside [9, 11]: dropped
    []
    >>> f.advance(10)                              # W := 1.0, [9.5, 10.5] no longer holds 10.9
    [StreamedUpdate(object_id='a', value=10.9, ts_ms=10, width_seq=1, forced=False, seq=2)]
    >>> f.apply(Growth("a", 4.0, 0, seq=2), 12)    # late: as of t=0, one shrink since
    []
    >>> f.width, (f.low, f.high)
    (2.0, (9.9, 11.9))
    """

    def __init__(
        self, object_id: str, period_ms: int | None, shrink: float, value: float | None = None
    ) -> None:
        self.period_ms = None if period_ms is None else check_period(period_ms)
        if not 0 <= shrink < 1:
            raise ValueError(f"shrink S must be in [0, 1), got {shrink}; e.g. pass 0.05")
        self.object_id = object_id
        self.factor = 1.0 - float(shrink)
        self.base = math.inf  # the width as of period `anchor` (§3.1 shrinks in closed form)
        self.anchor = 0
        self.width = math.inf
        self.adaptive = False
        self.centre: float | None = None
        self.value = value  # the object's current value, if the filter starts after it
        self.now_ms: int | None = None
        self.width_seq: int | None = None
        self.sent = 0  # updates sent so far: the seq of the last one
        self.sent_ms: int | None = None  # the time the last one is stamped
        self.held: list[WidthMessage] = []
        self.uniform: float | None = None  # the uniform static width, once told (tuning)
        self.shadow_centre: float | None = None
        self.shadow = 0  # updates a static filter of width `uniform` would have sent

    def __getstate__(self) -> tuple:
        """Compact (a Spark host pickles every source node each batch): the fields in order,
        not a dict of their names."""
        return (
            self.period_ms, self.object_id, self.factor, self.base, self.anchor, self.width,
            self.adaptive, self.centre, self.value, self.now_ms, self.width_seq, self.sent,
            self.sent_ms, self.held, self.uniform, self.shadow_centre, self.shadow,
        )  # fmt: skip

    def __setstate__(self, state: tuple) -> None:
        (
            self.period_ms, self.object_id, self.factor, self.base, self.anchor, self.width,
            self.adaptive, self.centre, self.value, self.now_ms, self.width_seq, self.sent,
            self.sent_ms, self.held, self.uniform, self.shadow_centre, self.shadow,
        ) = state  # fmt: skip

    @property
    def low(self) -> float:
        """Lower end ``L = V − W/2`` of the bound (§1.2); ``-inf`` before any value is sent."""
        return -math.inf if self.centre is None else self.centre - self.width / 2

    @property
    def high(self) -> float:
        """Upper end ``H = V + W/2`` of the bound (§1.2); ``inf`` before any value is sent."""
        return math.inf if self.centre is None else self.centre + self.width / 2

    def _escaped(self) -> bool:
        if self.value is None or math.isinf(self.width):
            return False
        # §1.2: the filter drops V with L_O <= V <= H_O
        return self.centre is None or not (self.low <= self.value <= self.high)

    def _send(self, ts_ms: int, forced: bool) -> list[StreamedUpdate]:
        if self.value is None or not (forced or self._escaped()):
            return []
        self.centre = self.value  # §1.2: recentre on the value sent
        self.sent += 1  # §4: orders this update after any earlier one with the same ts_ms
        self.sent_ms = ts_ms
        shadow = None if self.uniform is None else self.shadow
        return [
            StreamedUpdate(
                self.object_id, self.value, ts_ms, self.width_seq, forced, self.sent, shadow
            )
        ]

    def advance(self, now_ms: int) -> list[StreamedUpdate]:
        """Move this filter's event time to ``now_ms``, running every boundary on the way.

        Between held messages falling due nothing but the shrinks happens, so each stretch is
        one step in closed form: the value is sent at most once, at the first boundary whose
        bound no longer holds it (then it is the centre and stays inside).
        """
        self._check_time(now_ms)
        start = now_ms if self.now_ms is None else self.now_ms
        out: list[StreamedUpdate] = []
        first, last = 1, 0  # no boundaries while the period is not chosen
        if self.period_ms is not None:
            first, last = start // self.period_ms + 1, now_ms // self.period_ms
        while first <= last:
            due = [m.ts_ms for m in self.held if m.ts_ms <= last * self.period_ms]
            # the next boundary releasing a held message, else the last one
            stop = min([-(-t // self.period_ms) for t in due] + [last])
            stop = max(stop, first)
            escape = self.first_escape(first, stop)
            if escape is not None:
                out += self._boundary(escape)
            out += self._boundary(stop)
            first = stop + 1
        self.now_ms = now_ms
        return out + self._release(now_ms)

    def _boundary(self, k: int) -> list[StreamedUpdate]:
        """Boundary ``k``: shrink (§3.1), release due messages, re-apply the filter."""
        boundary = k * self.period_ms
        self.now_ms = boundary
        self._set_period(k)
        return self._release(boundary) + self._send(boundary, forced=False)

    def _set_period(self, k: int) -> None:
        if self.adaptive:
            self.width = shrunk(self.base, self.factor, k - self.anchor)  # W·(1 − S)^k

    def first_escape(self, first: int, stop: int) -> int | None:
        """The first boundary ``k`` in ``[first, stop)`` (periods) where the shrunk bound no
        longer holds the current value, with no message applied on the way; ``None`` if none."""
        if not self.adaptive or first >= stop:
            return None
        saved, lo, hi = self.width, first, stop  # the width only narrows: monotone in k
        while lo < hi:
            mid = (lo + hi) // 2
            self.width = shrunk(self.base, self.factor, mid - self.anchor)
            if self._escaped():
                hi = mid
            else:
                lo = mid + 1
        self.width = saved
        return lo if lo < stop else None

    def observe(self, now_ms: int, value: float) -> list[StreamedUpdate]:
        """Take the object's new exact value; return what to send (often nothing)."""
        if not math.isfinite(value):
            raise ValueError(
                f"value of {self.object_id!r} must be finite, got {value} at {now_ms} ms; "
                "reject it before the filter"
            )
        out = self.advance(now_ms)
        self.value = float(value)
        if self.uniform is not None:  # the static uniform filter this one is compared with
            c, half = self.shadow_centre, self.uniform / 2
            if c is None or not (c - half <= self.value <= c + half):
                self.shadow += 1
                self.shadow_centre = self.value
        return out + self._send(now_ms, forced=False)

    def observe_many(self, now_ms: Sequence[int], values: Sequence[float]) -> list[Sent]:
        """:meth:`observe` of each ``(now_ms[i], values[i])`` in turn, in bulk; returns what
        to send as ``(i, update)``, ``i`` the point that sent it (in the order sent).

        The same updates, to the bit: with no message held and no static filter shadowed, the
        bound ``[L, H]`` changes only where an update recentres it (§1.2) or a boundary
        shrinks it (§3.1, ``W·(1−S)^k``), so the points before the first one that sends (its
        own value leaves ``[L, H]``, or the last value leaves the bound of a boundary crossed
        before it) are dropped in one step, that one is observed alone, and the scan goes on
        from the next. The scan compares each value with the bound and nothing else.
        """
        at, v = list(now_ms), list(values)
        late = self.now_ms is not None and at and at[0] < self.now_ms
        if self.held or self.uniform is not None or late or not _bulk(at, v):
            return [(i, u) for i in range(len(at)) for u in self.observe(at[i], v[i])]
        out: list[Sent] = []
        i, n = 0, len(at)
        while i < n:
            j = self._first_send(at, v, i)
            if j > i:  # points i .. j−1 dropped: their stretch of time, in one step
                self.now_ms, self.value = at[j - 1], v[j - 1]
                if self.period_ms is not None:
                    self._set_period(self.now_ms // self.period_ms)
            if j == n:
                break
            out += [(j, u) for u in self.observe(at[j], v[j])]
            i = j + 1
        return out

    def _first_send(self, at: list[int], v: list[float], i: int) -> int:
        """Index of the first point from ``i`` that may send (``len(v)`` if none can), the
        centre as it is: never after the first that sends (one before it is observed alone)."""
        if math.isinf(self.width) and not self.adaptive:
            return len(v)  # in no query: never sends
        if self.centre is None:
            return i  # the first value is sent once the width is finite
        shrinking = self.adaptive and self.period_ms is not None
        period = self.period_ms or 1
        k = (self.now_ms if self.now_ms is not None else at[i]) // period
        last = self.value
        half = self.width / 2
        low, high = self.centre - half, self.centre + half
        for j in range(i, len(v)):
            if shrinking and at[j] // period != k:  # boundaries crossed: the bound shrank
                k = at[j] // period
                half = shrunk(self.base, self.factor, k - self.anchor) / 2
                low, high = self.centre - half, self.centre + half
                if last is not None and not (low <= last <= high):
                    return j
            last = v[j]
            if not (low <= last <= high):  # §1.2: the filter drops V with L <= V <= H
                return j
        return len(v)

    def apply(
        self, message: WidthMessage, now_ms: int, before: tuple[int, float] | None = None
    ) -> list[StreamedUpdate]:
        """Receive a growth or shrink message at ``now_ms``; returns what to send, if anything.

        ``before``: ``(t, v)``, the caller's word that the object's value was ``v`` from ``t``
        until ``now_ms`` excluded. If the filter is at ``now_ms`` already and the message is
        not from later, it is applied as of ``t``: a reply is stamped ``t`` with ``v`` (§4: it
        confirms the new width from then), then the value at ``now_ms`` is taken again, and
        sent after a reply if it differs from ``v`` or if an update stamped ``now_ms`` with
        another value went out before (the coordinator, in timestamp order, would take that
        one after the reply): the centres of both ends agree. Else (or with ``None``) it is
        applied at ``now_ms``.
        """
        if message.object_id != self.object_id:
            raise ValueError(
                f"message for {message.object_id!r} sent to the filter of {self.object_id!r}"
            )
        self._check_time(now_ms)  # before holding the message: a refused call changes nothing
        self.held.append(message)
        if before is None or self.now_ms != now_ms or not message.ts_ms <= before[0] < now_ms:
            return self.advance(now_ms)
        value, self.value = self.value, before[1]
        # §4: the coordinator orders by timestamp, so an update at now_ms comes after the reply
        stale = self.sent_ms == now_ms and self.centre != before[1]
        out = self._release(now_ms, before[0])  # advance(now_ms), as of `t`
        self.value = value
        return out + self._send(now_ms, forced=bool(out) and (stale or value != before[1]))

    def _check_time(self, now_ms: int) -> None:
        if self.now_ms is not None and now_ms < self.now_ms:
            raise ValueError(
                f"time of {self.object_id!r} must not go back: at {self.now_ms} ms, got {now_ms} ms"
            )

    def _release(self, now_ms: int, stamp_ms: int | None = None) -> list[StreamedUpdate]:
        """Apply the held messages due at ``now_ms``; what they send is stamped ``stamp_ms``
        (default ``now_ms``; see :meth:`apply`)."""
        due = [m for m in self.held if m.ts_ms <= now_ms]
        if not due:
            return []
        self.held = [m for m in self.held if m.ts_ms > now_ms]
        out: list[StreamedUpdate] = []
        for message in sorted(due, key=lambda m: m.seq):
            if self.period_ms is None and message.period_ms is not None:
                self.period_ms = check_period(message.period_ms)  # the coordinator chose T
            if message.uniform is not None:
                self.uniform = message.uniform
                if self.shadow_centre is None:
                    self.shadow_centre = self.centre
            if self.width_seq is not None and message.seq <= self.width_seq:
                continue  # older than a message already applied
            changed = isinstance(message, Shrink) or message.adaptive != self.adaptive
            period = self.period_ms or 1  # adaptive only once T is known (Coordinator)
            self.base, self.anchor = float(message.width), message.ts_ms // period
            self.adaptive, self.width_seq = message.adaptive, message.seq
            self.width = self.base
            self._set_period(now_ms // period)  # §3.1, the shrinks since t_m
            width = self.width
            stamp = now_ms if stamp_ms is None else stamp_ms
            out += self._send(stamp, forced=changed and math.isfinite(width))
        return out


def _bulk(at: list[int], values: list[float]) -> bool:
    """Whether points can go in bulk: finite values at non-decreasing times (else the
    point-by-point path raises at the bad one, as :meth:`SourceFilter.observe` does)."""
    return all(map(math.isfinite, values)) and all(map(operator.le, at, at[1:]))


def check_period(period_ms: object) -> int:
    """An adjustment period ``T`` as whole milliseconds ``>= 1``, else ``ValueError``."""
    if not (
        isinstance(period_ms, numbers.Real)
        and not isinstance(period_ms, bool)
        and math.isfinite(period_ms)
        and period_ms >= 1
        and period_ms == int(period_ms)
    ):
        raise ValueError(f"period T must be a whole number of ms >= 1, got {period_ms}")
    return int(period_ms)
