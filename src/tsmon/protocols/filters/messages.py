"""Messages of the adaptive bound filter protocol (Olston, Jiang, Widom 2003, §1.2.3, §3).

Three kinds travel: a *streamed update* (source → coordinator, a value that left its bound), a
*growth* message (coordinator → source, §3.2) and an explicit *shrink* message (coordinator →
source, §3.4). Growth and shrink carry the **absolute** new width as of a period boundary, so a
late or repeated message never widens a bound twice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamedUpdate:
    """A value of ``object_id`` that passed its filter and is sent to the coordinator.

    Examples
    --------
    >>> StreamedUpdate("a", 3.5, 1_000)
    StreamedUpdate(object_id='a', value=3.5, ts_ms=1000)
    """

    object_id: str
    value: float
    ts_ms: int


@dataclass(frozen=True)
class Growth:
    """New absolute bound width ``width`` of ``object_id`` as of the period boundary ``ts_ms``.

    Examples
    --------
    >>> Growth("a", 2.0, 10_000).width
    2.0
    """

    object_id: str
    width: float
    ts_ms: int


@dataclass(frozen=True)
class Shrink:
    """New, narrower absolute bound width of ``object_id`` as of ``ts_ms`` (§3.4).

    Examples
    --------
    >>> Shrink("a", 0.5, 10_000)
    Shrink(object_id='a', width=0.5, ts_ms=10000)
    """

    object_id: str
    width: float
    ts_ms: int


WidthMessage = Growth | Shrink
Message = StreamedUpdate | Growth | Shrink


@dataclass
class MessageCounts:
    """Number of messages of each kind that crossed the network.

    Examples
    --------
    >>> counts = MessageCounts()
    >>> counts.add(StreamedUpdate("a", 1.0, 0))
    >>> counts.add(Growth("a", 2.0, 10))
    >>> counts, counts.total
    (MessageCounts(streamed=1, growth=1, shrink=0), 2)
    """

    streamed: int = 0
    growth: int = 0
    shrink: int = 0

    def add(self, message: Message) -> None:
        """Count one ``message`` by its kind."""
        if isinstance(message, StreamedUpdate):
            self.streamed += 1
        elif isinstance(message, Growth):
            self.growth += 1
        elif isinstance(message, Shrink):
            self.shrink += 1
        else:
            raise TypeError(
                f"cannot count {type(message).__name__}; pass a StreamedUpdate, Growth or Shrink"
            )

    @property
    def total(self) -> int:
        """All messages, every kind."""
        return self.streamed + self.growth + self.shrink
