"""Top-k queries, ``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps`` and
``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``: their syntax-tree nodes, builders (k, the
objects pattern, the window and ε) and canonical text.

The syntax is in ``grammar.lark`` ("Top-k / bottom-k queries"). Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from tsmon.core.units import abbreviate, format_duration_ms
from tsmon.query.nodes import Node
from tsmon.query.patterns import series_matches
from tsmon.query.tokens import (
    DIGITS,
    NUMBER,
    Fail,
    bare_or_quoted,
    duration_ms,
    format_number,
    pos,
    series_name,
    source_text,
    within_number,
)

#: The largest k of a top-k query (``QUERY name AS TOP k OF ...``).
MAX_TOPK: int = 1_000_000


@dataclass(frozen=True)
class TopKDef(Node):
    """One ``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps`` statement.

    A distributed top-k query (Babcock & Olston 2003): the answer is the ``k`` objects with
    the largest metric (the smallest when ``bottom``), correct within ``eps``: no object left
    out of the answer is more than ``eps`` better than an object in it (``eps == 0`` asks for
    the exact top k).

    The objects are the names matching the fnmatch pattern ``objects`` (case-sensitive, like
    every series pattern, see :mod:`tsmon.query.patterns`); the value of object ``o`` is read
    from the series ``f"{o}.{metric}"``. ``window_ms`` is the ``OVER`` sliding window in
    milliseconds, or None when the metric counts from when the query started. ``text`` is the
    statement's source text.

    Examples
    --------
    >>> q = TopKDef("popular", False, 10, "doc:*", "hits", 900_000, 0.0)
    >>> q.series_of("doc:7"), q.object_of("doc:7.hits"), q.object_of("img:7.hits")
    ('doc:7.hits', 'doc:7', None)
    >>> q == TopKDef("popular", False, 10, "doc:*", "hits", 900_000, 0.0, text="QUERY ...")
    True
    """

    name: str
    bottom: bool
    k: int
    objects: str
    metric: str
    window_ms: int | None
    eps: float
    text: str = field(default="", compare=False, repr=False)

    def series_of(self, obj: str) -> str:
        """The series holding the metric of object ``obj``: ``f"{obj}.{metric}"``.

        Examples
        --------
        >>> TopKDef("idle", True, 1, "server*", "load", None, 2.5).series_of("server3")
        'server3.load'
        """
        return f"{obj}.{self.metric}"

    def object_of(self, series: str) -> str | None:
        """The object whose metric ``series`` holds, or None when it holds no object's metric.

        The inverse of :meth:`series_of`: ``series`` must be ``"<o>.<metric>"`` with ``o``
        matching :attr:`objects` (case-sensitive fnmatch). The metric holds no ``.``, so the
        split is unique.

        Examples
        --------
        >>> q = TopKDef("p", False, 3, "doc.*", "hits", None, 0.0)
        >>> q.object_of("doc.a.hits"), q.object_of("doc.a.HITS"), q.object_of("Doc.a.hits")
        ('doc.a', None, None)
        >>> q.object_of("doc.a.xhits"), q.object_of("hits")
        (None, None)
        """
        suffix = "." + self.metric
        if not series.endswith(suffix):
            return None
        obj = series[: -len(suffix)]
        return obj if series_matches(obj, (self.objects,)) else None


@dataclass(frozen=True)
class AlterTopK(Node):
    """``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``: a new k (and tolerance) for a top-k query.

    It defines no query; it changes one registered earlier (in the same file or before). The
    direction is restated (``bottom`` is True for ``BOTTOM``); ``eps`` is None when the
    statement has no ``WITHIN``, keeping the query's tolerance.

    Examples
    --------
    >>> AlterTopK("popular", False, 20, None), AlterTopK("idle", True, 3, 0.0)
    (AlterTopK(name='popular', bottom=False, k=20, eps=None),
     AlterTopK(name='idle', bottom=True, k=3, eps=0.0))
    """

    name: str
    bottom: bool
    k: int
    eps: float | None
    text: str = field(default="", compare=False, repr=False)


# ---- building -----------------------------------------------------------------------------------


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
    too_large = f"k '{shown}' is too large; {word} takes k <= {MAX_TOPK}"
    if DIGITS.fullmatch(text):
        digits = text.lstrip("+").lstrip("0")
        if not digits:
            fail(
                f"{word} takes a whole number k >= 1 (how many objects to report), got {shown}",
                token,
            )
        # Compare lengths first: int() refuses strings of more than 4300 digits.
        if len(digits) > len(str(MAX_TOPK)) or int(digits) > MAX_TOPK:
            fail(too_large, token)
        return int(digits)
    if not NUMBER.fullmatch(text):
        fail(f"{word} takes a whole number k like 10, got '{shown}'; write e.g. {word} 10", token)
    value = float(text)
    if text.startswith("-") or value <= 0:
        fail(
            f"{word} takes a whole number k >= 1 (how many objects to report), got {shown}",
            token,
        )
    if value > MAX_TOPK:
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


def topk_def(tree: Tree, source: str, fail: Fail) -> TopKDef:
    """``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5")
    TopKDef(name='idle', bottom=True, k=1, objects='server*', metric='load', window_ms=900000,
        eps=2.5)
    """
    name, body = tree.children
    rank_tree, objects, metric, over, within = body.children
    direction, k = rank_tree.children
    return TopKDef(
        str(name),
        direction.type == "BOTTOM",
        rank(direction, k, fail),
        series_name(objects),
        str(metric),
        duration_ms(over.children[0], fail) if over is not None else None,
        tolerance(within.children[0], fail),
        text=source_text(tree, source),
        **pos(tree),
    )


def alter_topk(tree: Tree, source: str, fail: Fail) -> AlterTopK:
    """``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``; without WITHIN ``eps`` is None.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("alter query popular top 20")
    AlterTopK(name='popular', bottom=False, k=20, eps=None)
    """
    name, rank_tree, within = tree.children
    direction, k = rank_tree.children
    return AlterTopK(
        str(name),
        direction.type == "BOTTOM",
        rank(direction, k, fail),
        tolerance(within.children[0], fail) if within is not None else None,
        text=source_text(tree, source),
        **pos(tree),
    )


# ---- writing ------------------------------------------------------------------------------------


def format_objects(objects: str) -> str:
    """The objects pattern of a top-k query as written after ``OF``: bare when it lexes as one
    name, else in backquotes. Unlike inside ``AGG(...)``, numbers need no backquotes.

    Examples
    --------
    >>> format_objects("doc:*"), format_objects("20*"), format_objects("7")
    ('doc:*', '20*', '7')
    >>> format_objects("a--b"), format_objects("-x"), format_objects("my docs*")
    ('`a--b`', '`-x`', '`my docs*`')
    """
    return bare_or_quoted(objects, "OBJECTS", "objects pattern")


def direction(bottom: bool) -> str:
    """``BOTTOM`` or ``TOP``, as statements write the direction of a top-k query."""
    return "BOTTOM" if bottom else "TOP"


def format_topk(query: TopKDef) -> str:
    """Canonical text of ``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps``.

    Examples
    --------
    >>> format_topk(TopKDef("idle", True, 1, "server*", "load", 900_000, 2.5))
    'QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5'
    >>> format_topk(TopKDef("popular", False, 10, "doc:*", "hits", None, 0.0))
    'QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 0'
    """
    text = (
        f"QUERY {query.name} AS {direction(query.bottom)} {query.k} "
        f"OF {format_objects(query.objects)} BY {query.metric}"
    )
    if query.window_ms is not None:
        text += f" OVER {format_duration_ms(query.window_ms)}"
    return f"{text} WITHIN {format_number(query.eps)}"


def format_alter_topk(alter: AlterTopK) -> str:
    """Canonical text of ``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``.

    Examples
    --------
    >>> format_alter_topk(AlterTopK("popular", False, 20, None))
    'ALTER QUERY popular TOP 20'
    >>> format_alter_topk(AlterTopK("idle", True, 3, 0.0))
    'ALTER QUERY idle BOTTOM 3 WITHIN 0'
    """
    text = f"ALTER QUERY {alter.name} {direction(alter.bottom)} {alter.k}"
    return text if alter.eps is None else f"{text} WITHIN {format_number(alter.eps)}"
