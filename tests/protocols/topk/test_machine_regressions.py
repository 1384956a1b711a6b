"""The failures :mod:`tests.protocols.topk.test_machine` found, replayed as plain step lists
(no Hypothesis database needed), with the machine's invariants checked after every step.

The first two come from a node joining while a gather (§3) or a full refresh runs: the join
used to send every node an install, and a node that had already answered the gather took it
for the gather's own install. An object it first saw after its reply then kept the old
``d_j`` instead of the new one the coordinator assumed, so ``Σ_j δ_ij + δ_i0 ≠ 0``
(Invariant 1, §3) and, after the next resolution, ``δ_t0 + ε < δ_s0`` at the coordinator
(Invariant 2). The others were found by longer runs once those were fixed.
"""

from __future__ import annotations

from tests.protocols.topk.test_machine import TopKMachine
from tsmon.protocols.topk.coordinator import Policy


def replay(setup: dict, steps: list[tuple]) -> None:
    """Run ``steps`` on a :class:`TopKMachine`: ``("update", node, obj, Δ)``,
    ``("down", node)`` or ``("up", node)`` (deliver the head of that link) or a rule's name and
    arguments (``("alter", k, ε)``)."""
    machine = TopKMachine()
    machine.setup(**setup)
    for step in steps:
        if step[0] == "update":
            _, j, obj, delta = step
            machine.partial[(j, obj)] = machine.partial.get((j, obj), 0) + delta
            machine.oracle.apply(obj, delta)
            machine.net.update(j, obj, delta)
        elif step[0] in ("down", "up"):
            (machine.net.deliver_down if step[0] == "down" else machine.net.deliver_up)(step[1])
        else:
            getattr(machine, step[0])(*step[1:])
        machine.every_message_counted_once()
        machine.invariant_2_at_the_coordinator()
        machine.valid_when_quiet()


def test_join_during_the_gather_keeps_invariant_1() -> None:
    """Node 2 answers the gather, a node joins, node 2 sees object 0: it must take the
    gather's new ``d_2`` for it (the install of the join is no answer to the gather)."""
    setup = dict(m=2, k=1, eps=0, bottom=False, theta=None, policy=Policy.paper())
    replay(
        setup,
        [
            ("down", 2),
            ("update", 1, 1, 1),
            ("deliver_batch",),
            ("join",),
            ("update", 2, 0, 0),
            ("settle",),
        ],
    )


def test_join_during_a_full_refresh_keeps_invariant_2() -> None:
    """The same during a full refresh (object 1 fell below the phantom at node 2); with
    ``F_0 = 1`` the broken sum went whole to ``δ_00`` and put object 0 above ``T`` there."""
    setup = dict(m=2, k=1, eps=0, bottom=False, theta=None, policy=Policy(1, True))
    replay(
        setup,
        [
            ("update", 2, 1, 1),
            ("join",),
            ("join",),
            ("join",),
            ("settle",),
            ("update", 2, 1, -1),
            ("deliver_batch",),
            ("down", 2),
            ("update", 2, 0, 0),
            ("deliver_batch",),
            ("join",),
            ("settle",),
        ],
    )


def test_object_seen_after_a_gather_reply_is_checked_with_its_new_delta() -> None:
    """An ALTER's gather keeps ``T``: its install (no ``T'``) changes ``δ_1j`` of object 1, seen
    after the reply, to the new ``d_j``; the constraint check must use it (it was kept at the
    old adjusted value, so the node never asked and ``{0, 2}`` stayed the answer)."""
    setup = dict(m=1, k=1, eps=0, bottom=False, theta=None, policy=Policy.paper())
    replay(
        setup,
        [
            ("update", 1, 0, 0),
            ("deliver_batch",),
            ("settle",),
            ("alter", 2, 1),
            ("update", 1, 2, 0),
            ("settle",),
            ("alter", 2, 0),
            ("down", 1),
            ("update", 1, 1, 1),
            ("deliver_batch",),
            ("settle",),
        ],
    )


def test_offload_sent_before_a_gather_reply_is_placed_once() -> None:
    """Appendix C during an ALTER's gather: the node cancels a decrease and offloads it, then
    answers the gather with the cancelled ``δ``; the gather's reallocation must not carry the
    unplaced ``−Δ`` into ``δ_i0`` (Invariant 2 at the coordinator)."""
    setup = dict(m=1, k=1, eps=0, bottom=True, theta=0, policy=Policy.paper())
    replay(
        setup,
        [
            ("update", 1, 1, 1),
            ("settle",),
            ("alter", 2, 0),
            ("update", 1, 5, 0),
            ("update", 1, 0, 1),
            ("settle",),
            ("alter", 1, 0),
            ("update", 1, 5, 1),
            ("settle",),
        ],
    )


def test_fresh_object_elsewhere_stays_out_of_the_border() -> None:
    """While ``T`` is empty node 1 asks about object 0 and node 2 about object 1 (``V = 1``);
    node 2's border for node 1's Phase 3 must not count object 1, or ``λ_0 = −1`` and
    ``δ_00 < d_0`` (Lemma B.3, Invariant 2 at the coordinator)."""
    setup = dict(m=2, k=2, eps=0, bottom=False, theta=None, policy=Policy(1, True))
    replay(
        setup,
        [
            ("settle",),
            ("update", 1, 0, 0),
            ("update", 2, 1, 1),
            ("up", 1),  # node 1's Phase 3 asks node 2
            ("down", 2),
            ("up", 2),  # node 2's own request waits
            ("up", 2),  # node 2's reply: T' = {0}
        ],
    )


def test_offload_folded_into_a_phase_3_reply_lowers_the_border() -> None:
    """Appendix C during a Phase 3: node 1 offloads a decrease of object 0 (in ``T``), then
    replies; read as not cancelled, its entry for object 0 is below the border it sent, which
    must come down with it (``B_j ≤ V_tj + δ_tj``, Lemma B.3), or ``λ_0 < 0``."""
    setup = dict(m=1, k=1, eps=0, bottom=True, theta=0, policy=Policy(1, True))
    joins = [("join",)] * 5
    replay(
        setup,
        [
            *joins,
            ("update", 1, 0, 0),
            ("deliver_batch",),
            ("settle",),
            ("update", 1, 2, 0),
            ("deliver_batch",),
            ("settle",),
            ("update", 2, 1, 1),
            ("deliver_batch",),
            ("update", 1, 0, 1),
            ("settle",),
        ],
    )
