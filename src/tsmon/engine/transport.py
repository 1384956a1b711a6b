"""How control rows travel from the coordinator to the nodes of the in-process batch host.

On Spark the control the coordinator writes after batch ``N`` (``ctrl-N.json``) is read by the
nodes in batch ``N + 1``: a one-batch delay, :class:`Transport` with ``delay=1``, the default of
:class:`~tsmon.engine.batched.BatchedRuntime`. A longer delay models a slow control channel
(each batch's control still arrives whole and in order, as the protocols' reliable links
assume). The *instant* transport is the one-batch delay with the host stepping again, with no
data, until no control is left (:class:`~tsmon.engine.embedded.InstantHost`, the Monitor's).
Points always reach their node in the batch they belong to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Transport"]

Row = dict[str, Any]


class Transport:
    """Control in flight: what :meth:`send` gets after batch ``N`` is :meth:`due` at batch
    ``N + delay``.

    Examples
    --------
    >>> t = Transport(delay=2)
    >>> t.send(0, {"n1": [{"seq": 0, "payload": {}}]})
    >>> t.due(1), t.in_flight() == {"n1": [{"seq": 0, "payload": {}}]}
    ({}, True)
    >>> t.due(2)
    {'n1': [{'seq': 0, 'payload': {}}]}
    """

    def __init__(self, delay: int = 1) -> None:
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
            raise ValueError(f"a transport's delay is a whole number of batches ≥ 1, got {delay!r}")
        self.delay = delay
        self._queue: dict[int, dict[str, list[Row]]] = {}  # due batch -> control per node key

    def send(self, batch_id: int, control: Mapping[str, list[Row]]) -> None:
        """Control written after batch ``batch_id`` (a key with no rows still steps its node)."""
        due = self._queue.setdefault(batch_id + self.delay, {})
        for key, rows in control.items():
            due.setdefault(key, []).extend(rows)

    def due(self, batch_id: int) -> dict[str, list[Row]]:
        """The control the nodes apply in batch ``batch_id`` (and everything overdue)."""
        out: dict[str, list[Row]] = {}
        for at in sorted(b for b in self._queue if b <= batch_id):
            for key, rows in self._queue.pop(at).items():
                out.setdefault(key, []).extend(rows)
        return out

    def in_flight(self) -> dict[str, list[Row]]:
        """Every control row not delivered yet, per node key, in the order sent."""
        out: dict[str, list[Row]] = {}
        for at in sorted(self._queue):
            for key, rows in self._queue[at].items():
                out.setdefault(key, []).extend(rows)
        return out
