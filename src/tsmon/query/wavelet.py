"""Wavelet queries, ``QUERY name AS INNER|POINT|RANGE(series, ...) [OVER N points] [WITHIN
δ]``, answered from a SWAT tree: their syntax-tree node, builder and canonical text.

The syntax is in ``grammar.lark`` ("Queries answered from stream summaries"); the numbers and
the series are read by :mod:`tsmon.query.summary`. Errors are reported left to right, except
that a position is checked against ``OVER N points`` once ``N`` (written after it) is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.query.nodes import Node
from tsmon.query.summary import one_series, real, whole, window_points
from tsmon.query.tokens import (
    NUMBER,
    Fail,
    format_number,
    format_points,
    format_series,
    pos,
    source_text,
    within_number,
)

#: Queries answered from a SWAT tree (``QUERY name AS INNER|POINT|RANGE(...)``).
WAVELET_KINDS: tuple[str, ...] = ("inner", "point", "range")
#: The default ``N`` of a SWAT tree (``OVER 1024 points``): the series' last N values.
DEFAULT_SWAT_POINTS: int = 1024
_FUNCTIONS = {"inner_body": "inner", "point_body": "point", "range_body": "range"}


@dataclass(frozen=True)
class WaveletDef(Node):
    """One ``QUERY name AS INNER|POINT|RANGE(series, ...)`` statement: a wavelet query.

    It is answered from a SWAT tree (Bulut & Singh 2003, a wavelet summary of the series'
    last ``window_points`` values, ``OVER N points``, a power of two >= 2). Positions count
    back from the newest value: 0 is the newest, ``window_points - 1`` the oldest kept.

    * ``inner``: the inner product ``Σ weights[j] · x[indices[j]]`` (``INNER(s, W [AT I])``;
      the parser fills in ``indices`` as ``0 .. len(W) - 1`` when AT is left out);
    * ``point``: the value ``x[position]`` (``POINT(s, i)``);
    * ``range``: the positions ``lo .. hi`` (``span``, inclusive) whose value lies within
      ``value ± radius`` (``RANGE(s, lo..hi, v ± r)``).

    ``within`` is the precision δ > 0 an INNER or POINT answer must meet (``WITHIN δ``), None
    for the finest the tree holds; a RANGE has none. ``text`` is the statement's source text.

    Examples
    --------
    >>> q = WaveletDef("recent", "inner", "temp.v", weights=(8.0, 4.0), indices=(0, 1), within=20.0)
    >>> q.window_points, q.position, q.span, q
    (1024, None, None, WaveletDef(name='recent', kind='inner', series='temp.v', window_points=1024,
        weights=(8.0, 4.0), indices=(0, 1), position=None, span=None, value=None, radius=None,
        within=20.0))
    >>> near = WaveletDef("near", "range", "temp.v", 256, span=(0, 64), value=30.0, radius=2.0)
    >>> near == WaveletDef("near", "range", "temp.v", 256, span=(0, 64), value=30.0, radius=2.0,
    ...                    text="QUERY near ...")
    True
    """

    name: str
    kind: str
    series: str
    window_points: int = DEFAULT_SWAT_POINTS
    weights: tuple[float, ...] = ()
    indices: tuple[int, ...] = ()
    position: int | None = None
    span: tuple[int, int] | None = None
    value: float | None = None
    radius: float | None = None
    within: float | None = None
    text: str = field(default="", compare=False, repr=False)


# ---- building -----------------------------------------------------------------------------------


def precision(token: Token, fail: Fail, *, word: str) -> float:
    """The δ of ``WITHIN δ`` of INNER and POINT: a finite plain number > 0.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> precision(Token("WIDTH", "0.5"), fail, word="POINT")
    0.5
    >>> precision(Token("WIDTH", "1%"), fail, word="INNER")
    Traceback (most recent call last):
    ...
    ValueError: INNER takes a precision in the units of the series' values, a plain number > 0
        like WITHIN 0.5, got WITHIN 1%; a relative error (p%) is for APPROX COUNT|SUM
    """
    text = str(token)
    shown = abbreviate(text)
    if text.endswith("%") and NUMBER.fullmatch(text[:-1]):
        fail(
            f"{word} takes a precision in the units of the series' values, a plain number > 0 "
            f"like WITHIN 0.5, got WITHIN {shown}; a relative error (p%) is for APPROX COUNT|SUM",
            token,
        )
    value = within_number(
        token, fail, bound="> 0", units="the series' values", example="0.5", noun="precision"
    )
    if value <= 0:
        fail(
            f"WITHIN takes a precision > 0 (how far {word}'s answer may be from the exact one), "
            f"got {shown}",
            token,
        )
    return value


def wavelet_def(tree: Tree, source: str, fail: Fail) -> WaveletDef:
    """``QUERY name AS INNER|POINT|RANGE(series, ...) [OVER N points] [WITHIN δ]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("QUERY recent2 AS INNER(temp.v, [8, 4] AT [0, 2]) OVER 256 points")
    WaveletDef(name='recent2', kind='inner', series='temp.v', window_points=256,
        weights=(8.0, 4.0), indices=(0, 2), position=None, span=None, value=None, radius=None,
        within=None)
    >>> parse_query("QUERY near AS RANGE(temp.v, 0..64, 30 ± 2)").span
    (0, 64)
    """
    name, body = tree.children
    kind = _FUNCTIONS[body.data]
    word = kind.upper()
    series = one_series(body.children[0], word, fail)
    *args, over, within = body.children[1:]
    if kind == "inner":
        fields, checks = _inner(*args, fail=fail)
    elif kind == "point":
        position = _position(args[0], "POINT takes a position", fail, plural=False)
        fields, checks = {"position": position}, [(args[0], position)]
    else:
        fields, checks = _range(*args, fail=fail)
    n = DEFAULT_SWAT_POINTS
    if over is not None:
        n = window_points(over.children[0], fail, swat=True)
    if within is not None:
        if kind == "range":
            fail(
                "RANGE takes no WITHIN: its answer is the positions whose value is within v ± r; "
                "WITHIN sets the precision of INNER and POINT",
                within,
            )
        fields["within"] = precision(within.children[0], fail, word=word)
    given = " (the default)" if over is None else ""
    for token, index in checks:
        if index >= n:
            fail(
                f"position {abbreviate(str(token))} is out of range: OVER {n} points{given} "
                f"keeps positions 0 .. {n - 1} (0 is the newest value)",
                token,
            )
    if kind == "inner" and len(args[0].children) > n:
        fail(
            f"INNER takes at most {n} weights, one per position of OVER {n} points{given}, "
            f"got {len(args[0].children)}",
            args[0],
        )
    return WaveletDef(
        str(name),
        kind,
        series,
        n,
        **fields,  # type: ignore[arg-type]
        text=source_text(tree, source),
        **pos(tree),
    )


_Checks = list[tuple[Token, int]]  # positions to check against N once it is read


def _position(token: Token, takes: str, fail: Fail, *, plural: bool = True) -> int:
    return whole(
        token, fail, takes=takes, bound=">= 0", meaning="0 is the newest value", plural=plural
    )


def _inner(weights: Tree, at: Tree | None, *, fail: Fail) -> tuple[dict[str, object], _Checks]:
    """The weights and positions of ``INNER(s, [w, ...] [AT [i, ...]])``."""
    values = tuple(
        real(token, fail, takes="INNER takes weights that are plain numbers", example="0.5")
        for token in weights.children
    )
    if at is None:
        return {"weights": values, "indices": tuple(range(len(values)))}, []
    checks = [(token, _position(token, "AT takes positions", fail)) for token in at.children]
    if len(checks) != len(values):
        fail(
            f"INNER takes one position per weight: {len(values)} weights, {len(checks)} "
            "positions after AT",
            at,
        )
    seen: dict[int, Token] = {}
    for token, index in checks:
        if index in seen:
            first = seen[index]
            fail(
                f"position {abbreviate(str(index))} appears twice after AT (first at "
                f"{first.line}:{first.column}); give each position one weight",
                token,
            )
        seen[index] = token
    return {"weights": values, "indices": tuple(index for _, index in checks)}, checks


def _range(
    lo_token: Token, hi_token: Token, value: Token, radius_token: Token, *, fail: Fail
) -> tuple[dict[str, object], _Checks]:
    """The span, value and radius of ``RANGE(s, lo..hi, v ± r)``."""
    lo = _position(lo_token, "RANGE takes positions lo..hi", fail)
    hi = _position(hi_token, "RANGE takes positions lo..hi", fail)
    if lo > hi:
        fail(
            f"RANGE takes positions lo..hi with lo <= hi, got {abbreviate(str(lo_token))}.."
            f"{abbreviate(str(hi_token))}",
            lo_token,
        )
    centre = real(value, fail, takes="RANGE takes a value v that is a plain number", example="30")
    radius = real(
        radius_token, fail, takes="RANGE takes a radius r that is a plain number", example="2"
    )
    if radius < 0:
        fail(
            "RANGE takes a radius r >= 0 (the values within v ± r), got "
            f"{abbreviate(str(radius_token))}",
            radius_token,
        )
    fields = {"span": (lo, hi), "value": centre, "radius": radius if radius else 0.0}  # -0 is 0
    return fields, [(hi_token, hi)]


# ---- writing ------------------------------------------------------------------------------------


def _numbers(values: tuple[float, ...] | tuple[int, ...]) -> str:
    return (
        "[" + ", ".join(format_number(v) if isinstance(v, float) else str(v) for v in values) + "]"
    )


def format_wavelet_call(query: WaveletDef) -> str:
    """``INNER|POINT|RANGE(series, ...)`` of a wavelet query; AT is left out when the positions
    are ``0 .. len(W) - 1``, what the parser fills in.

    Examples
    --------
    >>> format_wavelet_call(WaveletDef("r", "inner", "temp.v", weights=(8.0, -0.5), indices=(0, 1)))
    'INNER(temp.v, [8, -0.5])'
    >>> format_wavelet_call(WaveletDef("r", "inner", "a-b", weights=(1.0,), indices=(7,)))
    'INNER(a-b, [1] AT [7])'
    >>> format_wavelet_call(WaveletDef("t", "point", "7", position=12))
    'POINT(`7`, 12)'
    """
    series = format_series(query.series)
    if query.kind == "inner":
        args = _numbers(query.weights)
        if query.indices != tuple(range(len(query.weights))):
            args += f" AT {_numbers(query.indices)}"
    elif query.kind == "point":
        args = str(query.position)
    else:
        assert query.span is not None and query.value is not None and query.radius is not None
        lo, hi = query.span
        args = f"{lo}..{hi}, {format_number(query.value)} ± {format_number(query.radius)}"
    return f"{query.kind.upper()}({series}, {args})"


def format_wavelet(query: WaveletDef) -> str:
    """Canonical text of ``QUERY name AS INNER|POINT|RANGE(...) [OVER N points] [WITHIN d]``;
    OVER is left out for the default N (1024).

    Examples
    --------
    >>> format_wavelet(WaveletDef("twelve", "point", "temp.v", position=12, within=0.5))
    'QUERY twelve AS POINT(temp.v, 12) WITHIN 0.5'
    >>> format_wavelet(WaveletDef("n", "range", "t.v", 256, span=(0, 64), value=30.0, radius=2.0))
    'QUERY n AS RANGE(t.v, 0..64, 30 ± 2) OVER 256 points'
    """
    text = f"QUERY {query.name} AS {format_wavelet_call(query)}"
    if query.window_points != DEFAULT_SWAT_POINTS:
        text += f" OVER {format_points(query.window_points)}"
    if query.within is not None:
        text += f" WITHIN {format_number(query.within)}"
    return text
