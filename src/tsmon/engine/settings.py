"""The settings every host of a job shares: one frozen, picklable object (Spark ships it to the
source nodes inside the node factory, so it stays small)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral

from tsmon.core.register import DuplicatePolicy, RegisterConfig
from tsmon.core.units import parse_duration_ms
from tsmon.engine.replicas import DEFAULT_PHASE_MS
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.store import SeriesStore

__all__ = [
    "BACKLOG",
    "DAY_MS",
    "HOUR_MS",
    "FilterSettings",
    "HostSettings",
    "RegisterSettings",
    "millis",
    "register_config",
]

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS  # the default max_future
#: Records the bounded coordinator's queue holds per series by default, beyond which it folds
#: the closest values into a hull (a source far ahead: docs/time.md, ``[filters] backlog``).
BACKLOG = 32


@dataclass(frozen=True)
class FilterSettings:
    """The embedded Monitor's adaptive-filter parameters, checked: adjustment period ``T``
    (ms; ``None``, the default: chosen online, see ``protocols.filters.tuning``), shrink
    percentage ``S``, seed, and the growth allocation (``"paper"`` or ``"capped"``, see
    ``protocols.filters.Coordinator``)."""

    period_ms: int | None = None
    shrink: float = 0.05
    seed: int = 0
    growth: str = "capped"

    def __post_init__(self) -> None:
        if self.period_ms is not None and not (
            isinstance(self.period_ms, int) and self.period_ms > 0
        ):
            raise ValueError(f"filter period T must be a positive duration, got {self.period_ms}")
        if not 0 <= self.shrink < 1:
            raise ValueError(f"filter shrink S must be in [0, 1), got {self.shrink}; e.g. 0.05")
        if self.growth not in ("paper", "capped"):
            raise ValueError(f"filter growth must be 'paper' or 'capped', got {self.growth!r}")


@dataclass(frozen=True)
class RegisterSettings:
    """How each node stores its series: retention (points and/or event time), the allowed
    lateness and the duplicate policy (see :class:`~tsmon.engine.monitor.Monitor`)."""

    def store(self) -> SeriesStore:
        """A store accepting every series, with these settings (bad ones raise here)."""
        config = register_config(
            self.capacity_points, self.retention, self.allowed_lateness, self.duplicates
        )
        store = SeriesStore(config)
        store.add_series("*")
        return store

    retention: str | int | None = "1h"
    capacity_points: int | None = None
    allowed_lateness: str | int = 0
    duplicates: str = "keep_last"


@dataclass(frozen=True)
class HostSettings:
    """A job's settings, by protocol, and the text of its initial node-side queries.

    ``period_ms``, ``shrink``, ``seed`` and ``growth``: the adaptive filters (Olston et al. §3;
    ``period_ms`` None: the coordinator chooses ``T`` online and tells the sources,
    :mod:`tsmon.protocols.filters.tuning`); ``bounded_lag_ms``: the bounded coordinator runs at the
    oldest source's time minus this (1, the batch runtimes: a later batch may hold points of that
    instant; 0, the Monitor's instant host: one ``ingest`` is every point up to its time;
    :mod:`tsmon.kinds.bounded`); ``backlog``: the updates the filter coordinator's queue holds per
    series (§4's serializing queue), folding beyond (None: unbounded, the paper's queue);
    ``registers``: each node's stored points (watch queries need them); ``standing``: the stream
    models and query partitions of standing queries; ``replica_phase_ms``: the SWAT-ASR phase.
    ``max_future_ms``: points stamped more than this after the batch's clock are dead letters
    (``future_timestamp``; None: no limit); ``idle_timeout_ms``: a source whose newest time is more
    than this behind the job's newest time is idle and no longer holds the coordinator's time back
    (None: never idle); docs/time.md. ``queries`` maps a part name to the text of the statements
    every node starts with (``local``: watch and summary queries, ``topk``); ``tracked`` are the
    series the standing queries read (so that no node parses their text).
    """

    period_ms: int | None
    shrink: float
    seed: int = 0
    growth: str = "paper"
    registers: RegisterSettings | None = None
    standing: StandingSettings = field(default_factory=StandingSettings)
    replica_phase_ms: int = DEFAULT_PHASE_MS
    queries: Mapping[str, str] = field(default_factory=dict)
    tracked: tuple[str, ...] = ()
    max_future_ms: int | None = DAY_MS
    idle_timeout_ms: int | None = HOUR_MS
    backlog: int | None = BACKLOG
    bounded_lag_ms: int = 1

    def text(self, part: str) -> str:
        """The initial statements of ``part`` ('' if none)."""
        return self.queries.get(part, "")


def register_config(
    capacity_points: int | None,
    retention: str | int | None,
    allowed_lateness: str | int,
    duplicates: str,
) -> RegisterConfig:
    """Register settings given as a Monitor's options (durations as ``"5m"`` or ms)."""
    return RegisterConfig(
        capacity_points=capacity_points,
        retention_ms=millis("retention", retention),
        allowed_lateness_ms=millis("allowed_lateness", allowed_lateness, allow_zero=True) or 0,
        duplicates=DuplicatePolicy(duplicates),
    )


def millis(option: str, value: object, allow_zero: bool = False) -> int | None:
    """A duration given as ``"5m"`` or as whole milliseconds; ``0`` only if ``allow_zero``."""
    if value is None or isinstance(value, str):
        return None if value is None else parse_duration_ms(value, allow_zero=allow_zero)
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    raise TypeError(
        f"{option} must be a duration like '5m' or whole milliseconds, got {value!r}; "
        "pass e.g. '1h' or 3600000"
    )
