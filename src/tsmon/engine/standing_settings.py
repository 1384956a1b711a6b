"""Settings of standing aggregates (:mod:`tsmon.kinds.standing`, in a job and in a Monitor):
one set of keys for a Monitor's ``standing=`` option and a job file's ``[standing]`` section,
checked in one place (:class:`StandingSettings`), with the caps in sampling intervals.

Why the caps are in sampling intervals: deadlines are fixed when a query is evaluated, so a cap
on ``Δt`` keeps a model that says "never" (``σ̂ = μ̂ = 0`` over a flat stretch) from silencing a
query for good, and a cap in milliseconds does not scale: 60 s made every query due at every
5-minute tick (4,033 evaluations in 4,033 ticks on NAB). 100 sampling intervals of a query's
fastest series (the default ``max_dt``) costs at most 1 % of the ticks and hardly binds on
real data: with 5-minute ticks on NAB at ε = 12 s_A the evaluations per tick are 0.069-0.176
with no cap and 0.077-0.177 with it, every tick's answer within ε 98.1-99.0 % of the time
(``benchmarks/deferral/README.md``, *Real ticks*; before the next evaluation moved to the first
tick after ``Δt``). Algorithm 2's ``t_max`` (``reestimate``)
is 100 sampling intervals of each series, one buffer of ``k = 100`` new items: 10 cost 3-31 %
more evaluations for fidelity further above ``p``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real

from tsmon.core.units import parse_duration_ms
from tsmon.protocols.deferral import StreamModels
from tsmon.protocols.deferral.partition import DEFAULT_WAIT_TICKS

__all__ = [
    "DEFAULT_DRIFT_Z",
    "DEFAULT_JUMP_Z",
    "SETTINGS_KEYS",
    "StandingSettings",
    "standing_settings",
]

DEFAULT_DRIFT_Z = 2.0
"""Drift test of the hosted stream models (:class:`~tsmon.protocols.deferral.StreamModels`)."""

DEFAULT_JUMP_Z = 3.0
"""Jump test of the query partitions (:class:`~tsmon.protocols.deferral.QueryPartition`): on
5-minute NAB CPU series at ε = 6 s_A and p = 0.95 it lifts the worst query's per-tick fidelity
from 94.4 % to 96.5 % for 2 % more evaluations (``benchmarks/deferral/README.md``)."""

SETTINGS_KEYS = {
    "tick": "event time between evaluation ticks (a duration; default 1s)",
    "partitions": "query partitions of a Spark job (an int >= 1; default 2; a Monitor has one)",
    "k": "items per series behind each estimate of mu, sigma (an int >= 3; default 100)",
    "drift_test": "use a drift only when |mu| >= this many standard errors (false: always; 2)",
    "jump_test": "a query is due at a tick its aggregate jumps by more than eps through "
    "series' moves beyond this many sigma (false: deadlines only; default 3)",
    "max_dt": "longest deferral: sampling intervals of the query's fastest series, a "
    "duration, or inf (default 100)",
    "reestimate": "Algorithm 2's t_max: sampling intervals of the series, a duration, or inf "
    "(default 100)",
    "interrupt_after": "a series silent this many sampling intervals is interrupted (default 3)",
    "interrupt_retry": "T of Algorithm 1: re-evaluation interval while interrupted (a duration; "
    "default one tick)",
    "budget": "evaluation cost units per tick (default inf: no CPU limit)",
    "max_wait": "run a task late by more than this first (a duration or inf; default 10 ticks)",
    "combine": "how eps_intr adds up the silent series' errors: linear (the paper's) or rss",
}
"""The keys of a job file's ``[standing]`` section and of a Monitor's ``standing=`` option."""


@dataclass(frozen=True)
class StandingSettings:
    """How standing queries run: ticks, estimator, caps, interruptions and scheduler.

    ``max_dt_periods``/``max_dt_ms`` cap ``Δt`` (the smaller applies; ``inf`` for none);
    ``t_max_periods``/``t_max_ms`` cap Algorithm 2's interval the same way;
    ``t_interrupt_ms`` and ``max_wait_ms`` default to one and :data:`DEFAULT_WAIT_TICKS`
    ticks. Every value is checked here: a bad one is a ``ValueError`` naming its key.
    """

    tick_ms: int = 1_000
    partitions: int = 2
    k: int = 100
    max_dt_periods: float = 100.0
    max_dt_ms: float = math.inf
    t_max_periods: float = 100.0
    t_max_ms: float = math.inf
    interrupt_factor: float = 3.0
    t_interrupt_ms: int | None = None
    budget: float = math.inf
    max_wait_ms: float | None = None
    combine: str = "linear"
    drift_z: float | None = DEFAULT_DRIFT_Z
    jump_z: float | None = DEFAULT_JUMP_Z

    def __post_init__(self) -> None:
        checks = [
            ("tick", self.tick_ms, _is_int(self.tick_ms) and self.tick_ms > 0, "> 0 ms"),
            ("partitions", self.partitions, _is_int(self.partitions) and self.partitions >= 1,
             "an int >= 1"),
            ("k", self.k, _is_int(self.k) and self.k >= 3, "an int >= 3 (items)"),
            ("max_dt", self.max_dt_periods, _positive(self.max_dt_periods),
             "> 0 sampling intervals (or a duration, or inf)"),
            ("max_dt", self.max_dt_ms, _positive(self.max_dt_ms), "> 0 ms"),
            ("reestimate", self.t_max_periods, _positive(self.t_max_periods),
             "> 0 sampling intervals (or a duration, or inf)"),
            ("reestimate", self.t_max_ms, _positive(self.t_max_ms), "> 0 ms"),
            ("interrupt_after", self.interrupt_factor,
             _positive(self.interrupt_factor) and math.isfinite(self.interrupt_factor),
             "a number > 0 (sampling intervals)"),
            ("interrupt_retry", self.t_interrupt_ms,
             self.t_interrupt_ms is None or (_is_int(self.t_interrupt_ms)
                                             and self.t_interrupt_ms > 0), "> 0 ms"),
            ("budget", self.budget, _positive(self.budget), "> 0 cost units (or inf)"),
            ("max_wait", self.max_wait_ms,
             self.max_wait_ms is None or (_number(self.max_wait_ms) and self.max_wait_ms >= 0),
             ">= 0 ms (or inf)"),
            ("combine", self.combine, self.combine in ("linear", "rss"), "linear or rss"),
            ("drift_test", self.drift_z,
             self.drift_z is None or (_number(self.drift_z) and 0 <= self.drift_z < math.inf),
             "a z-score >= 0 or false"),
            ("jump_test", self.jump_z,
             self.jump_z is None or (_number(self.jump_z) and 0 <= self.jump_z < math.inf),
             "a z-score >= 0 or false"),
        ]  # fmt: skip
        for key, value, ok, expected in checks:
            if not ok:
                raise ValueError(f"{key} must be {expected}, got {value!r}")

    def models(self) -> StreamModels:
        """The stream models of these settings (Algorithm 2, drift test)."""
        return StreamModels(
            self.k,
            t_max_ms=int(min(self.t_max_ms, 2**62)),
            t_max_periods=self.t_max_periods if math.isfinite(self.t_max_periods) else None,
            t_interrupt_ms=self.retry_ms,
            drift_z=self.drift_z,
        )

    @property
    def retry_ms(self) -> int:
        """``T`` of Algorithms 1-2 (default one tick)."""
        return self.tick_ms if self.t_interrupt_ms is None else self.t_interrupt_ms

    def partition_options(self) -> dict[str, object]:
        """Keyword arguments of a :class:`~tsmon.protocols.deferral.QueryPartition`."""
        wait = DEFAULT_WAIT_TICKS * self.tick_ms if self.max_wait_ms is None else self.max_wait_ms
        return {
            "tick_ms": self.tick_ms,
            "budget": self.budget,
            "max_dt_ms": self.max_dt_ms,
            "max_dt_periods": self.max_dt_periods,
            "t_interrupt_ms": self.retry_ms,
            "combine": self.combine,
            "max_wait_ms": wait,
            "jump_z": self.jump_z,
        }


def standing_settings(
    options: Mapping[str, object] | StandingSettings | None = None, tick: object = None
) -> StandingSettings:
    """Settings from the keys of :data:`SETTINGS_KEYS` (a job's ``[standing]`` table, a
    Monitor's ``standing=``), or given ones; ``tick`` (a Monitor's ``standing_tick``) sets the
    tick unless the options do too. A ``ValueError`` names the key and what it expects.

    Examples
    --------
    >>> s = standing_settings({"tick": "5m", "max_dt": "1d", "drift_test": False})
    >>> s.tick_ms, s.max_dt_ms, s.max_dt_periods, s.drift_z
    (300000, 86400000.0, inf, None)
    >>> standing_settings({"max_dt": 0})
    Traceback (most recent call last):
    ...
    ValueError: max_dt must be > 0 sampling intervals (or a duration, or inf), got 0
    """
    if isinstance(options, StandingSettings):
        if tick is None:
            return options
        return dataclasses.replace(options, tick_ms=_duration("tick", tick))
    if not isinstance(options, Mapping | None):
        raise TypeError(
            f"standing settings must be a mapping such as {{'max_dt': 100}} or a "
            f"StandingSettings, got {options!r}"
        )
    given = dict(options or {})
    unknown = sorted(str(key) for key in set(given) - set(SETTINGS_KEYS))
    if unknown:
        raise ValueError(
            f"unknown key {unknown[0]!r} in the standing settings; expected some of "
            f"{', '.join(SETTINGS_KEYS)}"
        )
    if tick is not None:
        if "tick" in given:
            raise ValueError("give the tick once: standing_tick or standing={'tick': ...}")
        given["tick"] = tick
    fields: dict[str, object] = {}
    for key, value in given.items():
        fields.update(_READERS[key](key, value))
    return StandingSettings(**fields)  # type: ignore[arg-type]


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)


def _positive(value: object) -> bool:
    return _number(value) and value > 0  # type: ignore[operator]


def _duration(key: str, value: object) -> int:
    """Milliseconds of ``"5m"`` or of whole milliseconds."""
    if isinstance(value, str):
        try:
            return parse_duration_ms(value)
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
    if _is_int(value) and value > 0:  # type: ignore[operator]
        return int(value)  # type: ignore[arg-type]
    raise ValueError(f"{key} must be a duration like '5m' or whole milliseconds > 0, got {value!r}")


def _periods_or_ms(key: str, value: object) -> tuple[float, float]:
    """A cap as ``(sampling intervals, ms)``: a number (``inf``: none) or a duration."""
    if isinstance(value, str):
        return math.inf, float(_duration(key, value))
    if _number(value):
        return value, math.inf  # type: ignore[return-value]
    raise ValueError(f"{key} must be > 0 sampling intervals (or a duration, or inf), got {value!r}")


def _field(name: str) -> Callable[[str, object], dict[str, object]]:
    return lambda key, value: {name: value}


def _caps(stem: str) -> Callable[[str, object], dict[str, object]]:
    def read(key: str, value: object) -> dict[str, object]:
        periods, ms = _periods_or_ms(key, value)
        return {f"{stem}_periods": periods, f"{stem}_ms": ms}

    return read


_READERS: dict[str, Callable[[str, object], dict[str, object]]] = {
    "tick": lambda key, value: {"tick_ms": _duration(key, value)},
    "partitions": _field("partitions"),
    "k": _field("k"),
    "drift_test": lambda key, value: {"drift_z": None if value is False else value},
    "jump_test": lambda key, value: {"jump_z": None if value is False else value},
    "max_dt": _caps("max_dt"),
    "reestimate": _caps("t_max"),
    "interrupt_after": _field("interrupt_factor"),
    "interrupt_retry": lambda key, value: {"t_interrupt_ms": _duration(key, value)},
    "budget": _field("budget"),
    "max_wait": lambda key, value: {
        "max_wait_ms": value if value == math.inf else _duration(key, value)
    },
    "combine": _field("combine"),
}
