"""``/metrics``: a job's state in the Prometheus text format (prometheus-client).

Read at scrape time from :class:`~tsmon.http.live.Live` (nothing is counted twice). Names
follow Spark's progress record where there is one (``numInputRows``, the batch's duration,
the watermark); everything is prefixed ``tsmon_``:

=====================================  =====  ==================================================
metric                                 type   what
=====================================  =====  ==================================================
``tsmon_batch_id``                     gauge  the last batch's id
``tsmon_numInputRows``                 gauge  points the sources read in the last batch
``tsmon_input_rows_total``             count  points read since the server started
``tsmon_batchDurationMs``              gauge  Spark's ``durationMs.triggerExecution`` of the
                                              batch before the last one (known one batch late)
``tsmon_driverMs``                     gauge  the coordinator's time in the last batch
``tsmon_watermark_ms``                 gauge  event time (epoch ms) up to which every source
                                              has reported: answers are exact as of it
``tsmon_rowsToCoordinator``            gauge  rows the nodes sent the coordinator, last batch
``tsmon_rows_to_coordinator_total``    count  the same since the server started
``tsmon_messages_total{kind}``         count  the coordinator's counts (``streamed``,
                                              ``growth``, ``shrink`` messages, ``rowsIn``,
                                              ``heartbeats``, ``controlRows``, ``batches``)
``tsmon_events_total``                 count  events since the server started
``tsmon_dead_letters_total{reason}``   count  dead letters by reason since the server started
``tsmon_answer{query,part}``           gauge  every numeric answer's value
``tsmon_answer_lo{query,part}``        gauge  its lower bound (absent when it has none)
``tsmon_answer_hi{query,part}``        gauge  its upper bound
``tsmon_seconds_since_last_batch``     gauge  wall time since the last batch
``tsmon_webhook_total{outcome}``       count  webhook deliveries: ``sent``, ``retried``,
                                              ``failed``, ``dropped`` (queue full)
=====================================  =====  ==================================================

A value not known yet (NaN, an unbounded side) is left out rather than exported as NaN.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tsmon.http.live import Live

__all__ = ["CONTENT_TYPE", "metrics_text"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_GAUGES = (
    ("batch_id", "batchId", "the last batch's id"),
    ("numInputRows", "numInputRows", "points the sources read in the last batch"),
    ("batchDurationMs", "previousBatchDurationMs", "Spark's triggerExecution ms, previous batch"),
    ("driverMs", "driverMs", "the coordinator's ms in the last batch"),
    ("watermark_ms", "watermark", "event time (epoch ms) every source has reported up to"),
    ("rowsToCoordinator", "rowsToCoordinator", "rows to the coordinator in the last batch"),
)


class _Collector:
    def __init__(self, live: Live, webhook: Callable[[], Mapping[str, int]] | None) -> None:
        self.live, self.webhook = live, webhook

    def collect(self) -> Iterator[Metric]:
        view = self.live.metrics_view()
        progress = view["progress"]
        for name, key, doc in _GAUGES:
            value = progress.get(key)
            if _finite(value):
                yield GaugeMetricFamily(f"tsmon_{name}", doc, value=float(value))
        totals = view["totals"]
        for name, key, doc in (
            ("input_rows", "numInputRows", "points read since the server started"),
            ("rows_to_coordinator", "rowsToCoordinator", "rows to the coordinator"),
            ("events", "events", "events since the server started"),
        ):
            yield CounterMetricFamily(f"tsmon_{name}", doc, value=totals.get(key, 0))
        messages = CounterMetricFamily(
            "tsmon_messages", "the coordinator's message and row counts", labels=["kind"]
        )
        for kind, n in sorted(progress.get("messages", {}).items()):
            messages.add_metric([kind], n)
        yield messages
        dead = CounterMetricFamily(
            "tsmon_dead_letters", "dead letters by reason since the server start", labels=["reason"]
        )
        for reason, n in sorted(view["deadLetters"].items()):
            dead.add_metric([reason], n)
        yield dead
        yield from _answers(view["bands"])
        if view["lastBatchAt"] is not None:
            since = time.time() - view["lastBatchAt"]
            yield GaugeMetricFamily("tsmon_seconds_since_last_batch", "wall time", value=since)
        if self.webhook is not None:
            hooks = CounterMetricFamily(
                "tsmon_webhook", "webhook deliveries by outcome", labels=["outcome"]
            )
            for outcome, n in sorted(self.webhook().items()):
                hooks.add_metric([outcome], n)
            yield hooks


def _answers(bands: Mapping[str, tuple[str, Any, Any, Any]]) -> Iterator[Metric]:
    families = [
        GaugeMetricFamily(f"tsmon_answer{suffix}", doc, labels=["query", "part"])
        for suffix, doc in (
            ("", "every numeric answer's value"),
            ("_lo", "the lower bound of the answer"),
            ("_hi", "the upper bound of the answer"),
        )
    ]
    for query, (part, *values) in sorted(bands.items()):
        for family, value in zip(families, values, strict=True):
            if _finite(value):
                family.add_metric([query, part], float(value))
    yield from families


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metrics_text(live: Live, webhook: Callable[[], Mapping[str, int]] | None = None) -> bytes:
    """The Prometheus text exposition of ``live`` (and the webhook's counts, if any)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(live, webhook))  # type: ignore[arg-type]
    return generate_latest(registry)
