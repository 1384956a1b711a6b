"""The source site ``S`` of SWAT-ASR (Bulut & Singh, §3): summarises the stream, roots every
replication scheme.

Values arrive here. The source keeps a SWAT (§2) whose slots are its directory rows, plus the
raw window it receives (the data's origin; it answers exactly the queries no SWAT segment can
answer within their precision). Pure logic: values, messages and phase ends in, messages out.
"""

from __future__ import annotations

import numpy as np

from tsmon.core.swat import SWAT
from tsmon.protocols.replication.directory import AsrSite, Reaction, Row
from tsmon.protocols.replication.messages import Answer, Decache, Message, Query
from tsmon.protocols.replication.segments import Approx, Segment

__all__ = ["SourceSite"]


class SourceSite(AsrSite):
    """Site 0: the SWAT over the last ``window`` values and the directory of all its segments.

    Each arrival updates the SWAT (Fig. 3a); every slot whose content changed gets its new data
    range through Fig. 8(a)'s update branch (sent to the subscribed children when the old range
    does not enclose it). A query the directory satisfies is answered from it and its reads
    counted (Fig. 8a); otherwise it is answered exactly from the raw window, and no read is
    counted (no segment could have served it).

    Parameters
    ----------
    window : int
        ``N``, a power of two ``>= 4``.
    k : int
        Blocks (Haar coefficients) per SWAT node; ``1`` is §3's one range per segment.
    site : int
        This site's number.
    slack : float or None
        Copies with slack (:class:`~tsmon.protocols.replication.directory.AsrSite`); ``None``
        is the paper's Fig. 8.

    Examples
    --------
    >>> src = SourceSite(window=8)
    >>> for x in [14, 4, 6, 2, 10, 4, 7, 9]:
    ...     _ = src.on_value(x, now_ms=0)
    >>> src.directory[Segment(0, "R")].approx  # the two most recent values, 9 and 7
    Approx(lo=(7.0,), hi=(9.0,))
    >>> q = Query(1, 0, (1, 0), 8, positions=(0, 1), weights=(1.0, 1.0), delta=2.0, route=(1,))
    >>> a = src.on_message(q, now_ms=0).messages[0]
    >>> a.value, a.bound, a.receiver, src.directory[Segment(0, "R")].interested
    (16.0, 2.0, 1, {1})
    """

    def __init__(self, window: int, k: int = 1, site: int = 0, slack: float | None = None):
        super().__init__(site, None, slack)
        self.tree = SWAT(window=window, k=k)
        self.window = window
        self._ring = np.zeros(window)
        self._newest: dict[Segment, int] = {}

    @property
    def count(self) -> int:
        """Values received so far."""
        return self.tree.count

    def values(self) -> np.ndarray:
        """The raw window, most recent first (position ``p`` at index ``p``)."""
        c = self.count
        n = min(c, self.window)
        return self._ring[(c - 1 - np.arange(n)) % self.window]

    def on_value(self, x: float, now_ms: int) -> Reaction:
        """A new value: update the SWAT, then each changed slot's data range (Fig. 8a)."""
        self.tree.update(x)
        self._ring[(self.count - 1) % self.window] = float(x)
        out: list[Message] = []
        due = (self.count & -self.count).bit_length()  # levels 0 .. due-1 were updated
        for node in self.tree.nodes():
            seg = Segment(node.level, node.kind)
            if node.level >= due and seg in self.directory:
                continue
            if self._newest.get(seg) == node.newest:
                continue
            self._newest[seg] = node.newest
            approx = Approx.of_node(node)
            if seg in self.directory:
                out += self.update(seg, approx)
            else:  # the slot just filled with real values (warm-up)
                self.directory[seg] = Row(seg, approx)
        return Reaction(tuple(out))

    def on_message(self, m: Message, now_ms: int) -> Reaction:
        """A query forwarded by a child (answered here, Fig. 8a) or a child's decache."""
        if isinstance(m, Decache):
            self._on_decache(m)
            return Reaction()
        if not isinstance(m, Query):
            raise TypeError(f"the source takes Query and Decache messages, got {type(m).__name__}")
        shift = self.count - m.count
        if shift < 0 or (m.positions and max(m.positions) + shift >= min(self.count, self.window)):
            raise ValueError(
                f"query {m.qid} at count {m.count} reaches past the source's window "
                f"(count {self.count}, N = {self.window}); ask only positions still in the window"
            )
        positions = [p + shift for p in m.positions]
        d = self._serve(positions, m.weights, m.delta, self.count, child=m.sender)
        if d.satisfied:
            value, bound, exact = d.value, d.bound, False
        else:
            value, bound, exact = float(np.dot(m.weights, self.values()[positions])), 0.0, True
        back = Answer(self.site, m.sender, m.qid, value, bound, self.site, m.route[:-1], exact)
        return Reaction((back,))
