"""Hypothesis strategies over the query grammar, and a scalar reference interpreter."""

from __future__ import annotations

import math
import operator

from hypothesis import strategies as st

import tsmon.query as A
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS
from tsmon.core.units import MAX_DURATION_MS, UNIT_MS
from tsmon.core.window_spec import MAX_POINTS, WindowSpec

# ---- syntax trees in canonical form ----------------------------------------------------------

windows = st.one_of(
    st.integers(1, 10_000).map(WindowSpec.count),
    st.integers(1, 10**10).map(WindowSpec.time),
    st.integers(0, 4 * 10**12).map(WindowSpec.landmark),
    st.integers(1, 10_000).map(lambda n: WindowSpec.count(n, before=True)),
    st.integers(1, 10**10).map(lambda ms: WindowSpec.time(ms, before=True)),
)
#: Every valid window, limits included: counts up to 2**40, spans up to 100 years, instants
#: across pandas' whole Timestamp range (before 1970 too).
all_windows = st.one_of(
    st.integers(1, MAX_POINTS).map(WindowSpec.count),
    st.sampled_from([1, MAX_POINTS]).map(WindowSpec.count),
    st.integers(1, MAX_DURATION_MS).map(WindowSpec.time),
    st.sampled_from([1, 1000, MAX_DURATION_MS]).map(WindowSpec.time),
    st.integers(MIN_INSTANT_MS, MAX_INSTANT_MS).map(WindowSpec.landmark),
    st.sampled_from([MIN_INSTANT_MS, -1, 0, MAX_INSTANT_MS]).map(WindowSpec.landmark),
    st.sampled_from([1, MAX_POINTS]).map(lambda n: WindowSpec.count(n, before=True)),
    st.sampled_from([1, MAX_DURATION_MS]).map(lambda ms: WindowSpec.time(ms, before=True)),
)
numbers = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, 3.0, 1e9, 2.5e-3]),
    st.floats(min_value=0, allow_nan=False, allow_infinity=False).map(abs),
).map(A.Number)
leaves = st.one_of(
    numbers,
    st.integers(1, 10**10).map(A.Duration),
    st.sampled_from([A.Value("value"), A.Value("last"), A.Timestamp()]),
    st.builds(A.Stat, st.sampled_from(A.STATS), windows),
)


def _extend(children: st.SearchStrategy[A.Expr]) -> st.SearchStrategy[A.Expr]:
    return st.one_of(
        st.builds(A.Neg, children),
        st.builds(A.Pos, children),
        st.builds(A.Not, children),
        children.map(lambda e: A.Call("abs", (e,))),
        st.builds(A.BinOp, st.sampled_from(A.ARITH_OPS), children, children),
        st.builds(A.Compare, st.sampled_from(A.COMPARE_OPS), children, children),
        st.builds(A.BoolOp, st.sampled_from(["and", "or"]), children, children),
    )


exprs = st.recursive(leaves, _extend, max_leaves=12)

KEYWORDS = frozenset({"query", "on", "when", "emit", "since", "as", "and", "or", "not"})
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s.lower() not in KEYWORDS
)
# Any keyword (not only those that start a clause) is refused as a trigger, e.g. "ON as".
patterns = st.from_regex(r"[A-Za-z0-9_*?][A-Za-z0-9_.:*?\-]{0,10}", fullmatch=True).filter(
    lambda s: "--" not in s and s.lower() not in KEYWORDS
)


@st.composite
def queries(draw: st.DrawFn) -> A.QueryDef:
    """Whole statements with unique EMIT labels."""
    from tsmon.query import format_expr

    items: list[A.EmitItem] = []
    labels: set[str] = set()
    for _ in range(draw(st.integers(0, 3))):
        expr = draw(st.one_of(exprs, st.sampled_from([A.SeriesName(), A.TimestampMs()])))
        alias = draw(st.one_of(st.none(), names))
        label = alias if alias is not None else format_expr(expr)
        if label not in labels:
            labels.add(label)
            items.append(A.EmitItem(expr, alias))
    return A.QueryDef(
        draw(names),
        tuple(draw(st.lists(patterns, min_size=1, max_size=3))),
        draw(st.one_of(st.none(), exprs)),
        tuple(items),
        draw(st.one_of(st.none(), st.integers(1, 10**10))),
    )


# ---- raw source text: random case, spellings, spacing and redundant parentheses ---------------

_SPELLINGS = {
    "mean": ["mean", "avg", "AVG", "Mean"],
    "var": ["var", "variance", "VARIANCE"],
    "stddev": ["stddev", "std", "STD"],
}
_OP_SPELLINGS = {"==": ["=", "=="], "!=": ["!=", "<>"]}
_UNIT_TEXT = {ms: unit for unit, ms in UNIT_MS.items()}


@st.composite
def source_text(draw: st.DrawFn, expr: A.Expr | None = None) -> str:
    """Text that parses to (an expression equal in meaning to) a drawn tree."""
    if expr is None:
        expr = draw(exprs)
    space = draw(st.sampled_from(["", " ", "  ", "\n", " -- c\n"]))

    def case(word: str) -> str:
        return draw(st.sampled_from([word.lower(), word.upper(), word.capitalize()]))

    def render(e: A.Expr) -> str:
        if isinstance(e, A.Stat):
            name = draw(st.sampled_from(_SPELLINGS.get(e.name, [e.name, e.name.upper()])))
            win = str(e.window.base)
            if e.window.kind.value == "count" and e.window.size == 1:
                win = draw(st.sampled_from(["1 point", "1 points", "1 POINT"]))
            if e.window.before:
                win += draw(st.sampled_from([" ", "  ", "\n"])) + case("before")
            return f"{name}({space}{win}{space})"
        if isinstance(e, A.Value):
            return case(e.spelling)
        if isinstance(e, A.Timestamp):
            return case("ts")
        if isinstance(e, A.Number | A.Duration):
            from tsmon.query import format_expr

            return format_expr(e)
        if isinstance(e, A.Call):
            return f"{case('abs')}({render(e.args[0])})"
        if isinstance(e, A.Neg | A.Pos):
            return ("-" if isinstance(e, A.Neg) else "+") + "(" + render(e.operand) + ")"
        if isinstance(e, A.Not):
            return f"{case('not')} ({render(e.operand)})"
        op = e.op
        if isinstance(e, A.Compare):
            op = draw(st.sampled_from(_OP_SPELLINGS.get(op, [op])))
        elif isinstance(e, A.BoolOp):
            op = case(op)
        return f"(({render(e.left)}){space}{op} ({render(e.right)}))"

    return render(expr)


# ---- scalar reference interpreter ------------------------------------------------------------


def truthy(x: float | bool) -> bool:
    return x if isinstance(x, bool) else (x != 0 and not math.isnan(x))


def num(x: float | bool) -> float:
    return float(x)


def _div(x: float, y: float) -> float:
    if y == 0:
        if math.isnan(x) or x == 0:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _mod(x: float, y: float) -> float:
    if y == 0 or math.isnan(x) or math.isnan(y) or math.isinf(x):
        return math.nan
    return x % y


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "%": _mod}
_CMP = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def reference(e: A.Expr, value: float, ts_ms: int, stats: dict) -> float | bool:
    """Evaluate ``e`` at one point with plain Python floats."""

    def ev(n: A.Expr) -> float | bool:
        return reference(n, value, ts_ms, stats)

    if isinstance(e, A.Number):
        return e.value
    if isinstance(e, A.Duration):
        return e.ms / 1000
    if isinstance(e, A.Value):
        return value
    if isinstance(e, A.Timestamp):
        return ts_ms / 1000
    if isinstance(e, A.Stat):
        return stats[(e.name, e.window)]
    if isinstance(e, A.Call):
        return abs(num(ev(e.args[0])))
    if isinstance(e, A.Neg):
        return -num(ev(e.operand))
    if isinstance(e, A.Pos):
        return num(ev(e.operand))
    if isinstance(e, A.Not):
        return not truthy(ev(e.operand))
    left, right = ev(e.left), ev(e.right)
    if isinstance(e, A.BinOp):
        return _ARITH[e.op](num(left), num(right))
    if isinstance(e, A.Compare):
        x, y = num(left), num(right)
        return not (math.isnan(x) or math.isnan(y)) and _CMP[e.op](x, y)
    if e.op == "and":
        return truthy(left) and truthy(right)
    return truthy(left) or truthy(right)
