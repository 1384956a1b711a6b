"""A toy pure node and coordinator, to exercise the Spark host end to end.

They live in the package (not in tests) because Spark's Python workers must import the node
class to unpickle state. No pyspark here: this is what every tsmon protocol looks like to the
host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ADD_THRESHOLD", "RunningSum", "coordinate"]

ADD_THRESHOLD = 10.0
""":func:`coordinate` tells a source to add 1 to later values once its total exceeds this."""


class RunningSum:
    """Per-source running sum of values, each shifted by the control-set offset ``add``.

    ``step`` applies control first (``{"add": k}`` adds ``k`` to every later value), then the
    data in the given order. It outputs ``sum`` (``total``, ``count``, ``last_ts``) when there
    was data, otherwise ``ack`` (``add``) when there was control.

    Examples
    --------
    >>> n = RunningSum("s1")
    >>> n.step([], [{"series": "x", "ts": 1, "value": 2.0, "seq": 0}])
    [{'kind': 'sum', 'payload': {'total': 2.0, 'count': 1, 'last_ts': 1}}]
    >>> n.step([{"seq": 0, "payload": {"add": 1.0}}], [])
    [{'kind': 'ack', 'payload': {'add': 1.0}}]
    >>> n.step([], [{"series": "x", "ts": 3, "value": 2.0, "seq": 1}])[0]["payload"]["total"]
    5.0
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.total = 0.0
        self.count = 0
        self.add = 0.0
        self.last_ts: int | None = None

    def step(self, control: list[dict], data: list[dict]) -> list[dict]:
        """Apply control, then data; raise ``ValueError`` if data goes back in time."""
        for c in control:
            self.add += float(c["payload"]["add"])
        for d in data:
            if self.last_ts is not None and d["ts"] < self.last_ts:
                raise ValueError(
                    f"source {self.source!r}: ts went back from {self.last_ts} ms to "
                    f"{d['ts']} ms; the host must pass data sorted by (ts, seq)"
                )
            self.total += d["value"] + self.add
            self.count += 1
            self.last_ts = d["ts"]
        if data:
            payload = {"total": self.total, "count": self.count, "last_ts": self.last_ts}
            return [{"kind": "sum", "payload": payload}]
        if control:
            return [{"kind": "ack", "payload": {"add": self.add}}]
        return []


def coordinate(messages: Iterable[Mapping[str, Any]]) -> dict[str, list[dict]]:
    """Stateless toy coordinator: each ``sum`` above :data:`ADD_THRESHOLD` earns ``add 1``.

    ``messages`` are ``{"source", "kind", "payload"}`` with decoded payloads. Deterministic,
    so a replayed batch writes the same control.

    >>> coordinate([{"source": "a", "kind": "sum", "payload": {"total": 11.0}},
    ...             {"source": "b", "kind": "sum", "payload": {"total": 3.0}},
    ...             {"source": "c", "kind": "ack", "payload": {"add": 1.0}}])
    {'a': [{'add': 1.0}]}
    """
    control: dict[str, list[dict]] = {}
    for m in messages:
        if m["kind"] == "sum" and m["payload"]["total"] > ADD_THRESHOLD:
            control.setdefault(m["source"], []).append({"add": 1.0})
    return control
