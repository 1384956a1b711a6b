"""Messages of distributed top-k monitoring (Babcock & Olston, SIGMOD 2003, §3.1).

Every message names the monitor node ``node`` (1..m) it goes to or comes from; the coordinator
is ``N_0``. Values are exact integers (partial values ``V_ij``, adjustment factors ``δ_ij``,
border values ``B_j``). Each message counts once; its size is :attr:`entries` (one per object
value, adjustment factor, top-k member, border or default), the measure of §4.2.

* :class:`ResolutionRequest` — Phase 1, ``N_f → N_0``: the values ``(V_if, δ_if)`` of the
  resolution set ``R = T ∪ F`` and the border value ``B_f``.
* :class:`ValueRequest` — Phase 3, ``N_0 → N_j``: asks for the values of ``R`` and ``B_j``
  (``objects is None``: every value the node holds, a *full refresh*).
* :class:`ValueReply` — Phase 3 answer, ``N_j → N_0`` (also the one-time initial gather).
* :class:`Install` — ``N_0 → N_j``: new adjustment factors and, when it changed, the new
  top-k set ``T'``; ends resolution (Phase 2 or 3).
* :class:`Offload`, :class:`CountRequest`, :class:`CountReply`, :class:`Shift` — the message
  size reduction of Appendix C: a decrease of a top-k object that would break more than θ
  constraints is moved to the node where it breaks the fewest.

Headers are not entries: the epoch of the top-k set and the node's *version* (the number of
installs and shifts it has taken) ride on requests and installs as the node id does (Appendix
A: the coordinator ignores requests from earlier epochs; the version also catches a request
sent before an install that was already on its way).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

Obj = Hashable


@dataclass(frozen=True)
class ResolutionRequest:
    """Phase 1 (§3.1): node ``node`` found a violated constraint.

    ``values`` maps every object of ``R = T ∪ F`` to ``(V_ij, δ_ij)``; ``border`` is ``B_j``
    w.r.t. that ``R``; ``phantom`` says an object the node holds no entry for (adjusted value
    ``default``) beats a top-k object; ``updates`` counts the node's updates since its last
    message (for proportional allocation, §4.3).

    Examples
    --------
    >>> ResolutionRequest(1, {"a": (3, 0), "b": (5, 0)}, border=3).entries
    3
    """

    node: int
    values: Mapping[Obj, tuple[int, int]]
    border: int
    phantom: bool = False
    updates: int = 0
    epoch: int = 0
    version: int = 0
    new: bool = False  # bottom-k: names an object the coordinator may not know (Phase 3)

    @property
    def entries(self) -> int:
        """Object values plus the border value."""
        return len(self.values) + 1


@dataclass(frozen=True)
class ValueRequest:
    """Phase 3 (§3.1): ask ``node`` for ``(V_ij, δ_ij)`` of ``objects`` and its border value.

    ``objects is None`` asks for everything (full refresh; one entry for the request itself).

    Examples
    --------
    >>> ValueRequest(2, frozenset({"a", "b"})).entries, ValueRequest(2, None).entries
    (2, 1)
    """

    node: int
    objects: frozenset[Obj] | None

    @property
    def entries(self) -> int:
        """Objects named (at least one entry)."""
        return 1 if self.objects is None else max(1, len(self.objects))


@dataclass(frozen=True)
class ValueReply:
    """Answer to a :class:`ValueRequest`: ``values`` and the border ``B_j`` (``None`` on a full
    refresh, where the node also sends ``default``, the adjustment of objects it never saw).

    Examples
    --------
    >>> ValueReply(2, {"a": (1, -1)}, border=0).entries
    2
    """

    node: int
    values: Mapping[Obj, tuple[int, int]]
    border: int | None = None
    default: int | None = None
    updates: int = 0

    @property
    def entries(self) -> int:
        """Object values plus border and default when present."""
        return len(self.values) + (self.border is not None) + (self.default is not None)


@dataclass(frozen=True)
class Install:
    """New adjustment factors ``δ_ij`` for ``node`` (and ``T'`` when ``top`` is not ``None``,
    ``default`` when the adjustment of unseen objects changed).

    Examples
    --------
    >>> Install(1, {"a": 2, "b": -2}, top=frozenset({"a"})).entries
    3
    """

    node: int
    deltas: Mapping[Obj, int]
    top: frozenset[Obj] | None = None
    default: int | None = None
    epoch: int = 0

    @property
    def entries(self) -> int:
        """Adjustment factors, top-k members and default sent (at least one)."""
        n = len(self.deltas) + (len(self.top) if self.top is not None else 0)
        return max(1, n + (self.default is not None))


@dataclass(frozen=True)
class Offload:
    """Appendix C, ``N_j → N_0``: the decrease ``−delta`` of top-k object ``obj`` would break
    ``violated`` (> θ) constraints at ``node``, which cancelled it by ``δ_ij += delta``.

    Examples
    --------
    >>> Offload(1, "a", 5, violated=30).entries
    3
    """

    node: int
    obj: Obj
    delta: int
    violated: int
    epoch: int = 0
    version: int = 0

    @property
    def entries(self) -> int:
        """Object key, amount and number of violated constraints."""
        return 3


@dataclass(frozen=True)
class CountRequest:
    """Appendix C, ``N_0 → N_j``: how many constraints would ``(obj, N_j, −delta)`` break?

    Examples
    --------
    >>> CountRequest(2, "a", 5).entries
    2
    """

    node: int
    obj: Obj
    delta: int

    @property
    def entries(self) -> int:
        """Object key and amount."""
        return 2


@dataclass(frozen=True)
class CountReply:
    """Appendix C, ``N_j → N_0``: the number of constraints the hypothetical update breaks
    (``phantom``: it also breaks the one against objects the node never saw).

    Examples
    --------
    >>> CountReply(2, 0).entries
    1
    """

    node: int
    violated: int
    phantom: bool = False

    @property
    def entries(self) -> int:
        """One count."""
        return 1


@dataclass(frozen=True)
class Shift:
    """Appendix C, ``N_0 → N_j``: ``δ_ij −= delta``, the offloaded decrease now applies here.

    Examples
    --------
    >>> Shift(2, "a", 5).entries
    2
    """

    node: int
    obj: Obj
    delta: int
    epoch: int = 0

    @property
    def entries(self) -> int:
        """Object key and amount."""
        return 2


Message = (
    ResolutionRequest
    | ValueRequest
    | ValueReply
    | Install
    | Offload
    | CountRequest
    | CountReply
    | Shift
)
ToCoordinator = ResolutionRequest | ValueReply | Offload | CountReply
ToNode = ValueRequest | Install | CountRequest | Shift


@dataclass
class MessageCounts:
    """Messages that crossed the network, by kind, and their total size in entries.

    Examples
    --------
    >>> counts = MessageCounts()
    >>> counts.add(ResolutionRequest(1, {"a": (1, 0)}, border=1))
    >>> counts.add(Install(1, {"a": 0}))
    >>> counts.total, counts.entries, counts.max_entries
    (2, 3, 2)
    """

    requests: int = 0
    value_requests: int = 0
    value_replies: int = 0
    installs: int = 0
    cache_updates: int = 0
    offloads: int = 0  # Offload, CountRequest, CountReply and Shift (Appendix C)
    entries: int = 0
    max_entries: int = 0
    by_phase: dict[str, int] = field(default_factory=dict)

    def add(self, message: Message | CacheUpdate) -> None:
        """Count one ``message`` by its kind and size."""
        if isinstance(message, ResolutionRequest):
            self.requests += 1
        elif isinstance(message, ValueRequest):
            self.value_requests += 1
        elif isinstance(message, ValueReply):
            self.value_replies += 1
        elif isinstance(message, Install):
            self.installs += 1
        elif isinstance(message, CacheUpdate):
            self.cache_updates += 1
        elif isinstance(message, Offload | CountRequest | CountReply | Shift):
            self.offloads += 1
        else:
            raise TypeError(f"cannot count {type(message).__name__}")
        self.entries += message.entries
        self.max_entries = max(self.max_entries, message.entries)

    @property
    def total(self) -> int:
        """All messages, every kind."""
        return (
            self.requests
            + self.value_requests
            + self.value_replies
            + self.installs
            + self.cache_updates
            + self.offloads
        )

    @property
    def mean_entries(self) -> float:
        """Mean entries per message (0 when nothing was sent)."""
        return self.entries / self.total if self.total else 0.0


@dataclass(frozen=True)
class CacheUpdate:
    """Caching baseline (§4.4): node ``node`` refreshes the coordinator's copy of ``V_ij``.

    Examples
    --------
    >>> CacheUpdate(1, "a", 7).entries
    1
    """

    node: int
    object_id: Obj
    value: int

    @property
    def entries(self) -> int:
        """One value."""
        return 1
