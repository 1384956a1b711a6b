"""Per-stream drifting Brownian motion (DBM) models, estimated online (§3, §4.2, §4.6).

Every stream ``S_i`` is modelled as ``ΔS_i ~ N(μ_i Δt, σ_i² Δt)`` (Eq. 4-5). The query processor
buffers each stream's last ``k`` items and re-estimates ``μ_i`` and ``σ_i`` from them with the
unbiased estimators of Eq. 15-16 (irregular timestamps included) on the schedule of Algorithm 2.

Units: timestamps are integer milliseconds, so ``μ`` is in value units per ms and ``σ`` in value
units per √ms. Linear aggregates ``A = Σ a_i S_i`` (Eq. 2) are rows of a sparse weight matrix;
:func:`aggregate_params` gives their ``μ_A, σ_A`` (Eq. 6), assuming independent streams.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

NO_TS = np.iinfo(np.int64).min  # "no item yet" sentinel for timestamps


def estimate_params(
    ts_ms: ArrayLike, values: ArrayLike, counts: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Unbiased ``(μ̂, σ̂²)`` of a DBM from buffered items (Eq. 15-16), one row per stream.

    Parameters
    ----------
    ts_ms, values : array_like, shape (..., k)
        Items in chronological order; timestamps strictly increasing along the last axis.
    counts : array_like of int, optional
        Number of valid items per row, taken as the *last* ``counts`` columns (a partly filled
        buffer). Default: all ``k``. Rows with fewer than 3 items give ``nan`` (Eq. 16 divides by
        ``k - 2``).

    Returns
    -------
    mu, sigma2 : ndarray
        ``μ̂ = (val_last - val_first) / (ts_last - ts_first)`` and
        ``σ̂² = Σ_j (y_j - δ_j μ̂)² / δ_j / (k - 2)``, per ms and per ms.

    Examples
    --------
    >>> mu, s2 = estimate_params([0, 1, 3, 4], [0.0, 1.0, 2.0, 4.0])
    >>> float(mu), float(s2)      # (4 - 0) / (4 - 0); (0 + 1/2 + 1) / (k - 2)
    (1.0, 0.75)
    """
    ts = np.asarray(ts_ms, dtype=np.float64)
    val = np.asarray(values, dtype=np.float64)
    if ts.shape != val.shape or ts.ndim == 0:
        raise ValueError(
            f"ts_ms and values must have one equal shape (..., k), got {ts.shape} "
            f"and {val.shape}; pass one item per column"
        )
    k = ts.shape[-1]
    cnt = np.full(ts.shape[:-1], k) if counts is None else np.asarray(counts, dtype=np.int64)
    first = np.clip(k - cnt, 0, k - 1)[..., None]
    valid = np.arange(1, k) > first  # increment j joins items j-1 and j, both valid
    delta = np.where(valid, np.diff(ts, axis=-1), 1.0)  # δ_j = ts_j - ts_{j-1}
    y = np.where(valid, np.diff(val, axis=-1), 0.0)  # y_j = val_j - val_{j-1}
    span = np.take_along_axis(ts, first, -1)[..., 0]
    rise = np.take_along_axis(val, first, -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = (val[..., -1] - rise) / (ts[..., -1] - span)  # Eq. 15
        resid = np.where(valid, (y - delta * mu[..., None]) ** 2 / delta, 0.0)
        sigma2 = resid.sum(axis=-1) / (cnt - 2)  # Eq. 16: k - 2 degrees of freedom
    ok = cnt >= 3
    return np.where(ok, mu, np.nan), np.where(ok, sigma2, np.nan)


class StreamModels:
    """DBM parameters of many streams, indexed by integer stream id (arrays grow on demand).

    ``observe`` buffers items (the buffer ``B_i`` of §4.6); ``reestimate`` runs Algorithm 2:
    a stream is re-estimated when ``now_ms >= t_estm``, and then
    ``t_estm = now + min(σ(t_last) / σ(now) · (now - t_last), t_max)``. Interrupted streams keep
    their last ``(μ, σ)`` and are retried after ``t_interrupt_ms`` (``T``).

    Start-up (not in the paper): until a buffer holds ``k`` items the stream is re-estimated at
    every ``reestimate`` call that follows new items; when it first fills, the next estimate is
    ``initial_interval_ms`` later. Streams with fewer than 3 items have ``μ = 0, σ = nan``
    (unknown, which makes every query over them due at once).

    Parameters
    ----------
    k : int
        Buffer size (the paper uses 100), at least 3.
    t_max_ms : int
        Longest interval between estimates (``t_max`` of Algorithm 2).
    t_max_periods : float, optional
        Also cap ``t_max`` of each stream at this many of its sampling intervals (mean period
        of its buffered items), so that the estimates follow the data at any sampling rate.
    t_min_ms : int
        Shortest interval, a floor so that ``σ(t_last) = 0`` cannot stall the schedule.
    t_interrupt_ms : int
        ``T``: retry interval for an interrupted stream.
    initial_interval_ms : int, optional
        First Algorithm-2 interval once the buffer is full; default the stream's ``t_max``.
    drift_z : float, optional
        Drift test (not in the paper): keep ``μ̂`` only where ``|μ̂| ≥ drift_z · σ̂ / √span``
        (Eq. 15's estimate has variance ``σ²/span`` over the items' time span), else use 0.
        A noisy ``μ̂`` of a driftless stream always shortens Eq. 7's interval, so fidelity
        lands above ``p`` with small ``k``; the test removes that bias and keeps real drifts.
        ``None`` (default) keeps every estimate, as the paper does.

    Attributes
    ----------
    value, last_ts : ndarray
        Latest value and timestamp (ms) of each stream (``nan`` / :data:`NO_TS` before any).
    mu, sigma : ndarray
        Current estimates, per ms and per √ms.
    est_ts, next_est_ms : ndarray
        ``t_last`` and ``t_estm`` of Algorithm 2.

    Examples
    --------
    >>> m = StreamModels(k=4, t_max_ms=1_000)
    >>> m.observe([0, 0, 0, 0], [0, 10, 20, 30], [1.0, 2.0, 2.0, 4.0])
    >>> m.reestimate(now_ms=30).tolist()      # ids re-estimated
    [0]
    >>> float(m.mu[0]), float(m.sigma[0] ** 2)  # (4 - 1) / 30 per ms; Eq. 16
    (0.1, 0.1)
    >>> int(m.next_est_ms[0])                   # buffer full: next estimate t_max later
    1030
    """

    def __init__(
        self,
        k: int = 100,
        *,
        t_max_ms: int = 60_000,
        t_max_periods: float | None = None,
        t_min_ms: int = 1,
        t_interrupt_ms: int = 10_000,
        initial_interval_ms: int | None = None,
        drift_z: float | None = None,
    ) -> None:
        if k < 3:
            raise ValueError(f"k must be >= 3 items (Eq. 16 divides by k - 2), got {k}")
        if not 0 < t_min_ms <= t_max_ms:
            raise ValueError(f"need 0 < t_min_ms <= t_max_ms, got {t_min_ms} ms, {t_max_ms} ms")
        if t_interrupt_ms <= 0:
            raise ValueError(f"t_interrupt_ms must be > 0, got {t_interrupt_ms} ms")
        if t_max_periods is not None and not t_max_periods > 0:
            raise ValueError(f"t_max_periods must be > 0 sampling intervals, got {t_max_periods}")
        self.k = k
        self.t_max_ms = t_max_ms
        self.t_max_periods = t_max_periods
        self.t_min_ms = t_min_ms
        self.t_interrupt_ms = t_interrupt_ms
        self.initial_interval_ms = initial_interval_ms
        if drift_z is not None and not drift_z >= 0:
            raise ValueError(f"drift_z must be >= 0 (a z-score) or None, got {drift_z}")
        self.drift_z = drift_z
        self.n_estimates = 0
        self._resize(0)

    def __repr__(self) -> str:
        return f"StreamModels(k={self.k}, n_streams={self.n_streams})"

    def __getstate__(self) -> tuple:
        """Compact (a Spark host pickles every source node each batch): the settings, then
        each array as raw bytes (:data:`_ARRAYS`), not a dict of numpy objects; no array while
        there is no stream (a source node whose series no standing query reads)."""
        settings = (self.k, self.t_max_ms, self.t_max_periods, self.t_min_ms)
        more = (self.t_interrupt_ms, self.initial_interval_ms, self.drift_z, self.n_estimates)
        if not self.n_streams:
            return (*settings, *more)
        return (*settings, *more, *(getattr(self, name).tobytes() for name, _, _ in _ARRAYS))

    def __setstate__(self, state: tuple) -> None:
        (self.k, self.t_max_ms, self.t_max_periods, self.t_min_ms, self.t_interrupt_ms,
         self.initial_interval_ms, self.drift_z, self.n_estimates) = state[:8]  # fmt: skip
        if len(state) == 8:  # no stream
            self._resize(0)
            return
        for (name, dtype, _), raw in zip(_ARRAYS, state[8:], strict=True):
            array = np.frombuffer(raw, dtype=dtype).copy()  # writable, as built
            setattr(self, name, array.reshape(-1, self.k) if name.startswith("buf_") else array)

    @property
    def n_streams(self) -> int:
        return len(self.value)

    def _resize(self, n: int) -> None:
        old = len(getattr(self, "value", ()))
        for name, dtype, fill in _ARRAYS:
            new = np.empty((n, self.k) if name.startswith("buf_") else n, dtype=dtype)
            if n > old:
                new[old:] = fill
            if old:
                new[:old] = getattr(self, name)
            setattr(self, name, new)

    def ensure(self, n_streams: int) -> None:
        """Grow the arrays to hold ids ``0 .. n_streams - 1`` (no-op if already large enough)."""
        if n_streams > self.n_streams:
            self._resize(n_streams)

    def observe(self, stream_ids: ArrayLike, ts_ms: ArrayLike, values: ArrayLike) -> None:
        """Buffer items ``(ts, val)`` (§4.1); several items of one stream may come in one call.

        Raises ``ValueError`` (changing nothing) unless every stream's timestamps strictly
        increase, across calls and within the call.
        """
        ids = np.asarray(stream_ids, dtype=np.int64).ravel()
        ts = np.asarray(ts_ms, dtype=np.int64).ravel()
        val = np.asarray(values, dtype=np.float64).ravel()
        if not len(ids) == len(ts) == len(val):
            raise ValueError(
                f"stream_ids, ts_ms, values need equal lengths, got {len(ids)}, "
                f"{len(ts)}, {len(val)}"
            )
        if len(ids) == 0:
            return
        if ids.min() < 0:
            raise ValueError(f"stream ids must be >= 0, got {int(ids.min())}")
        if not np.isfinite(val).all():
            raise ValueError("values must be finite; drop missing items instead of sending nan")
        self.ensure(int(ids.max()) + 1)
        order = np.lexsort((ts, ids))
        ids, ts, val = ids[order], ts[order], val[order]
        same = ids[1:] == ids[:-1]
        prev = np.where(np.r_[False, same], np.r_[ts[0], ts[:-1]], self.last_ts[ids])
        bad = ts <= prev
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(
                f"stream {int(ids[j])}: timestamps must strictly increase, got "
                f"{int(ts[j])} ms after {int(prev[j])} ms; drop or reorder late items"
            )
        starts = np.r_[0, np.flatnonzero(~same) + 1]
        rank = np.arange(len(ids)) - np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
        for r in range(int(rank.max()) + 1):  # one round per item of the busiest stream
            sel = rank == r
            i = ids[sel]
            pos = self.head[i]
            self.buf_ts[i, pos] = ts[sel]
            self.buf_val[i, pos] = val[sel]
            self.head[i] = (pos + 1) % self.k
            self.count[i] = np.minimum(self.count[i] + 1, self.k)
            self.value[i] = val[sel]
            self.last_ts[i] = ts[sel]
        self.fresh[ids] = True

    def chronological(self, stream_ids: ArrayLike) -> tuple[NDArray, NDArray, NDArray]:
        """Buffers of ``stream_ids`` oldest first: ``(ts, values, counts)``, valid items last."""
        i = np.asarray(stream_ids, dtype=np.int64)
        idx = (self.head[i, None] + np.arange(self.k)) % self.k
        return (
            np.take_along_axis(self.buf_ts[i], idx, 1),
            np.take_along_axis(self.buf_val[i], idx, 1),
            self.count[i],
        )

    def period_ms(self) -> NDArray[np.float64]:
        """Mean interval between a stream's buffered items (``nan`` with fewer than 2 items)."""
        oldest = np.where(self.count == self.k, self.head, 0)  # ring position of the oldest
        first = self.buf_ts[np.arange(self.n_streams), oldest]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.count >= 2, (self.last_ts - first) / (self.count - 1), np.nan)

    def fix(self, stream_ids: ArrayLike, mu: ArrayLike, sigma: ArrayLike) -> None:
        """Set known ``(μ, σ)`` for streams and exclude them from re-estimation."""
        i = np.asarray(stream_ids, dtype=np.int64)
        self.ensure(int(i.max()) + 1 if i.size else 0)
        self.mu[i], self.sigma[i], self.fixed[i] = mu, sigma, True

    def reestimate(self, now_ms: int, interrupted: ArrayLike | None = None) -> NDArray[np.int64]:
        """Run Algorithm 2 at ``now_ms`` for every due stream; return the ids re-estimated."""
        n = self.n_streams
        intr = np.zeros(n, bool) if interrupted is None else np.asarray(interrupted, bool)[:n]
        # Warm-up (buffer not full): on new items; afterwards when t_estm is reached.
        ready = np.where(self.count < self.k, self.fresh, now_ms >= self.next_est_ms)
        due = ~self.fixed & (self.count >= 3) & ready
        # Algorithm 2, interrupted branch: keep (μ, σ), retry after T.
        held = due & intr
        self.next_est_ms[held] = now_ms + self.t_interrupt_ms
        self.est_ts[held] = now_ms
        ids = np.flatnonzero(due & ~intr)
        if len(ids) == 0:
            return ids
        ts, val, cnt = self.chronological(ids)
        mu, s2 = estimate_params(ts, val, cnt)
        sigma_new = np.sqrt(np.maximum(s2, 0.0))
        if self.drift_z is not None:  # z-test of μ̂: Var(μ̂) = σ² / span (Eq. 15)
            first = np.take_along_axis(ts, np.clip(self.k - cnt, 0, self.k - 1)[:, None], 1)
            span = (ts[:, -1] - first[:, 0]).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                significant = np.abs(mu) * np.sqrt(span) >= self.drift_z * sigma_new
            mu = np.where(significant, mu, 0.0)
        full = cnt >= self.k
        first_full = full & ((self.est_ts[ids] == NO_TS) | (self.next_est_ms[ids] == NO_TS))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.sigma[ids] / sigma_new  # σ(t_last) / σ(t_curr)
        ratio = np.where(np.isnan(ratio), 1.0, ratio)
        last = self.est_ts[ids]
        elapsed = np.where(last == NO_TS, 0, now_ms - np.maximum(last, now_ms - 2**62))
        t_max = np.full(len(ids), float(self.t_max_ms))
        if self.t_max_periods is not None:  # fmin: a stream without a period keeps t_max_ms
            t_max = np.fmin(t_max, self.t_max_periods * self.period_ms()[ids])
        step = np.minimum(ratio * elapsed, t_max)  # Algorithm 2
        initial = t_max if self.initial_interval_ms is None else self.initial_interval_ms
        step = np.where(first_full, initial, step)
        step = np.maximum(np.where(np.isfinite(step), step, t_max), self.t_min_ms)
        nxt = np.where(full, now_ms + step.astype(np.int64), NO_TS)  # warm-up: on new items
        self.mu[ids], self.sigma[ids] = mu, sigma_new
        self.est_ts[ids] = now_ms
        self.next_est_ms[ids] = nxt
        self.fresh[ids] = False
        self.n_estimates += len(ids)
        return ids


_ARRAYS = (
    ("value", np.float64, np.nan), ("last_ts", np.int64, NO_TS), ("mu", np.float64, 0.0),
    ("sigma", np.float64, np.nan), ("est_ts", np.int64, NO_TS), ("next_est_ms", np.int64, NO_TS),
    ("count", np.int64, 0), ("head", np.int64, 0),
    ("fresh", np.bool_, False),  # new items since the last estimate
    ("fixed", np.bool_, False), ("buf_ts", np.int64, 0), ("buf_val", np.float64, 0.0),
)  # fmt: skip
"""The arrays of :class:`StreamModels`, their dtypes and the value of a new stream's entries
(:meth:`StreamModels._resize`; the buffers ``(n_streams, k)``), in pickled order."""


def aggregate_values(weights: sp.sparray | sp.spmatrix, values: ArrayLike) -> NDArray:
    """``A = Σ a_i S_i`` for every row of ``weights`` (Eq. 2)."""
    return np.asarray(weights @ np.asarray(values, dtype=np.float64)).ravel()


def aggregate_params(
    weights: sp.sparray | sp.spmatrix,
    mu: ArrayLike,
    sigma: ArrayLike,
    *,
    squared: sp.sparray | sp.spmatrix | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``μ_A = Σ a_i μ_i`` and ``σ_A = sqrt(Σ (a_i σ_i)²)`` of every row (Eq. 6).

    A ``nan`` σ (unknown) makes ``σ_A`` ``nan`` for exactly the rows with a nonzero weight on
    that stream. ``squared``, the elementwise square of ``weights``, may be passed if cached.

    Examples
    --------
    >>> w = sp.csr_array([[0.5, 0.5, 0.0], [0.0, 1.0, -1.0]])
    >>> mu_a, sigma_a = aggregate_params(w, [1.0, 3.0, 1.0], [2.0, 2.0, 1.0])
    >>> mu_a.tolist(), (sigma_a ** 2).tolist()
    ([2.0, 2.0], [2.0, 5.0])
    """
    w = sp.csr_array(weights)
    if squared is None:
        w = w.copy()
        w.eliminate_zeros()  # a stored 0 weight must not pick up a nan σ
        squared = w.multiply(w)
    sig = np.asarray(sigma, dtype=np.float64)
    mu_a = np.asarray(w @ np.asarray(mu, dtype=np.float64)).ravel()  # Eq. 6
    var = np.asarray(squared @ sig**2).ravel()  # Eq. 6; nan only where the row uses it
    return mu_a, np.sqrt(var)
