"""Exponential histograms: the count of 1s or the sum of integers over the last ``N`` items.

Datar, Gionis, Indyk and Motwani, "Maintaining Stream Statistics over Sliding Windows" (2002).
Buckets of power-of-two sizes, at most ``ceil(k/2) + 1`` per size, ``k = ceil(1/eps)``, answer
any window ``n <= N`` within relative error ``eps`` from O((1/eps) log N) buckets, where an exact
answer needs the whole window. Positions are counted by the structure itself (item ``t`` is the
``t``-th value passed to ``update``/``extend``); nothing reads a clock.

Two deliberate readings of the paper, both keeping its bounds:

* A merged bucket keeps the timestamp of its *newer* half. §2.1 prints "the timestamp of the older
  bucket", but a bucket's timestamp is defined as that of its most recent 1, and only the newer
  one keeps a live bucket alive while part of it is in the window.
* The oldest live bucket, of size ``C``, counts ``(C + 1) / 2`` (the midpoint of the 1..C units
  it may still hold) rather than Fact 1's ``C / 2``: a lone size-1 bucket is then exact, where
  ``C / 2`` is off by 1/2 and breaks Invariant 1 at ``j = 1``. Error ``(C - 1) / 2 < eps * true``.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable

import numpy as np

__all__ = ["BasicCounting", "WindowSum", "bucket_bound", "l_canonical"]


def _k_and_l(eps: float) -> tuple[int, int]:
    if not 0.0 < eps <= 1.0:
        raise ValueError(f"eps must be in (0, 1], got {eps!r}; pass e.g. eps=0.1 for 10 %")
    k = math.ceil(1.0 / eps)  # §2.1: k = ceil(1/eps)
    return k, math.ceil(k / 2)  # §2.1: k/2 replaced by ceil(k/2) when k is odd


def bucket_bound(N: int, eps: float, R: int = 1) -> int:
    """Most buckets an exponential histogram over ``N`` items of values in ``[0, R]`` may hold.

    Theorem 1 (``R = 1``) and Theorem 5 (SUM): ``(k/2 + 1)(log2(2NR/k + 1) + 1)`` with
    ``k = ceil(1/eps)``; for odd ``k``, ``k/2`` is ``ceil(k/2)`` (§2.1), so ``2NR/k`` reads
    ``NR/ceil(k/2)``. Rounded down: bucket counts are integers.

    Examples
    --------
    >>> bucket_bound(1000, 0.1)  # k = 10: 6 * (log2(201) + 1) = 51.9
    51
    >>> bucket_bound(1000, 0.1, R=255)
    99
    """
    if N < 1 or R < 1:
        raise ValueError(f"N and R must be >= 1, got N={N}, R={R}")
    _, half = _k_and_l(eps)
    return math.floor((half + 1) * (math.log2(N * R / half + 1) + 1))


def l_canonical(S: int, half: int) -> list[int]:
    """Counts ``k_0..k_j`` of buckets of size ``2**i`` that hold ``S`` units (§4, Lemma 2).

    With the paper's ``l = half = ceil(k/2)``: ``l <= k_i <= l + 1`` below the top size and
    ``1 <= k_j <= l + 1`` at it. The representation is unique, so it is the shape every
    exponential histogram of total ``S`` has; ``check_invariants`` compares against it.

    Examples
    --------
    >>> l_canonical(5, 1), l_canonical(31, 2)
    ([1, 2], [3, 2, 2, 2])
    """
    if S < 0 or half < 1:
        raise ValueError(f"need S >= 0 and half >= 1, got S={S}, half={half}")
    if S == 0:
        return []
    j = (
        S // half + 1
    ).bit_length() - 1  # largest j with 2^j <= S/l + 1 (§4, Procedure l-Canonical)
    rest = S - (2**j - 1) * half  # S' = S - (2^j - 1) l
    top, low = divmod(rest, 2**j)  # k_j = m with m 2^j <= S' < (m+1) 2^j; S-hat = S' - m 2^j
    counts = [half + ((low >> i) & 1) for i in range(j)]  # k_i = l + b_i
    return [*counts, top] if top else counts


class _ExponentialHistogram:
    """Buckets per size level, oldest on the left; shared expiry, query and invariant checks."""

    def __init__(self, N: int, eps: float) -> None:
        if not isinstance(N, (int, np.integer)) or N < 1:
            raise ValueError(f"N must be a positive integer number of items, got {N!r}")
        self.N = int(N)
        self.eps = float(eps)
        self.k, self.half = _k_and_l(eps)  # k and l of §2.1
        self.R = 1  # largest value; WindowSum raises it
        self.time = 0  # position of the latest item, 1-based (Fig. 1's arrival time)
        self._levels: list[deque[int]] = []  # _levels[r]: timestamps of the size-2^r buckets
        self._total = 0  # TOTAL of §2.1

    @property
    def bucket_count(self) -> int:
        """Number of buckets held: the memory, in units of (timestamp, size) pairs."""
        return sum(len(q) for q in self._levels)

    def buckets(self) -> list[tuple[int, int]]:
        """``(timestamp, size)`` of every bucket, oldest first."""
        return [(t, 2**r) for r in reversed(range(len(self._levels))) for t in self._levels[r]]

    def _expire(self) -> None:
        """Algorithm Insert, step 1: drop the oldest bucket(s) whose timestamp left the window."""
        cutoff = self.time - self.N
        levels = self._levels
        while levels:
            top = levels[-1]
            while top and top[0] <= cutoff:
                top.popleft()
                self._total -= 2 ** (len(levels) - 1)
            if top:
                return
            levels.pop()

    def _estimate(self, n: int | None) -> tuple[float, float]:
        """``(estimate, error)``: the midpoint of the 1..C units the oldest live bucket (size
        ``C``) may still hold, and ``(C - 1) / 2``, the most it can be off (Fact 1)."""
        n = self.N if n is None else n
        if not 0 <= n <= self.N:
            raise ValueError(f"window n must be in [0, N={self.N}] items, got {n}")
        cutoff = self.time - n
        levels = self._levels
        if levels and levels[-1][0] > cutoff:  # every bucket is in: TOTAL - (LAST - 1)/2, O(1)
            half = (2 ** (len(levels) - 1) - 1) / 2
            return self._total - half, half
        below = 0  # sizes of the levels under r, all live: sizes grow with age
        for r, q in enumerate(levels):
            live = len(q) - bisect_right(q, cutoff)
            if live:  # oldest live bucket at level r, or at r - 1 when none is live here
                if live < len(q):
                    half = (2**r - 1) / 2
                    return below + live * 2**r - half, half  # Fact 1, midpoint of 1..C
            elif r:
                half = (2 ** (r - 1) - 1) / 2
                return below - half, half
            else:
                return 0.0, 0.0
            below += len(q) * 2**r
        return float(below), 0.0

    def error(self, n: int | None = None) -> float:
        """Guaranteed absolute error of the estimate over the last ``n`` items (default ``N``):
        the exact answer lies within ``estimate ± error``, and ``error <= eps * exact``."""
        return self._estimate(n)[1]

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` unless Invariant 2 (§2.1) and the bucket bound hold.

        Sizes are powers of two, nondecreasing with age; every size but the largest has
        ``ceil(k/2)`` or ``ceil(k/2) + 1`` buckets, the largest 1 to ``ceil(k/2) + 1`` (this
        is the l-canonical shape of TOTAL, §4); timestamps are live and ordered; TOTAL is exact.
        """
        problems = []
        counts, shape = [len(q) for q in self._levels], l_canonical(self._total, self.half)
        if counts != shape:
            problems.append(f"bucket counts per size {counts} != l-canonical {shape}")
        stamps = [t for t, _ in self.buckets()]
        if any(a > b for a, b in itertools.pairwise(stamps)):
            problems.append(f"timestamps not ordered by age: {stamps}")
        if stamps and (stamps[0] <= self.time - self.N or stamps[-1] > self.time):
            problems.append(f"timestamps {stamps[0]}..{stamps[-1]} not live at {self.time}")
        if sum(s for _, s in self.buckets()) != self._total:
            problems.append(f"TOTAL {self._total} != sum of bucket sizes")
        bound = bucket_bound(self.N, self.eps, self.R)
        if self.bucket_count > bound:
            problems.append(f"{self.bucket_count} buckets > Theorem 1/5 bound {bound}")
        if problems:
            raise AssertionError("; ".join(problems))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(N={self.N}, eps={self.eps}, time={self.time}, "
            f"buckets={self.bucket_count})"
        )


class BasicCounting(_ExponentialHistogram):
    """Number of 1s among the last ``n <= N`` bits, within relative error ``eps`` (§2).

    Insert is Algorithm Insert of §2.1: O(1) amortized, O(log N) worst case (merge cascade).

    Examples
    --------
    >>> bits = np.random.default_rng(0).integers(0, 2, 5000)
    >>> eh = BasicCounting(N=1000, eps=0.1).extend(bits)
    >>> print(eh.count(), bits[-1000:].sum())  # within 10 %
    495.5 482
    >>> print(eh.count(10), bits[-10:].sum())  # any window n <= N from the same buckets
    6.5 6
    >>> print(eh.bucket_count, bucket_bound(1000, 0.1))
    35 51
    """

    def update(self, bit: int) -> BasicCounting:
        """Append one bit (0/1) and return the instance."""
        if bit not in (0, 1):
            raise ValueError(f"bit must be 0 or 1, got {bit!r}; use WindowSum for integers")
        self.time += 1
        self._expire()
        if bit:
            self._insert_one()
        return self

    def extend(self, bits: Iterable[int] | np.ndarray) -> BasicCounting:
        """Append many bits; same result as ``update`` on each, in O(number of 1s) steps."""
        arr = np.asarray(bits if isinstance(bits, np.ndarray) else list(bits))
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ValueError("bits must all be 0 or 1; use WindowSum for integers")
        base = self.time
        for i in np.flatnonzero(arr).tolist():  # zeros only age buckets: expire at the next 1
            self.time = base + i + 1
            self._expire()
            self._insert_one()
        self.time = base + arr.size
        self._expire()
        return self

    def _insert_one(self) -> None:
        """Algorithm Insert, steps 2-3: a size-1 bucket, then merge the oldest two of any size
        that reached ``ceil(k/2) + 2`` buckets, cascading upward."""
        levels = self._levels
        if not levels:
            levels.append(deque())
        levels[0].append(self.time)
        self._total += 1
        r = 0
        while len(levels[r]) == self.half + 2:
            levels[r].popleft()
            newer = levels[r].popleft()  # merged bucket keeps its most recent 1 (module note)
            if r + 1 == len(levels):
                levels.append(deque())
            levels[r + 1].append(newer)  # newest of the larger size: all those are older
            r += 1

    def count(self, n: int | None = None) -> float:
        """Estimated number of 1s in the last ``n`` bits (default ``N``), relative error <= eps."""
        return self._estimate(n)[0]

    def get(self) -> float:
        """Estimate over the full window of ``N`` bits."""
        return self._estimate(None)[0]


class WindowSum(_ExponentialHistogram):
    """Sum of the last ``n <= N`` integers in ``[0, R]``, within relative error ``eps`` (§4).

    A value ``v`` counts as ``v`` units arriving together. Nonzero values wait in a buffer of
    ``B = ceil(log2(N + 1))`` items (summed exactly by queries); a full buffer is folded in by
    rebuilding the buckets in the l-canonical shape of the new total (Lemma 2), whose bucket
    starts inside the old part are old bucket starts (§4's "never indexed again" observation).
    That is O(B + log(NR)) per B items: O(1 + log(R)/log(N)) amortized (Theorem 5).

    Examples
    --------
    >>> values = np.random.default_rng(1).integers(0, 256, 4000)
    >>> eh = WindowSum(N=1000, eps=0.05, R=255).extend(values)
    >>> print(eh.sum(), values[-1000:].sum())  # within 5 %
    126009.5 128010
    >>> print(eh.bucket_count, bucket_bound(1000, 0.05, 255))
    143 172
    """

    def __init__(self, N: int, eps: float, R: int) -> None:
        super().__init__(N, eps)
        if not isinstance(R, (int, np.integer)) or R < 1:
            raise ValueError(f"R must be a positive integer bound on the values, got {R!r}")
        self.R = int(R)
        self.buffer_size = max(1, math.ceil(math.log2(self.N + 1)))  # B = Theta(log N), §4
        self._buf_t: list[int] = []
        self._buf_v: list[int] = []

    def update(self, value: int) -> WindowSum:
        """Append one integer in ``[0, R]`` and return the instance."""
        if not isinstance(value, (int, np.integer)) or not 0 <= value <= self.R:
            raise ValueError(f"value must be an integer in [0, R={self.R}], got {value!r}")
        self.time += 1
        self._expire()
        if value:
            self._push(int(value))
        return self

    def extend(self, values: Iterable[int] | np.ndarray) -> WindowSum:
        """Append many integers; same buckets as ``update`` on each."""
        arr = np.asarray(values if isinstance(values, np.ndarray) else list(values))
        if arr.size and (
            not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() > self.R
        ):
            raise ValueError(f"values must be integers in [0, R={self.R}]")
        base = self.time
        nz = np.flatnonzero(arr)
        for i, v in zip(nz.tolist(), arr[nz].tolist(), strict=True):
            self.time = base + i + 1
            self._expire()
            self._push(v)
        self.time = base + arr.size
        self._expire()
        return self

    def _push(self, value: int) -> None:
        self._buf_t.append(self.time)
        self._buf_v.append(value)
        if len(self._buf_v) >= self.buffer_size:
            self._flush()

    def _flush(self) -> None:
        """Fold the buffer in: the l-canonical shape of S1 + S2, bucket starts mapped to times."""
        cutoff = self.time - self.N
        items = [(t, v) for t, v in zip(self._buf_t, self._buf_v, strict=True) if t > cutoff]
        self._buf_t, self._buf_v = [], []
        s2 = sum(v for _, v in items)
        # Unit offsets from the newest end: buffer items newest first, then old buckets.
        ends, times, acc = [], [], 0
        for t, v in reversed(items):
            acc += v
            ends.append(acc)
            times.append(t)
        old_heads, acc = {}, s2
        for r, q in enumerate(self._levels):
            for t in reversed(q):
                old_heads[acc] = t
                acc += 2**r
        new_levels: list[deque[int]] = []
        head = 0
        for r, cnt in enumerate(l_canonical(self._total + s2, self.half)):
            stamps = []
            for _ in range(cnt):
                if head < s2:  # starts inside item i: units [ends[i-1], ends[i])
                    stamps.append(times[bisect_right(ends, head)])
                elif head in old_heads:
                    stamps.append(old_heads[head])
                else:
                    raise AssertionError(f"canonical bucket start {head} is no old bucket start")
                head += 2**r
            new_levels.append(deque(reversed(stamps)))  # listed newest first; store oldest left
        self._levels = new_levels
        self._total += s2

    def sum(self, n: int | None = None) -> float:
        """Estimated sum of the last ``n`` values (default ``N``), relative error <= eps."""
        cutoff = self.time - (self.N if n is None else n)
        fresh = sum(v for t, v in zip(self._buf_t, self._buf_v, strict=True) if t > cutoff)
        return fresh + self._estimate(n)[0]

    def get(self) -> float:
        """Estimate over the full window of ``N`` values."""
        return self.sum()

    @property
    def buffered(self) -> int:
        """Items waiting in the buffer (memory beside the buckets, at most ``buffer_size``)."""
        return len(self._buf_v)
