"""Watch queries, ``QUERY name ON triggers [WHEN expr] [EMIT items] [SINCE -d]``: their
syntax-tree nodes, their builder and their canonical text.

Every error is a :class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised
by the ``fail`` callback the parser passes in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Tree

from tsmon.core.units import format_duration_ms
from tsmon.query.expr import WHOLE_ITEM_ONLY, Expr, build_expr, check_no_series, format_expr
from tsmon.query.nodes import Node
from tsmon.query.tokens import Fail, duration_ms, pos, source_text

_KEYWORDS = frozenset({"query", "on", "when", "emit", "since", "as", "and", "or", "not"})


@dataclass(frozen=True)
class EmitItem(Node):
    """One EMIT item: an expression and its optional ``AS`` alias."""

    expr: Expr
    alias: str | None = None


@dataclass(frozen=True)
class QueryDef(Node):
    """One ``QUERY name ON ...`` statement.

    ``emit`` is empty when the statement has no EMIT clause (the compiler then emits
    ``series, value``); ``since_ms`` is the positive look-back of ``SINCE -<duration>``.
    ``text`` is the statement's source text.

    Examples
    --------
    >>> q = QueryDef("q", ("x.*",), None, (), None, text="QUERY q ON x.*")
    >>> q == QueryDef("q", ("x.*",), None, (), None)
    True
    """

    name: str
    triggers: tuple[str, ...]
    when: Expr | None
    emit: tuple[EmitItem, ...]
    since_ms: int | None
    text: str = field(default="", compare=False, repr=False)


def watch_def(tree: Tree, source: str, fail: Fail) -> QueryDef:
    """``QUERY name ON triggers [WHEN expr] [EMIT items] [SINCE -d]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> q = parse_query("QUERY q ON a.*, b WHEN value > 1 EMIT series, ts_ms AS t SINCE -2h")
    >>> q.triggers, [item.alias for item in q.emit], q.since_ms
    (('a.*', 'b'), [None, 't'], 7200000)
    """
    name, body = tree.children
    triggers, when, emit, since = body.children
    items = _emit(emit, fail) if emit is not None else ()
    when_expr = build_expr(when.children[0], fail) if when is not None else None
    if when_expr is not None:
        check_no_series(when_expr, fail)
    return QueryDef(
        str(name),
        _triggers(triggers, fail),
        when_expr,
        items,
        _since(since, fail) if since is not None else None,
        text=source_text(tree, source),
        **pos(tree),
    )


def _triggers(tree: Tree, fail: Fail) -> tuple[str, ...]:
    for token in tree.children:
        if token.lower() in _KEYWORDS:
            fail(f"expected a series name or pattern but got '{token}'", token)
    return tuple(str(token) for token in tree.children)


def _emit(tree: Tree, fail: Fail) -> tuple[EmitItem, ...]:
    items: list[EmitItem] = []
    labels: dict[str, EmitItem] = {}
    for child in tree.children:
        expr_tree, alias = child.children
        expr = build_expr(expr_tree, fail)
        if not isinstance(expr, WHOLE_ITEM_ONLY):
            check_no_series(expr, fail)
        item = EmitItem(expr, str(alias) if alias is not None else None, **pos(child))
        label = item.alias if item.alias is not None else format_expr(expr)
        if label in labels:
            fail(f"duplicate EMIT label '{label}'; add AS <name> to tell them apart", item)
        labels[label] = item
        items.append(item)
    return tuple(items)


def _since(tree: Tree, fail: Fail) -> int:
    sign, duration = tree.children
    if sign is None or sign.children[0].type != "MINUS":
        fail("SINCE takes a negative duration, e.g. SINCE -1h", sign or duration)
    return duration_ms(duration, fail)


def format_item(item: EmitItem) -> str:
    """Canonical text of one EMIT item, including ``AS alias`` when present.

    Examples
    --------
    >>> from tsmon.core.window_spec import WindowSpec
    >>> from tsmon.query.expr import Stat
    >>> format_item(EmitItem(Stat("max", WindowSpec.time(3_600_000)), "peak"))
    'max(1h) AS peak'
    """
    text = format_expr(item.expr)
    return f"{text} AS {item.alias}" if item.alias is not None else text


def format_watch(query: QueryDef) -> str:
    """Canonical text of ``QUERY name ON ... [WHEN ...] [EMIT ...] [SINCE -d]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> format_watch(parse_query("query q on a.*,b when avg(5m)>1 emit series since -60m"))
    'QUERY q ON a.*, b WHEN mean(5m) > 1 EMIT series SINCE -1h'
    """
    parts = [f"QUERY {query.name} ON {', '.join(query.triggers)}"]
    if query.when is not None:
        parts.append(f"WHEN {format_expr(query.when)}")
    if query.emit:
        parts.append(f"EMIT {', '.join(format_item(item) for item in query.emit)}")
    if query.since_ms is not None:
        parts.append(f"SINCE -{format_duration_ms(query.since_ms)}")
    return " ".join(parts)
