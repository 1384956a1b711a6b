"""The contract every kind of statement keeps (kinds.py lists them): canonical text parses back
to the same tree, any spelling parses to the tree it means, files mix every kind, and malformed
text fails at its line:column with a readable message that quotes the line under a caret."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tsmon.query as A
from kinds import KINDS, Kind, any_statement, conflicts
from tsmon.query import QuerySyntaxError, format_query, parse_queries, parse_query


def _ids(kind: Kind) -> str:
    return kind.name


def _cases(table: str) -> list[object]:
    """``pytest.param`` for every case of ``table`` of every kind, with ids ``kind-index``."""
    return [
        pytest.param(*case, id=f"{kind.name}-{i}")
        for kind in KINDS
        for i, case in enumerate(getattr(kind, table))
    ]


# ---- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
def test_canonical_text_parses_back_to_the_same_tree(kind: Kind) -> None:
    @settings(max_examples=kind.examples)
    @given(kind.statements)
    def check(statement: A.Statement) -> None:
        text = format_query(statement)
        parsed = parse_query(text)
        assert parsed == statement, text
        assert type(parsed) is type(statement)
        assert parsed.text == text
        assert (parsed.line, parsed.column) == (1, 1)
        assert format_query(parsed) == text

    check()


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind.spellings is not None], ids=_ids)
def test_any_spelling_parses_to_the_tree_it_was_written_from(kind: Kind) -> None:
    @settings(max_examples=kind.examples)
    @given(kind.spellings)
    def check(raw: object) -> None:
        parsed = parse_query(raw.text)  # type: ignore[attr-defined]
        assert parsed == raw.statement, raw.text  # type: ignore[attr-defined]
        assert type(parsed) is type(raw.statement)  # type: ignore[attr-defined]
        assert parse_query(format_query(parsed)) == parsed

    check()


@given(
    st.lists(any_statement, min_size=1, max_size=6),
    st.sampled_from([";\n", "\n", "\n;\n"]),
    st.sampled_from(["", "-- generated\n"]),
)
@settings(max_examples=300)
def test_files_mixing_every_statement_kind_round_trip(
    statements: list[A.Statement], separator: str, preamble: str
) -> None:
    assume(not conflicts(statements))
    text, lines = preamble, []
    for i, statement in enumerate(statements):
        text += separator if i else ""
        lines.append(text.count("\n") + 1)
        text += f"{format_query(statement)}  -- #{i}"
    parsed = parse_queries(text)
    assert parsed == statements
    assert [type(s) for s in parsed] == [type(s) for s in statements]
    assert [s.line for s in parsed] == lines
    assert [s.column for s in parsed] == [1] * len(statements)


# ---- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "line", "column", "expected", "found"), _cases("parse_errors"))
def test_parse_errors_point_at_the_token_and_say_what_was_expected(
    text: str, line: int, column: int, expected: list[str], found: str
) -> None:
    """Parsing ``text`` fails at ``line:column`` expecting ``expected``, showing a caret."""
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    for token in expected:
        assert token in err.expected, (token, err.expected)
    message = str(err)
    assert message.startswith(f"line {line}:{column}: expected "), message
    assert found in message
    source_line = text.splitlines()[line - 1]
    caret_line = message.splitlines()[-1]
    assert message.splitlines()[-2] == f"  {source_line}"
    assert caret_line == "  " + " " * (column - 1) + "^"


@pytest.mark.parametrize(("text", "line", "column", "detail"), _cases("semantic_errors"))
def test_semantic_errors_point_at_the_culprit(
    text: str, line: int, column: int, detail: str | None
) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"line {line}:{column}: ")
    if detail is not None:
        assert detail in str(err).splitlines()[0], str(err)
    assert err.expected == []


@pytest.mark.parametrize(("text", "longest"), _cases("abbreviated"))
def test_huge_values_are_abbreviated_in_messages(text: str, longest: int) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries(text)
    assert len(str(info.value).splitlines()[0]) < longest, str(info.value)


def test_syntax_error_is_value_error_and_never_a_lark_exception() -> None:
    for text in ["QUERY", "QUERY q ON", "QUERY q ON x WHEN ((", "\x00", "QUERY q ON x WHEN 1 @ 2"]:
        with pytest.raises(QuerySyntaxError) as info:
            parse_queries(text)
        assert isinstance(info.value, ValueError)
        assert type(info.value) is QuerySyntaxError
        assert info.value.__cause__ is None


def test_parse_query_wants_exactly_one_statement() -> None:
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("QUERY a ON x; QUERY b ON y")
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("-- nothing here")
