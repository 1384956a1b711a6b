"""Directory consistency of SWAT-ASR across the sites of a tree (Bulut & Singh, §3).

The invariants §3 states or relies on, checked over all sites at once (no message in flight):

1. A segment's replication scheme is a subtree holding the source: a client with a replica has
   a parent with one (§3, after [16]).
2. Subscription lists are exact: ``v`` is on ``u``'s list for a segment iff ``v`` holds a
   replica of it, and ``u`` knows the range ``v`` holds.
3. "The precision for a segment either remains the same or decreases as we descend down the
   tree": a child's data range encloses its parent's.
4. The source's range is the current content's exact range (so every replica encloses the
   true values, by 3).
5. Lists hold only adjacent children; *interested* and *subscribed* are disjoint; after a phase
   end the interested lists are empty and all counts are 0 (Fig. 8b).
6. A directory has at most one row per SWAT node, ``3 log N - 2`` (Table 1: O(log N) rows).
"""

from __future__ import annotations

from collections.abc import Mapping

from tsmon.protocols.replication.directory import AsrSite
from tsmon.protocols.replication.segments import Approx, Segment
from tsmon.protocols.replication.source import SourceSite

__all__ = ["check_replication", "replication_violations"]


def replication_violations(
    source: SourceSite,
    clients: Mapping[int, AsrSite],
    parents: Mapping[int, int],
    after_phase: bool = False,
) -> list[str]:
    """Every broken invariant, as a sentence naming the site and segment (empty: consistent).

    Examples
    --------
    >>> from tsmon.protocols.replication.client import ClientSite
    >>> src = SourceSite(window=8)
    >>> for x in range(10):
    ...     _ = src.on_value(float(x), now_ms=0)
    >>> c1 = ClientSite(1, parent=0)
    >>> replication_violations(src, {1: c1}, {1: 0})
    []
    >>> from tsmon.protocols.replication.directory import Row
    >>> c1.directory[Segment(0, "R")] = Row(Segment(0, "R"), Approx((9.0,), (9.0,)))
    >>> for problem in replication_violations(src, {1: c1}, {1: 0}):
    ...     print(problem)
    site 1 holds (0, 'R') but is not on site 0's subscription list
    site 1's range for (0, 'R') does not enclose its parent's: [(9.0, 9.0)] vs [(8.0, 9.0)]
    """
    problems: list[str] = []
    sites: dict[int, AsrSite] = {source.site: source, **clients}
    children: dict[int, set[int]] = {s: set() for s in sites}
    for child, parent in parents.items():
        children[parent].add(child)

    def show(a: Approx) -> str:
        return str(list(zip(a.lo, a.hi, strict=True)))

    for s, site in sites.items():
        limit = 3 * (source.window.bit_length() - 1) - 2
        if len(site.directory) > limit:
            problems.append(
                f"site {s} has {len(site.directory)} rows, more than 3 log N - 2 = {limit}"
            )
        for seg, row in site.directory.items():
            name = tuple(seg)
            if s != source.site:
                up = sites[parents[s]].directory.get(seg)
                if up is None:
                    problems.append(f"site {s} holds {name} but its parent {parents[s]} does not")
                else:
                    if s not in up.subscribed:
                        problems.append(
                            f"site {s} holds {name} but is not on site {parents[s]}'s "
                            "subscription list"
                        )
                    elif up.subscribed[s] != row.approx:
                        problems.append(
                            f"site {parents[s]} thinks site {s} holds {show(up.subscribed[s])} "
                            f"for {name}, it holds {show(row.approx)}"
                        )
                    if not row.approx.encloses(up.approx):
                        problems.append(
                            f"site {s}'s range for {name} does not enclose its parent's: "
                            f"{show(row.approx)} vs {show(up.approx)}"
                        )
            for v in row.subscribed:
                if v not in children[s]:
                    problems.append(f"site {s} lists {v} as subscribed to {name}; not a child")
                elif seg not in sites[v].directory:
                    problems.append(f"site {v} is subscribed to {name} at {s} but holds no replica")
            if row.interested & set(row.subscribed):
                problems.append(
                    f"site {s}: {sorted(row.interested)} both interested and subscribed"
                )
            if not row.interested <= children[s]:
                problems.append(f"site {s} lists non-children {sorted(row.interested)} for {name}")
            if after_phase and (row.interested or row.reads or row.writes or row.child_reads):
                problems.append(
                    f"site {s} kept counts or interested children for {name} past a phase"
                )
    exact = {Segment(n.level, n.kind): Approx.of_node(n) for n in source.tree.nodes()}
    if exact != source.ranges():
        problems.append("the source's directory is not the current SWAT's slot ranges")
    return problems


def check_replication(
    source: SourceSite,
    clients: Mapping[int, AsrSite],
    parents: Mapping[int, int],
    after_phase: bool = False,
) -> None:
    """Raise ``AssertionError`` listing every broken invariant (see the module docstring)."""
    problems = replication_violations(source, clients, parents, after_phase)
    if problems:
        raise AssertionError("SWAT-ASR directories are inconsistent:\n  " + "\n  ".join(problems))
