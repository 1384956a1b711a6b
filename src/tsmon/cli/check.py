"""``tsmon check FILE``: every error of a query file, not just the first.

A file is cut into statements where a line starts with ``QUERY`` or ``ALTER``; each piece is
parsed on its own, at its own lines (padded with the blank lines before it, so positions are
those of the file), then the pieces that parse are read together once more for what only the
whole file can show (a name defined twice, an ``ALTER`` of a query defined nowhere). ``--`` and
``#`` start comments.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tsmon.core.textfile import read_text
from tsmon.kinds import kind_of
from tsmon.query import QuerySyntaxError, Statement, parse_queries

_START = re.compile(r"\s*(?i:query|alter)(?![A-Za-z0-9_])")


@dataclass
class Checked:
    """The statements of a file that are fine, and every error (``line L:C: ...`` each)."""

    statements: list[Statement] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line, message), by line


def pieces(text: str) -> list[tuple[int, str]]:
    """``(first line index, text)`` of each statement's lines, and of the lines before the
    first statement.

    Examples
    --------
    >>> pieces("# hot\\nQUERY a ON x\\n  WHEN last > 1\\nalter query b within 2\\n")
    [(0, '# hot\\n'), (1, 'QUERY a ON x\\n  WHEN last > 1\\n'), (3, 'alter query b within 2\\n')]
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _START.match(line)]
    bounds = [0, *[s for s in starts if s > 0], len(lines)]
    return [(lo, "".join(lines[lo:hi])) for lo, hi in itertools.pairwise(bounds)]


def check_text(text: str) -> Checked:
    """Every statement of ``text`` that is fine, and every error found.

    Examples
    --------
    >>> checked = check_text(
    ...     "QUERY a ON x WHEN mean(5m) >> 1\\nQUERY b ON y\\nQUERY c ON z WHEN meen(1m) > 0"
    ... )
    >>> [s.name for s in checked.statements], [e[:9] for _, e in checked.errors]
    (['b'], ['line 1:29', 'line 3:19'])
    """
    checked = Checked()
    good_lines = ["\n"] * len(text.splitlines())
    spans = pieces(text)
    for first, piece in spans:
        try:
            statements = parse_queries("\n" * first + piece)
            for statement in statements:
                kind_of(statement).describe(statement)  # compiles it: what a job would refuse
        except QuerySyntaxError as exc:
            checked.errors.append((exc.line, str(exc)))
            continue
        except ValueError as exc:
            checked.errors.append((first + 1, f"line {first + 1}: {exc}"))
            continue
        for i, line in enumerate(piece.splitlines(keepends=True)):
            good_lines[first + i] = line
    # what only the whole file shows (a name defined twice): each such error's statement is
    # left out and the rest read again, so the statements that are fine are still listed
    while any(line.strip() for line in good_lines):
        try:
            checked.statements = parse_queries("".join(good_lines))
            break
        except QuerySyntaxError as exc:
            checked.errors.append((exc.line, str(exc)))
            first, piece = next(
                ((lo, p) for lo, p in reversed(spans) if lo <= max(exc.line - 1, 0)), (0, text)
            )
            blank = ["\n"] * len(piece.splitlines())
            if good_lines[first : first + len(blank)] == blank:
                break  # nothing left to take out: the error is the file's
            good_lines[first : first + len(blank)] = blank
    checked.errors.sort(key=lambda e: e[0])
    return checked


def run_check(path: Path, console: Console) -> int:
    """Print every error (status 2 if any) and the table of the statements that are fine."""
    checked = check_text(read_text(path, "query file"))
    for _, error in checked.errors:
        console.print(f"error: {error}", soft_wrap=True)
    errors = f", {len(checked.errors)} errors" if checked.errors else ""
    # one line, whatever the path's length (a table title wraps to the table's width)
    console.print(f"{path}: {len(checked.statements)} statements OK{errors}", soft_wrap=True)
    if not checked.statements and not checked.errors:  # an empty file, or comments only
        console.print(
            "note: no statement in it; a query file holds lines such as "
            "QUERY hot ON cpu.* WHEN last > 0.9",
            soft_wrap=True,
        )
        return 0
    table = Table()
    for column in ("query", "on / as", "windows", "since / within"):
        table.add_column(column)
    for statement in checked.statements:
        table.add_row(statement.name, *kind_of(statement).describe(statement))
    console.print(table)
    return 2 if checked.errors else 0
