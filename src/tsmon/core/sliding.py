"""Sliding windows (the last N points, or the last span of event time) maintained online.

Every statistic is computed from the points the window holds plus the new ones, never by
rescanning history: moments (sum, mean, variance, slope) from prefix sums, minimum and maximum
from a sparse table over those points (or, for windows longer than the new points, running
maxima back and forth from the first new point), count, first and last by position. A batch of
new points is processed at once with numpy, yet each point gets the statistics of the window
*as of that point* (per-point semantics): the prefix sums differenced at each window's ends
give every intermediate window.

The windows of one shape over many series advance together (:func:`advance_sliding`): their
points are laid end to end, one segment per series, and every step runs once over all of
them (a columnar bank), so a call costs per point, not per series and window; one window's
``advance`` is a bank of one. A window pins in the register the points it holds, so they are
always there.

Precision: each window's new points are taken in chunks of at most 8 windows, in points held
and (time windows) in span (and at least 32 points); each chunk's sums are about anchors at
the means of its first point's window, with prefix sums of its own, so the anchors stay near
every window of the chunk and no rounding is carried from one chunk (or series) to the next.
Points whose statistics are still so small next to the sums they were computed from that
subtracting could lose digits (``ill_conditioned``: sum and mean, variance, time moment,
slope) are recomputed exactly from the points held. Every statistic stays within 1e-9
relative of the exact value.

``coverage`` says how much of the window's span is observed history: the share of the span
after the series' first point (of a count window, of its N points), so it is < 1 until a
whole span has passed since the first point. A window inserted while running is populated at
once from the register (which holds at least what the other windows of the series pin); where
history was already evicted it counts only from the oldest point still complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tsmon.core.moments import (
    SQUARE_ROWS,
    exact_stats,
    features,
    ill_conditioned,
    stats_from_sums,
    tiny_windows,
)
from tsmon.core.register import Register
from tsmon.core.rmq import crossing_max, range_max
from tsmon.core.view import WindowView, check_follows, covered_from, first_and_rate
from tsmon.core.window_spec import WindowKind, WindowSpec

_MOMENTS = frozenset({"sum", "mean", "var", "stddev", "slope"})
_CANCEL = frozenset({"sum", "mean"})  # statistics of values of both signs that may cancel
# a window's new points are advanced in chunks of 8 windows, so the anchors stay near every
# window of a chunk: 8 times a count window's size (at least 2,048 points), 8 spans of a time
# window (in blocks of at least 32 points)
_CHUNK_WINDOWS, _MIN_CHUNK, _MIN_COUNT_CHUNK = 8, 32, 256
# running maxima cost ~10 us per segment and ~4 ns per new point, the sparse table ~1.2 ns per
# value and level: the break-even measured in units of ~1 ns (``_maxima``)
_SEGMENT_COST, _POINT_COST = 10_000, 4


class SlidingWindow:
    """A count or time window of one series, shared by every query that reads it
    (reference-counted).

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(retention_ms=None))
    >>> win = SlidingWindow(WindowSpec.count(2), reg)
    >>> p0, p1 = reg.append(np.array([0, 1000, 2000]), np.array([1.0, 5.0, 3.0]))
    >>> view = win.advance(p0, p1, {"mean", "max", "coverage"})
    >>> view.stat("mean").tolist(), view.stat("max").tolist(), view.stat("coverage").tolist()
    ([1.0, 3.0, 4.0], [1.0, 5.0, 5.0], [0.5, 1.0, 1.0])
    """

    def __init__(self, spec: WindowSpec, register: Register, until: int | None = None) -> None:
        if spec.kind is WindowKind.LANDMARK:
            raise ValueError(f"{spec} is a landmark window; open it with open_window")
        self.spec = spec
        self.register = register
        self.refcount = 0
        self.complete_from_ts = register.complete_from_ts
        self.populate(register.end if until is None else until)

    def fork(self, until: int) -> SlidingWindow:
        """A private window as of position ``until``."""
        return SlidingWindow(self.spec, self.register, until)

    def populate(self, until: int) -> None:
        """Set the window to hold, as of position ``until`` (exclusive), what history allows."""
        self.end = until
        self.start = self._start_as_of(until)
        self._pin()

    def _start_as_of(self, until: int) -> int:
        reg = self.register
        if until <= reg.start:
            return until
        if self.spec.kind is WindowKind.COUNT:
            return max(until - self.spec.size, reg.start)
        last_ts = int(reg.ts(until - 1, until)[0])
        return max(int(reg.search(last_ts - self.spec.size, side="right")), reg.start)

    def _pin(self) -> None:
        self.register.pin(self, self.start)

    def close(self) -> None:
        """Release the register points this window pinned."""
        self.register.unpin(self)

    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)`` (just appended) and return, for each of
        them, the statistics in ``wanted`` of the window as of that point."""
        return advance_sliding([self], [(p0, p1)], wanted)


def advance_sliding(
    windows: Sequence[SlidingWindow], spans: Sequence[tuple[int, int]], wanted: Iterable[str]
) -> WindowView:
    """Advance windows of one shape, each over the register points ``[p0, p1)`` just appended
    to its series (at least one), at once; one view of their points end to end."""
    spec, wanted = windows[0].spec, frozenset(wanted)
    bank = _Bank(windows, spans)
    g, st, T, X = bank.g, bank.starts, bank.ts, bank.values
    n = (g - st + 1).astype(np.float64)
    stats = {"count": n} if "count" in wanted else {}
    if wanted & _MOMENTS:
        stats |= _moments(bank, n, wanted)
    asked = [(name, sign) for name, sign in (("max", 1.0), ("min", -1.0)) if name in wanted]
    if asked:  # min = -max(-x), both from one sparse table
        signed = np.stack([sign * X for _, sign in asked])
        for (name, sign), row in zip(asked, _maxima(signed, bank), strict=True):
            stats[name] = sign * row
    ts, values = T.take(g), X.take(g)
    if "first" in wanted or "rate" in wanted:
        first_and_rate(stats, T.take(st), X.take(st), ts, values)
    if "last" in wanted:
        stats["last"] = values
    if "coverage" in wanted:
        if spec.kind is WindowKind.COUNT:
            stats["coverage"] = np.minimum(n / spec.size, 1.0)
        else:
            covered = [covered_from(w.register, w.complete_from_ts) for w in windows]
            start = np.repeat(np.array(covered, dtype=np.int64), bank.new)
            stats["coverage"] = np.clip((ts - start + 1) / spec.size, 0.0, 1.0)
    last_starts = st[np.cumsum(bank.new) - 1] - bank.offsets + bank.base
    for window, (_, p1), start in zip(windows, spans, last_starts.tolist(), strict=True):
        window.start, window.end = start, p1
        window._pin()
    return WindowView(spec, stats)


class _Bank:
    """The points of several windows of one shape end to end: each window's points from the
    start of its first new point's window (``base``, a register position) to its last new one
    (a segment), with every new point's index ``g`` and its window's first index ``starts`` in
    that layout."""

    def __init__(self, windows: Sequence[SlidingWindow], spans: Sequence[tuple[int, int]]):
        spec = windows[0].spec
        held = np.array([w.start for w in windows], dtype=np.int64)
        p0s, p1s = (np.array(side, dtype=np.int64) for side in zip(*spans, strict=True))
        self.new = p1s - p0s
        registers = [w.register for w in windows]
        for w, (p0, p1) in zip(windows, spans, strict=True):
            check_follows(w.spec, w.end, p0, p1)
        if spec.kind is WindowKind.COUNT:
            self.base = np.maximum(p0s - (spec.size - 1), held)
        else:  # each segment searched alone: a small array, in cache (one search over the
            # bank took ~8% of the ingest's time)
            held_ts = map(Register.ts, registers, held.tolist(), p1s.tolist())
            pairs = zip(held_ts, self.new.tolist(), strict=True)
            found = [np.searchsorted(t, t[-k:] - spec.size, side="right") for t, k in pairs]
            self.base = held + [f[0] for f in found]
        bounds = (registers, self.base.tolist(), p1s.tolist())
        ts, values = list(map(Register.ts, *bounds)), list(map(Register.values, *bounds))
        self.ts, self.values = np.concatenate(ts), np.concatenate(values)
        self.offsets = np.concatenate(([0], np.cumsum(p1s - self.base)[:-1]))
        self.first_new = first_new = self.offsets + (p0s - self.base)
        before = np.concatenate(([0], np.cumsum(self.new)[:-1]))
        rel = np.arange(int(self.new.sum())) - np.repeat(before, self.new)  # within the window
        self.g = rel + np.repeat(first_new, self.new)
        floor = np.repeat(self.offsets, self.new)
        if spec.kind is WindowKind.COUNT:
            self.starts = np.maximum(self.g - (spec.size - 1), floor)
            chunk = rel // (_CHUNK_WINDOWS * max(spec.size, _MIN_COUNT_CHUNK))
        else:
            self.starts = np.concatenate(found) + np.repeat(
                self.offsets + held - self.base, self.new
            )
            block = self.g - rel % _MIN_CHUNK  # the first point of each block of 32
            since = self.ts[block] - np.repeat(self.ts[first_new], self.new)
            chunk = since // (_CHUNK_WINDOWS * spec.size)
        head = np.ones(len(self.g), dtype=bool)
        head[1:] = (chunk[1:] != chunk[:-1]) | (rel[1:] == 0)
        self.heads = np.flatnonzero(head)  # the first new point of every chunk


def _maxima(rows: np.ndarray, bank: _Bank) -> np.ndarray:
    """The maximum of each row over the window of each new point: where every window reaches
    back before its segment's first new point (windows longer than the points appended) and
    the sparse table would cost more (long windows), from running maxima about that point."""
    st, g, new = bank.starts, bank.g, bank.new
    levels = int(np.max(g - st) + 1).bit_length()  # the sparse table's
    work = len(bank.values) * levels
    if work > _SEGMENT_COST * len(new) + _POINT_COST * len(g):
        heads = np.cumsum(new) - new  # each segment's first new point, among the new points
        if (np.maximum.reduceat(st, heads) < bank.first_new).all():
            return crossing_max(rows, st, bank.first_new, new)
    return range_max(rows, st, g)


def _moments(bank: _Bank, n: np.ndarray, wanted: frozenset[str]) -> dict[str, np.ndarray]:
    """Moment statistics of the window of each new point: per chunk, the feature sums of its
    first window plus running sums of the points entering minus those of the points leaving,
    about anchors at the middle of the first window; ill-conditioned points recomputed
    exactly."""
    g, st, T, X, heads = bank.g, bank.starts, bank.ts, bank.values, bank.heads
    tails = np.append(heads[1:], len(g)) - 1
    first, lead = st[heads], g[heads] + 1 - st[heads]  # the chunk's first window
    lengths = g[tails] + 1 - first  # points from the first window to the chunk's last
    at = np.concatenate(([0], np.cumsum(lengths)[:-1]))  # where each chunk's points start
    if len(heads) == len(bank.new):  # a chunk per segment: the segments themselves
        ts, values = T, X
    else:
        take = np.arange(int(lengths.sum())) - np.repeat(at - first, lengths)
        ts, values = T.take(take), X.take(take)  # (take: faster than indexing)
    bounds = np.stack((at, at + lead), axis=1).reshape(-1)  # each chunk's first window
    if bounds[-1] == len(values):  # the last chunk's first window runs to the end
        bounds = bounds[:-1]
    anchor = np.add.reduceat(values, bounds)[::2] / lead
    anchor_t = (ts[at] + ts[at + lead - 1]) // 2
    slope = "slope" in wanted  # the time rows only for a slope
    at_t = np.repeat(anchor_t, lengths) if slope else 0
    rows = features(ts, values, np.repeat(anchor, lengths), at_t, slope)
    # window sums = the first window's + the entering points' - the leaving points', from
    # running sums of each chunk's own (from zero: no rounding carried over); where the windows
    # are shorter than the chunk, one running sum over all its points gives both ends
    leaving = st[tails] - first  # the points that leave the windows of a chunk
    single = lead <= leaving
    window = np.add.reduceat(rows, bounds, axis=1)[:, ::2]
    window[:, single] = 0.0
    room = np.where(single, lengths, leaving) + 1
    at_leaving = np.concatenate(([0], np.cumsum(room)[:-1]))
    # per new point: the sums of its chunk's entering points, from zero at the chunk's head
    entering = np.empty((len(rows), len(g)))
    entering[:, heads] = 0.0
    left = np.empty((len(rows), int(room.sum())))  # each chunk's: from zero too
    left[:, at_leaving] = 0.0
    columns = [v.tolist() for v in (heads, tails - heads + 1, at, lengths, lead, at_leaving)]
    for h, k, lo, size, first_k, out, leave, one in zip(
        *columns, leaving.tolist(), single.tolist(), strict=True
    ):
        if one:
            np.cumsum(rows[:, lo : lo + size], axis=1, out=left[:, out + 1 : out + size + 1])
            entering[:, h : h + k] = left[:, out + first_k : out + first_k + k]
        else:
            enter = lo + first_k
            np.cumsum(rows[:, enter : enter + k - 1], axis=1, out=entering[:, h + 1 : h + k])
            np.cumsum(rows[:, lo : lo + leave], axis=1, out=left[:, out + 1 : out + leave + 1])
    per_chunk = tails - heads + 1  # each chunk's value for each of its new points: repeated
    ends = entering  # in place, as the next steps: fewer large arrays to allocate and fill
    ends += np.repeat(window, per_chunk, axis=1)  # (not gathered: faster)
    begins, starts = np.empty_like(ends), np.repeat(at_leaving - first, per_chunk) + st
    for row, into in zip(left, begins, strict=True):  # row by row: 1-D takes are faster
        np.take(row, starts, out=into, mode="clip")  # (in range: "clip" is unbuffered)
    squares = SQUARE_ROWS[len(rows)]
    scale = ends[squares] + begins[squares]  # the magnitudes subtracted
    sums = np.subtract(ends, begins, out=ends)
    point_anchor = np.repeat(anchor, per_chunk)
    stats = stats_from_sums(n, sums, point_anchor, wanted)
    single = n == 1  # exact without sums: its value
    for name in _CANCEL & wanted:
        stats[name][single] = X[g[single]]
    ill = ill_conditioned(n, sums, scale, point_anchor, 0.0, wanted - _CANCEL)
    if wanted & _CANCEL:  # only where the chunk holds values of both signs
        low, high = np.minimum.reduceat(values, at), np.maximum.reduceat(values, at)
        mixed = np.flatnonzero(np.repeat((low < 0) & (high > 0), per_chunk))
        if len(mixed):
            terms = np.repeat(lengths, per_chunk)[mixed].astype(np.float64)
            ill[mixed] |= ill_conditioned(
                n[mixed],
                sums[:, mixed],
                scale[:, mixed],
                point_anchor[mixed],
                terms,
                wanted & _CANCEL,
            )
    if wanted & {"var", "stddev", "slope"}:  # squares of tiny values underflow
        ill |= tiny_windows(X, st, g + 1) & (n >= 2)
    for j in ill.nonzero()[0].tolist():
        lo, hi = int(st[j]), int(g[j]) + 1
        for name, value in exact_stats(T[lo:hi], X[lo:hi], wanted).items():
            stats[name][j] = value
    return stats
