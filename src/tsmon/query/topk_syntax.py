"""Build top-k statements from lark trees: k, the objects pattern, the window and ε.

Used by :mod:`tsmon.query.parser` for ``QUERY name AS TOP|BOTTOM k OF objects BY metric
[OVER d] WITHIN eps`` and ``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``; the syntax is in
``grammar.lark`` ("Top-k / bottom-k queries"). Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import re

from lark import Token, Tree

from tsmon.core.units import UnitError, abbreviate, parse_duration_ms
from tsmon.query import ast
from tsmon.query.aggregate_syntax import Fail, series_name, within_number

_DIGITS = re.compile(r"\+?[0-9]+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _pos(where: Token | Tree) -> dict[str, int]:
    meta = where if isinstance(where, Token) else where.meta
    return {"line": meta.line, "column": meta.column}


def _text(tree: Tree, source: str) -> str:
    return source[tree.meta.start_pos : tree.meta.end_pos]


def rank(direction: Token, token: Token, fail: Fail) -> int:
    """The k of ``TOP k`` / ``BOTTOM k``: a whole number 1 .. ``MAX_TOPK`` in plain digits.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> rank(Token("TOP", "top"), Token("RANK", "10"), fail)
    10
    >>> rank(Token("BOTTOM", "Bottom"), Token("RANK", "2.5"), fail)
    Traceback (most recent call last):
    ...
    ValueError: BOTTOM takes a whole number k (how many objects to report), got '2.5';
        write e.g. BOTTOM 10
    """
    word = direction.upper()
    text = str(token)
    shown = abbreviate(text)
    too_large = f"k '{shown}' is too large; {word} takes k <= {ast.MAX_TOPK}"
    if _DIGITS.fullmatch(text):
        digits = text.lstrip("+").lstrip("0")
        if not digits:
            fail(
                f"{word} takes a whole number k >= 1 (how many objects to report), got {shown}",
                token,
            )
        # Compare lengths first: int() refuses strings of more than 4300 digits.
        if len(digits) > len(str(ast.MAX_TOPK)) or int(digits) > ast.MAX_TOPK:
            fail(too_large, token)
        return int(digits)
    if not _NUMBER.fullmatch(text):
        fail(f"{word} takes a whole number k like 10, got '{shown}'; write e.g. {word} 10", token)
    value = float(text)
    if text.startswith("-") or value <= 0:
        fail(
            f"{word} takes a whole number k >= 1 (how many objects to report), got {shown}",
            token,
        )
    if value > ast.MAX_TOPK:
        fail(too_large, token)
    if value.is_integer():
        fail(f"write k in plain digits: {word} {int(value)}, not {word} {shown}", token)
    fail(
        f"{word} takes a whole number k (how many objects to report), got '{shown}'; "
        f"write e.g. {word} 10",
        token,
    )
    raise AssertionError("unreachable")  # pragma: no cover


def tolerance(token: Token, fail: Fail) -> float:
    """The ε of a top-k ``WITHIN``: a finite plain number >= 0 (0 asks for the exact top k).

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> tolerance(Token("WIDTH", "0"), fail), tolerance(Token("WIDTH", "-0"), fail)
    (0.0, 0.0)
    >>> tolerance(Token("WIDTH", "-1"), fail)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN takes a tolerance >= 0 (how much better than a reported object an
        object left out may be), got -1
    """
    value = within_number(
        token, fail, bound=">= 0", units="the metric", example="5", noun="tolerance"
    )
    if value < 0:
        fail(
            "WITHIN takes a tolerance >= 0 (how much better than a reported object an object "
            f"left out may be), got {abbreviate(str(token))}",
            token,
        )
    return value if value else 0.0  # -0 reads as 0


def window_ms(token: Token, fail: Fail) -> int:
    """The ``OVER`` window in milliseconds (a duration > 0, at most ``36525d``).

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> window_ms(Token("DURATION", "15m"), fail)
    900000
    >>> window_ms(Token("DURATION", "0s"), fail)
    Traceback (most recent call last):
    ...
    ValueError: duration must be > 0 ms, got '0s'; pass a positive duration
    """
    try:
        return parse_duration_ms(str(token))
    except UnitError as exc:
        fail(str(exc), token)
    raise AssertionError("unreachable")  # pragma: no cover


def topk_def(tree: Tree, source: str, fail: Fail) -> ast.TopKDef:
    """``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5")
    TopKDef(name='idle', bottom=True, k=1, objects='server*', metric='load', window_ms=900000,
        eps=2.5)
    """
    name, body = tree.children
    rank_tree, objects, metric, over, within = body.children
    direction, k = rank_tree.children
    return ast.TopKDef(
        str(name),
        direction.type == "BOTTOM",
        rank(direction, k, fail),
        series_name(objects),
        str(metric),
        window_ms(over.children[0], fail) if over is not None else None,
        tolerance(within.children[0], fail),
        text=_text(tree, source),
        **_pos(tree),
    )


def alter_topk(tree: Tree, source: str, fail: Fail) -> ast.AlterTopK:
    """``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``; without WITHIN ``eps`` is None.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("alter query popular top 20")
    AlterTopK(name='popular', bottom=False, k=20, eps=None)
    """
    name, rank_tree, within = tree.children
    direction, k = rank_tree.children
    return ast.AlterTopK(
        str(name),
        direction.type == "BOTTOM",
        rank(direction, k, fail),
        tolerance(within.children[0], fail) if within is not None else None,
        text=_text(tree, source),
        **_pos(tree),
    )
