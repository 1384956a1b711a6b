"""A SWAT-ASR site's directory and the handlers of Fig. 8 it shares with every site (§3).

Each row holds Table 1's *window segment*, *data range* and *subscription list*, plus what the
phase-end tests need: the *interested* list (children that read the segment here without
subscribing), the local read count, a read count per adjacent child and the write count.
:class:`AsrSite` implements Fig. 8(a)'s update and query branches and Fig. 8(b)'s phase end;
:class:`~tsmon.protocols.replication.source.SourceSite` and
:class:`~tsmon.protocols.replication.client.ClientSite` add where values and queries come from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tsmon.protocols.replication.cover import Decomposition, decompose
from tsmon.protocols.replication.messages import Answer, Decache, Insert, Message, Update
from tsmon.protocols.replication.segments import Approx, Segment

__all__ = ["AsrSite", "Reaction", "Row"]


@dataclass
class Row:
    """One directory row (Table 1) with its phase counters (§3).

    ``subscribed`` maps each subscribed child to the data range it was last sent (its copy);
    ``reads`` is ``u.readCount`` (queries satisfied here with this segment, local or from a
    child), ``child_reads[v]`` is ``v.readCount``, ``writes`` is ``S.writeCount`` (updates whose
    range the previous one did not enclose, Fig. 8a). With slack (:class:`AsrSite`),
    ``tolerance`` is the smallest ``(delta - bound) / sum|W|`` of the phase's reads (the
    precision they left unused per unit weight), ``slack`` how much copies are widened on each
    side, ``envelope`` the copy a subscriber gets now (it encloses ``approx``).

    Examples
    --------
    >>> r = Approx((30.0,), (40.0,))
    >>> row = Row(Segment(0, "L"), r, subscribed={1: r})
    >>> sorted(row.subscribed), row.writes
    ([1], 0)
    """

    segment: Segment
    approx: Approx
    subscribed: dict[int, Approx] = field(default_factory=dict)
    interested: set[int] = field(default_factory=set)
    reads: int = 0
    child_reads: dict[int, int] = field(default_factory=dict)
    writes: int = 0
    tolerance: float = math.inf
    slack: float = 0.0
    envelope: Approx | None = None


@dataclass(frozen=True)
class Reaction:
    """What a handler produced: ``messages`` to send and ``answers`` delivered to this site's
    application (answers to its own queries)."""

    messages: tuple[Message, ...] = ()
    answers: tuple[Answer, ...] = ()


class AsrSite:
    """Fig. 8 at one site ``u``: the directory, the query and update branches, the phase end.

    ``parent`` is ``None`` at the source, which never decaches (it is always in the replication
    scheme, so [16]'s switch test is not needed, §3).

    ``slack`` (not in the paper; ``None``: Fig. 8 as printed) widens the copies sent to
    children by ``slack`` times the precision the segment's reads of the last phase left
    unused, ``min (delta - bound) / sum|W|`` (so, for ``slack <= 1``, those reads would still
    be satisfied by the wider copies), as Divergence Caching and Adaptive Precision Setting
    (§4) choose their widths from the reads. A new range inside a child's copy is then no
    write and is not sent (Fig. 8a's "old R encloses R" test, held per child): at loose
    precision a slot's new content rarely leaves its copy.
    """

    def __init__(self, site: int, parent: int | None, slack: float | None = None) -> None:
        if slack is not None and not slack >= 0:
            raise ValueError(f"slack must be None (the paper's Fig. 8) or >= 0, got {slack}")
        self.site = site
        self.parent = parent
        self.slack = slack
        self.directory: dict[Segment, Row] = {}

    def __repr__(self) -> str:
        name, rows = type(self).__name__, len(self.directory)
        return f"{name}(site={self.site}, parent={self.parent}, rows={rows})"

    def ranges(self) -> dict[Segment, Approx]:
        """The data range of every segment replicated here."""
        return {seg: row.approx for seg, row in self.directory.items()}

    # -- Fig. 8(a) ---------------------------------------------------------------------------
    def _serve(
        self,
        positions: Sequence[int],
        weights: Sequence[float],
        delta: float,
        count: int,
        child: int | None,
    ) -> Decomposition:
        """Fig. 8(a) query branch: decompose; if satisfied, count the read on every segment
        used (``child`` is the adjacent site it came from, ``None`` for a local query)."""
        d = decompose(self.ranges(), count, positions, weights, delta)
        if d.satisfied:
            scale = float(np.abs(np.asarray(weights, dtype=float)).sum())
            tolerance = (delta - d.bound) / scale if scale > 0 else math.inf  # unused, per weight
            for seg in d.used:
                row = self.directory[seg]
                row.reads += 1
                row.tolerance = min(row.tolerance, tolerance)
                if child is not None:
                    if child not in row.subscribed:
                        row.interested.add(child)
                    row.child_reads[child] = row.child_reads.get(child, 0) + 1
        return d

    def update(self, segment: Segment, approx: Approx) -> list[Message]:
        """Fig. 8(a) update branch: adopt ``approx``; if the old range does not enclose it,
        count a write and send it to every subscribed child."""
        row = self.directory[segment]
        old, row.approx = row.approx, approx
        if self.slack is not None:
            return self._update_with_slack(row, old)
        if old.encloses(approx):
            return []
        row.writes += 1
        for child in row.subscribed:
            row.subscribed[child] = approx
        return [Update(self.site, child, segment, approx) for child in sorted(row.subscribed)]

    def _copy(self, row: Row) -> Approx:
        """What a subscriber gets now: the range itself, or with slack the envelope."""
        if self.slack is None:
            return row.approx
        if row.envelope is None or not row.envelope.encloses(row.approx):
            row.envelope = row.approx.widened(row.slack)
        return row.envelope

    def _update_with_slack(self, row: Row, old: Approx) -> list[Message]:
        """A write when the range leaves the envelope (the old range if none was made); an
        update to each child whose copy does not enclose the new range."""
        if not (row.envelope or old).encloses(row.approx):
            row.writes += 1
        copy, out = self._copy(row), []
        for child, held in sorted(row.subscribed.items()):
            if not held.encloses(row.approx):
                row.subscribed[child] = copy
                out.append(Update(self.site, child, row.segment, copy))
        return out

    def _on_replica(self, m: Update | Insert) -> list[Message]:
        """An update or insert from the parent (an update for a dropped replica is stale)."""
        if m.segment not in self.directory:
            if isinstance(m, Update):
                return []
            self.directory[m.segment] = Row(m.segment, m.approx)
            return []
        return self.update(m.segment, m.approx)

    def _on_decache(self, m: Decache) -> None:
        row = self.directory.get(m.segment)
        if row is not None:
            row.subscribed.pop(m.sender, None)

    # -- Fig. 8(b) ---------------------------------------------------------------------------
    def end_phase(self, now_ms: int) -> Reaction:
        """Fig. 8(b) for every segment: the contraction test at an R-fringe site, else the
        expansion test towards each subscribed or interested child; then reset the counts.

        Fig. 8(b) reads "if fringe ... else if R-neighbor"; §3's example has a fringe site
        (``C_1``) expand, so a fringe site that keeps its replica runs the expansion test too.
        An update that would not change a subscribed child's range is not sent.
        """
        out: list[Message] = []
        for seg in sorted(self.directory, key=Segment.order):
            row = self.directory[seg]
            new_slack = row.slack if self.slack is None else self.slack * row.tolerance
            if row.tolerance < math.inf and new_slack != row.slack:  # the phase's precision
                row.slack, row.envelope = new_slack, None
            row.tolerance = math.inf
            fringe = self.parent is not None and not row.subscribed
            if fringe and row.reads < row.writes:  # contraction test
                del self.directory[seg]
                out.append(Decache(self.site, self.parent, seg))
                continue
            copy = self._copy(row)
            for child, held in sorted(row.subscribed.items()):  # subscribed, not adequate
                tighter = held != copy and held.encloses(copy)  # (slack: never a wider copy)
                if row.writes < row.child_reads.get(child, 0) and tighter:
                    row.subscribed[child] = copy
                    out.append(Update(self.site, child, seg, copy))
            for child in sorted(row.interested):  # expansion test
                if row.writes < row.child_reads.get(child, 0):
                    row.subscribed[child] = copy
                    out.append(Insert(self.site, child, seg, copy))
            row.interested.clear()
            row.child_reads.clear()
            row.reads = row.writes = 0
        return Reaction(tuple(out))
