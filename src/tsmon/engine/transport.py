"""How messages travel between a protocol's sites: the one transport of the hosts and simulations.

A :class:`Link` holds the messages in flight. :meth:`Link.send` counts a group of messages (one
handler's output at one moment) with the network's ``count`` hook and tallies them in
:attr:`Link.sent`, then for each message asks the ``loss`` rule whether it is dropped
(:attr:`Link.dropped`) and the ``delay`` rule when it is due. :meth:`Link.pop` hands out the
messages in ``(due, priority, send order)`` order. Three transports come from it:

* **instant**: :func:`no_delay`, every message due when it is sent (FIFO per priority);
* **delayed**: any :data:`Delay` rule, e.g. :class:`FixedDelay` or the seeded latency models of
  the experiments (:mod:`tsmon.sim.filters.latency`);
* **lossy**: a :data:`Loss` rule, e.g. :class:`SeededLoss` (each message dropped with
  probability ``p`` by one seeded generator, so a replay drops the same messages).

No paper defines answers under loss: top-k assumes reliable channels (Babcock & Olston 2003,
Appendix A, footnote 2), SWAT-ASR reliable in-order links (Bulut & Singh 2003, §3), and the
adaptive filters model delays (Olston, Jiang & Widom 2003, §4), not loss. So the lossy
transport is for experiments and tests; the one reaction to loss in the code is a SWAT-ASR
summary reader's, which raises at the gap a lost message leaves (:mod:`tsmon.engine.replicas`).

Time is an argument (ms in the simulations, batch ids in :class:`Transport`): no clock, no I/O.

The batch host's control (:class:`Transport`): on Spark the control the coordinator writes
after batch ``N`` (``ctrl-N.json``) is read by the nodes in batch ``N + 1``, a one-batch delay,
the default of :class:`~tsmon.engine.batched.BatchedRuntime`. A longer delay models a slow
control channel (each batch's control still arrives whole and in order, as the protocols'
reliable links assume). The *instant* transport of the batch host is the one-batch delay with
the host stepping again, with no data, until no control is left
(:class:`~tsmon.engine.embedded.InstantHost`, the Monitor's). Points always reach their node in
the batch they belong to.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = [
    "Delay",
    "FixedDelay",
    "Link",
    "Loss",
    "SeededLoss",
    "Transport",
    "no_delay",
]

M = TypeVar("M")
Row = dict[str, Any]

#: Delay (≥ 0, in the network's time unit) of a message sent at the given time.
Delay = Callable[[Any, int], int]
#: Whether a message sent at the given time is lost.
Loss = Callable[[Any, int], bool]


def no_delay(message: object, sent: int) -> int:
    """Instant delivery."""
    return 0


@dataclass(frozen=True)
class FixedDelay:
    """Every message due ``delay`` time units after it is sent.

    >>> FixedDelay(3)("m", 10)
    3
    """

    delay: int

    def __post_init__(self) -> None:
        if not isinstance(self.delay, int) or isinstance(self.delay, bool) or self.delay < 0:
            raise ValueError(f"a delay is a whole number ≥ 0, got {self.delay!r}")

    def __call__(self, message: object, sent: int) -> int:
        return self.delay


@dataclass
class SeededLoss:
    """Drop each message with probability ``p``: one draw per message, in send order, from a
    generator seeded with ``seed`` (a replay drops the same messages).

    Examples
    --------
    >>> lose = SeededLoss(0.25, seed=3)
    >>> drops = [lose("m", t) for t in range(10_000)]
    >>> again = SeededLoss(0.25, seed=3)
    >>> sum(drops), drops == [again("m", t) for t in range(10_000)]
    (2549, True)
    """

    p: float
    seed: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"a loss probability is in [0, 1], got {self.p!r}")
        self.rng = np.random.default_rng([self.seed, 11])

    def __call__(self, message: object, sent: int) -> bool:
        return bool(self.rng.random() < self.p)


class Link(Generic[M]):
    """Messages in flight, each due at its send time plus its delay unless the loss rule drops it.

    ``count`` sees every group of messages sent (the network's message counts, kept in one
    place: what is sent costs bandwidth whether or not it arrives). :attr:`sent`,
    :attr:`dropped` and :attr:`delivered` count messages; ``sent = dropped + delivered`` once
    nothing is in flight.

    Examples
    --------
    >>> link = Link(delay=FixedDelay(2))
    >>> link.send(["a", "b"], 0); link.send(["c"], 1)
    >>> link.next_due(), len(link)
    ((2, 0), 3)
    >>> link.pop(), link.pop(), link.pop()
    ((2, 'a'), (2, 'b'), (3, 'c'))
    >>> lossy = Link(loss=SeededLoss(1.0))
    >>> lossy.send(["a", "b"], 0)
    >>> lossy.sent, lossy.dropped, len(lossy)
    (2, 2, 0)
    """

    def __init__(
        self,
        delay: Delay = no_delay,
        loss: Loss | None = None,
        count: Callable[[Sequence[M]], object] | None = None,
    ) -> None:
        self.delay = delay
        self.loss = loss
        self.count = count
        self.sent = self.dropped = self.delivered = 0
        self._queued = 0  # messages queued so far: the send order
        self._flight: list[tuple[int, int, int, M]] = []

    def send(self, messages: Sequence[M], now: int, priority: int = 0) -> None:
        """Send ``messages`` (one handler's, at ``now``); at equal due times a lower
        ``priority`` is delivered first, then the send order."""
        if not messages:
            return
        if self.count is not None:
            self.count(messages)
        self.sent += len(messages)
        for m in messages:
            if self.loss is not None and self.loss(m, now):
                self.dropped += 1
                continue
            d = self.delay(m, now)
            if not d >= 0:
                raise ValueError(f"delay of {m!r} must be ≥ 0, got {d}")
            self._queued += 1
            heapq.heappush(self._flight, (now + int(d), priority, self._queued, m))

    def __len__(self) -> int:
        """Messages in flight."""
        return len(self._flight)

    def next_due(self) -> tuple[int, int] | None:
        """``(due, priority)`` of the next message, or None when none is in flight."""
        return self._flight[0][:2] if self._flight else None

    def due_times(self) -> list[int]:
        """The due time of every message in flight (in no order)."""
        return [f[0] for f in self._flight]

    def pop(self) -> tuple[int, M]:
        """The next message and its due time."""
        due, _, _, message = heapq.heappop(self._flight)
        self.delivered += 1
        return due, message

    def in_flight(self) -> list[M]:
        """The messages not delivered yet, in delivery order."""
        return [f[3] for f in sorted(self._flight)]


class Transport:
    """The batch host's control in flight: what :meth:`send` gets after batch ``N`` is
    :meth:`due` at batch ``N + delay``, unless ``loss`` drops a node's control of that batch.

    Examples
    --------
    >>> t = Transport(delay=2)
    >>> t.send(0, {"n1": [{"seq": 0, "payload": {}}]})
    >>> t.due(1), t.in_flight() == {"n1": [{"seq": 0, "payload": {}}]}
    ({}, True)
    >>> t.due(2)
    {'n1': [{'seq': 0, 'payload': {}}]}
    """

    def __init__(self, delay: int = 1, loss: Loss | None = None) -> None:
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
            raise ValueError(f"a transport's delay is a whole number of batches ≥ 1, got {delay!r}")
        self.delay = delay
        self.link: Link[tuple[str, list[Row]]] = Link(FixedDelay(delay), loss)

    def send(self, batch_id: int, control: Mapping[str, list[Row]]) -> None:
        """Control written after batch ``batch_id`` (a key with no rows still steps its node)."""
        self.link.send([(key, list(rows)) for key, rows in control.items()], batch_id)

    def due(self, batch_id: int) -> dict[str, list[Row]]:
        """The control the nodes apply in batch ``batch_id`` (and everything overdue)."""
        due: list[tuple[str, list[Row]]] = []
        while (head := self.link.next_due()) is not None and head[0] <= batch_id:
            due.append(self.link.pop()[1])
        return _by_key(due)

    def in_flight(self) -> dict[str, list[Row]]:
        """Every control row not delivered yet, per node key, in the order sent."""
        return _by_key(self.link.in_flight())


def _by_key(sent: Iterable[tuple[str, list[Row]]]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for key, rows in sent:
        out.setdefault(key, []).extend(rows)
    return out
