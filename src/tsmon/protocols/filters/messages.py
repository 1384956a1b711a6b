"""Messages of the adaptive bound filter protocol (Olston, Jiang, Widom 2003, §1.2.3, §3, §4).

Three kinds travel: a *streamed update* (source → coordinator, a value that left its bound), a
*growth* message (coordinator → source, §3.2) and an explicit *shrink* message (coordinator →
source, §3.4). Growth and shrink carry the **absolute** width as of their timestamp and a
sequence number, so a late or repeated message never widens a bound twice: the source replays
the period shrinks it passed since that timestamp, exactly as the coordinator did.

A streamed update names the last width message its source applied (``width_seq``); that is how
the coordinator learns that a narrower bound is in force at the source (§4: the coordinator's
view of a bound is never narrower than the source's).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StreamedUpdate:
    """A value of ``object_id`` sent to the coordinator at event time ``ts_ms``.

    ``forced`` marks a reply to a width message (shrink or a change of adaptivity) rather than
    a value that left its bound; replies are not counted in the streamed update period ``P_i``.
    ``seq`` numbers the updates of ``object_id`` (1, 2, …): of two updates with the same
    ``ts_ms`` the higher ``seq`` is the newer, whatever order they arrive in (§4).
    ``shadow``, when the source was told its uniform static width, is how many updates a
    filter of that width would have sent so far (the coordinator's safety net, ``tuning``).

    Examples
    --------
    >>> StreamedUpdate("a", 3.5, 1_000)
    StreamedUpdate(object_id='a', value=3.5, ts_ms=1000, width_seq=None, forced=False, seq=0)
    """

    object_id: str
    value: float
    ts_ms: int
    width_seq: int | None = None
    forced: bool = False
    seq: int = 0
    shadow: int | None = field(default=None, repr=False)  # shown by codec.to_dict


@dataclass(frozen=True)
class Growth:
    """New absolute width ``width`` of ``object_id`` as of ``ts_ms`` (§3.2), never narrower.

    ``adaptive`` says whether the width then shrinks every period (§3.1); objects only in
    single-object queries keep a fixed width, objects in no query have ``width = inf``.
    ``period_ms``, when set, tells a source started without a period the adjustment period
    ``T`` the coordinator chose (once, from the observed sampling interval); ``uniform`` the
    width uniform static allocation would give it (for ``StreamedUpdate.shadow``).

    Examples
    --------
    >>> Growth("a", 2.0, 10_000, seq=3).width
    2.0
    """

    object_id: str
    width: float
    ts_ms: int
    seq: int
    adaptive: bool = True
    period_ms: int | None = field(default=None, repr=False)  # shown by codec.to_dict
    uniform: float | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Shrink:
    """New, narrower absolute width of ``object_id`` as of ``ts_ms`` (§3.4); asks for a reply.

    ``period_ms`` and ``uniform`` as in :class:`Growth`.

    Examples
    --------
    >>> Shrink("a", 0.5, 10_000, seq=4)
    Shrink(object_id='a', width=0.5, ts_ms=10000, seq=4, adaptive=True)
    """

    object_id: str
    width: float
    ts_ms: int
    seq: int
    adaptive: bool = True
    period_ms: int | None = field(default=None, repr=False)  # shown by codec.to_dict
    uniform: float | None = field(default=None, repr=False)


WidthMessage = Growth | Shrink
Message = StreamedUpdate | Growth | Shrink


@dataclass
class MessageCounts:
    """Number of messages of each kind that crossed the network.

    ``replies`` is the part of ``streamed`` sent in reply to width messages.

    Examples
    --------
    >>> counts = MessageCounts()
    >>> counts.add(StreamedUpdate("a", 1.0, 0))
    >>> counts.add(Growth("a", 2.0, 10, seq=1))
    >>> counts, counts.total
    (MessageCounts(streamed=1, growth=1, shrink=0, replies=0), 2)
    """

    streamed: int = 0
    growth: int = 0
    shrink: int = 0
    replies: int = 0

    def add(self, message: Message) -> None:
        """Count one ``message`` by its kind."""
        if isinstance(message, StreamedUpdate):
            self.streamed += 1
            self.replies += message.forced
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


@dataclass
class EnvelopeCounts:
    """Messages as they would travel if one source's messages of one instant shared a packet.

    An *envelope* is one (source, send time, direction) with at least one message: ``up``
    carries streamed updates (source → coordinator), ``down`` growth and shrink messages
    (coordinator → source). With a per-message cost model (§3: "batching of stream updates
    from the same source is a topic of future work") the cost is :attr:`total` instead of
    :attr:`MessageCounts.total`. Counting only: the messages themselves still travel one by one.

    Examples
    --------
    >>> env = EnvelopeCounts()
    >>> for key in [("s", 0, "up"), ("s", 0, "up"), ("t", 0, "up"), ("s", 0, "down")]:
    ...     env.add(*key)
    >>> env, env.total
    (EnvelopeCounts(up=2, down=1), 3)
    """

    up: int = 0
    down: int = 0
    _seen: set[tuple[str, int, str]] = field(default_factory=set, repr=False, compare=False)
    _seen_ms: int | None = field(default=None, repr=False, compare=False)

    def add(self, source: str, sent_ms: int, direction: str) -> None:
        """Count a message of ``source`` sent at ``sent_ms`` (non-decreasing) ``"up"`` or
        ``"down"``; it opens a new envelope unless one for the same key is open."""
        if direction not in ("up", "down"):
            raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
        if sent_ms != self._seen_ms:
            self._seen, self._seen_ms = set(), sent_ms  # envelopes of past instants are closed
        key = (source, sent_ms, direction)
        if key in self._seen:
            return
        self._seen.add(key)
        if direction == "up":
            self.up += 1
        else:
            self.down += 1

    @property
    def total(self) -> int:
        """All envelopes, both directions."""
        return self.up + self.down
