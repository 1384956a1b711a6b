"""The quarantine's restore point without a copy per step: a snapshot now and then, and the
inputs of the steps since (:mod:`tsmon.engine.guard`, docs/architecture.md "Quarantine in
process").

A step that raises is retried from the state before it. The in-process hosts used to pickle
every node and the coordinator before each step for that; a :class:`Journal` pickles an object
only every :data:`EVERY` steps (or once its log holds :data:`BOUND` rows) and logs the inputs
each clean step took since. Protocol code is pure and deterministic (time is an argument, no
clock, no I/O, seeded generators are part of the state), so restoring the snapshot and
stepping it again on the logged inputs, which all stepped cleanly, gives the state before the
current step: the same a copy taken just before it would give.

The log's inputs must not change after their step: the hosts log the data they made for that
step (a source's points as its own columns) and pickle what others may still hold (control
rows, the coordinator's input rows). A change made to the object outside its steps is logged
too when it is deterministic and its inputs do not change after it (:meth:`Journal.applied`: a
query added, with its statement): registering many queries one by one, each followed by a
step, then costs a snapshot every :data:`EVERY` log entries, not one per query. Any other
change cannot be replayed: the host calls :meth:`Journal.changed`, and the next step starts
from a snapshot.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

__all__ = ["BOUND", "EVERY", "Journal"]

EVERY = 64
"""Steps and changes logged at most between two snapshots (a failing step replays at most
these)."""

BOUND = 1024
"""Input rows logged at most between two snapshots: this bounds the memory a journal keeps
besides its snapshot (a node's log holds its points as columns, some 40 bytes a point; a
coordinator's, its input rows pickled)."""


class Journal:
    """An object's state before its current step: a snapshot and the inputs logged since.

    ``replay(obj, *inputs)`` steps ``obj`` again on one logged step's inputs; ``fresh()`` makes
    the object before its first step (None: the first step starts from a snapshot).

    >>> journal = Journal(lambda log, item: log.append(item), fresh=list)
    >>> log = journal.restore()
    >>> for item in "abc":
    ...     journal.begin(log)
    ...     log.append(item)
    ...     journal.stepped(1, lambda: (item,))
    >>> journal.begin(log)
    >>> log.append("bad")  # a step that raises after changing the object
    >>> journal.restore()
    ['a', 'b', 'c']
    """

    def __init__(self, replay: Callable[..., Any], fresh: Callable[[], Any] | None = None) -> None:
        self._replay = replay
        self._fresh = fresh
        self._snapshot: bytes | None = None  # None: fresh()
        # (replay, inputs) per logged step or change since the snapshot; None: take one
        self._log: list[tuple[Callable[..., Any], tuple[Any, ...]]] | None = (
            None if fresh is None else []
        )
        self._rows = 0  # input rows in the log
        self._copying = False  # this step started from a snapshot taken for it alone

    def begin(self, obj: Any, *, copy: bool = False) -> None:
        """Before a step of ``obj``: take a snapshot if the log cannot serve (full, or the
        object changed outside its steps), or if ``copy`` (a copy before every step: someone
        else holds the object and may change it at any time)."""
        self._copying = copy
        if copy or self._log is None:
            self._snapshot = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            self._log, self._rows = [], 0

    def stepped(self, rows: int, inputs: Callable[[], tuple[Any, ...]]) -> None:
        """The step begun took its inputs cleanly: log ``inputs()`` (``rows`` input rows), or,
        when the log is full, take a snapshot before the next step instead."""
        log = self._log
        assert log is not None, "stepped() without begin()"
        if self._copying or len(log) >= EVERY or self._rows + rows > BOUND:
            self._log = None
        else:
            log.append((self._replay, inputs()))
            self._rows += rows

    def applied(self, change: Callable[[Any], Any]) -> None:
        """``change(obj)`` was applied to the object outside its steps, cleanly: log it, to be
        replayed in its place (it must give the same state again from the same state, and
        what it reads must not change after it), or, when the log is full, take a snapshot
        before the next step instead."""
        log = self._log
        if log is None:
            return  # the next step starts from a snapshot, taken after this change
        if len(log) >= EVERY:
            self._log = None
        else:
            log.append((change, ()))

    def changed(self) -> None:
        """The object changed outside its steps (a query added, a step quarantined): the next
        step starts from a snapshot."""
        self._log = None

    def restore(self) -> Any:
        """A new copy of the object as it was before the step begun."""
        assert self._log is not None, "restore() without begin()"
        if self._snapshot is None:
            assert self._fresh is not None
            obj = self._fresh()
        else:
            obj = pickle.loads(self._snapshot)
        for replay, inputs in self._log:
            replay(obj, *inputs)
        return obj
