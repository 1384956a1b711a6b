"""The base of every syntax-tree node: a frozen dataclass that remembers where it came from.

Positions (``line``, ``column``, 1-based) are keyword-only and excluded from equality and
hashing, so two trees parsed from differently laid-out text compare equal when they mean the
same thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields


@dataclass(frozen=True, kw_only=True)
class Node:
    """Base of all tree nodes; carries the 1-based source position of the node's first token."""

    line: int = field(default=0, compare=False, repr=False)
    column: int = field(default=0, compare=False, repr=False)

    def children(self) -> tuple[Node, ...]:
        """Direct sub-nodes, left to right.

        Examples
        --------
        >>> from tsmon.query.expr import BinOp, Number, Value
        >>> BinOp("+", Number(1.0), Value()).children()
        (Number(value=1.0), Value(spelling='value'))
        """
        out: list[Node] = []
        for f in fields(self):
            item = getattr(self, f.name)
            if isinstance(item, Node):
                out.append(item)
            elif isinstance(item, tuple):
                out.extend(x for x in item if isinstance(x, Node))
        return tuple(out)

    def walk(self) -> Iterator[Node]:
        """This node and all nodes below it, depth first (pre-order).

        Examples
        --------
        >>> from tsmon.query.expr import Call, Neg, Value
        >>> [type(n).__name__ for n in Call("abs", (Neg(Value()),)).walk()]
        ['Call', 'Neg', 'Value']
        """
        stack: list[Node] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children()))
