"""Standing queries at a source node: the stream models of the series they read
(:class:`StandingSource`), reported once per batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tsmon.engine.standing_settings import StandingSettings
from tsmon.kinds.base import NodePart, Points
from tsmon.protocols.deferral.model import NO_TS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.settings import HostSettings

__all__ = ["StandingNode", "StandingSource"]

Row = dict[str, Any]


class StandingSource:
    """The stream models of one source node: the series its standing queries read.

    Examples
    --------
    >>> src = StandingSource(["a.x"], StandingSettings(k=3))
    >>> for t, v in [(0, 1.0), (10, 2.0), (20, 2.5), (30, 9.0)]:
    ...     src.observe("a.x" if t < 30 else "b.y", t, v)
    >>> [round(v, 3) for v in src.report(30)[0]["payload"]["mu"]]   # (2.5 - 1) / 20 per ms
    [0.075]
    """

    def __init__(self, series: Iterable[str], settings: StandingSettings) -> None:
        self.models = settings.models()
        self.ids: dict[str, int] = {}  # tracked series -> local stream id
        self.skipped = 0  # points not newer than their stream's last item
        self._batch: list[tuple[int, int, float]] = []
        self.track(series)

    def track(self, series: Iterable[str]) -> None:
        """Model these series from their next point on."""
        for s in series:
            self.ids.setdefault(s, len(self.ids))

    def observe(self, series: str, ts: int, value: float) -> None:
        """One applied point of this node (ignored unless its series is tracked)."""
        i = self.ids.get(series)
        if i is not None:
            self._batch.append((i, ts, value))

    def report(self, now_ms: int) -> list[Row]:
        """Feed the batch's points, re-estimate at ``now_ms``; one ``streams`` row with every
        stream that changed (none if nothing did)."""
        if not self.ids:  # no stream: nothing was fed, nothing to re-estimate
            return []
        m, batch, self._batch = self.models, self._batch, []
        m.ensure(len(self.ids))
        if batch:
            ids, ts, vals = (np.array(c) for c in zip(*batch, strict=True))
            order = np.lexsort((ts, ids))
            ids, ts, vals = ids[order], ts[order].astype(np.int64), vals[order].astype(float)
            last = np.r_[(ids[1:] != ids[:-1]) | (ts[1:] != ts[:-1]), True]  # a tie: newest
            newer = ts > m.last_ts[ids]
            keep = last & newer
            self.skipped += int((~newer).sum())
            m.observe(ids[keep], ts[keep], vals[keep])
        changed = np.union1d(np.array([b[0] for b in batch], np.int64), m.reestimate(now_ms))
        changed = changed[m.last_ts[changed] != NO_TS]
        if not len(changed):
            return []
        names = np.array(list(self.ids), dtype=object)[changed].tolist()
        period = m.period_ms()[changed]
        payload = {
            "series": names,
            "value": m.value[changed].tolist(),
            "last_ts": m.last_ts[changed].tolist(),
            "mu": m.mu[changed].tolist(),
            "sigma": m.sigma[changed].tolist(),
            "period": period.tolist(),
            "estimations": m.n_estimates,
            "skipped": self.skipped,
        }
        return [{"kind": "streams", "payload": payload}]


class StandingNode(NodePart):
    """The stream models of the series the job's standing queries read (:class:`StandingSource`)."""

    control_types = ("standing",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.standing = StandingSource(settings.tracked, settings.standing)

    def parse_control(self, payload: Mapping[str, Any], where: str) -> list[str]:
        series = payload.get("series")
        if payload.get("op") != "track" or not (
            isinstance(series, list) and all(isinstance(x, str) for x in series)
        ):
            raise ValueError(f"{where}: bad standing control {payload!r}")
        return series

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        self.standing.track(x for _, names in sorted(items, key=lambda x: x[0]) for x in names)
        return []

    def observe(self, points: Points) -> list[Row]:
        if not self.standing.ids:  # no series tracked: no point to feed
            return []
        series, ts, values, _ = points.in_order
        for s, t, v in zip(series, ts, values, strict=True):
            self.standing.observe(s, t, v)
        return []

    def advance(self, now_ms: int) -> list[Row]:
        return self.standing.report(now_ms)
