"""CSV text as :func:`tsmon.spark.filerows.file_rows` reads it: lines, fields, a header.

Lines end at LF, CRLF or a lone CR (``bytes.splitlines``); a line of ASCII whitespace only is
blank and skipped; a line's fields are RFC 4180's (:func:`csv_fields`). :class:`CsvLines`
applies :func:`csv_fields` to a whole file at once: the usual line (no quote, valid UTF-8, as
many fields as the header) is split on its commas by numpy and pyarrow over the file's bytes,
without a Python object per line or field; any other line goes through :func:`csv_fields`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["CsvLines", "csv_fields", "csv_header", "decoded"]

_FILLED = np.ones(256, dtype=bool)
_FILLED[list(b" \t\n\r\x0b\x0c")] = False  # what bytes.strip() strips
_QUOTE, _COMMA, _CR, _LF = b'"'[0], b","[0], b"\r"[0], b"\n"[0]
_SCAN, _LINES = 1 << 22, 1 << 16
"""Bytes looked at a time for line breaks, lines for blank ones: no mask of a whole file."""


def _where(buf: np.ndarray, byte: int) -> np.ndarray:
    """The offsets of ``byte`` in ``buf``."""
    found = [np.flatnonzero(buf[lo : lo + _SCAN] == byte) + lo for lo in range(0, len(buf), _SCAN)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


class CsvLines:
    """The non-blank lines of one CSV file (no NUL byte in it), read in blocks of lines.

    Examples
    --------
    >>> lines = CsvLines(b"a,b\\r\\n1,2\\r\\n\\n\\"x,y\\",3\\r4\\n")
    >>> lines.header()
    (1, ['a', 'b'])
    >>> for numbers, fields, what in lines.records(2, [1, 0], block=2):
    ...     print(numbers.tolist(), [f.to_pylist() for f in fields], what)
    [2, 4] [['2', '3'], ['1', 'x,y']] [None, None]
    [5] [[None], [None]] ['1 fields, the header has 2']
    """

    def __init__(self, content: bytes) -> None:
        self._content = content
        buf = np.frombuffer(content, dtype=np.uint8)
        self._buf = buf
        ends = _where(buf, _LF)
        if len(_where(buf, _CR)):  # a CR ends a line; the LF of a CRLF then ends none
            cr = buf == _CR
            crlf = cr[:-1] & (buf[1:] == _LF)
            ends = np.flatnonzero(cr | (buf == _LF) & ~np.concatenate([[False], crlf]))
            width = 1 + np.concatenate([crlf, [False]])[ends]
        else:
            width = 1
        starts = np.concatenate([[0], ends + width])
        ends = np.concatenate([ends, [len(buf)]])
        if starts[-1] == len(buf):  # a last line break ends the last line, starts none
            starts, ends = starts[:-1], ends[:-1]
        self._starts, self._ends = starts, ends
        filled = [self._filled(lo, lo + _LINES) for lo in range(0, len(starts), _LINES)]
        (self._kept,) = np.nonzero(np.concatenate(filled)) if filled else np.nonzero(starts)
        self._all_utf8: bool | None = None

    def _filled(self, lo: int, hi: int) -> np.ndarray:
        """Which of lines ``lo`` to ``hi`` hold a byte ``bytes.strip()`` keeps."""
        part = self._buf[self._starts[lo] : self._next(min(hi, len(self._starts)) - 1)]
        return np.maximum.reduceat(_FILLED[part], self._starts[lo:hi] - self._starts[lo])

    def _next(self, i: int) -> int:
        """Where the line after line ``i`` starts (the file's end after the last)."""
        return self._starts[i + 1] if i + 1 < len(self._starts) else len(self._buf)

    def header(self) -> tuple[int, list[str] | str] | None:
        """The first non-blank line's number and :func:`csv_header`; None if there is none."""
        if not len(self._kept):
            return None
        first = self._kept[0]
        return int(first) + 1, csv_header(self._line(first))

    def records(
        self, width: int, wanted: Sequence[int], block: int = 1 << 16
    ) -> Iterator[tuple[np.ndarray, list[Any], list[str | None]]]:
        """The lines after the header as ``width`` fields each, ``block`` lines at a time:
        their 1-based line numbers, for each index in ``wanted`` that field of each line as a
        pyarrow string array (null on a malformed line), and what is wrong with each line
        (None for a record)."""
        kept = self._kept[1:]
        for lo in range(0, len(kept), block):
            yield self._block(kept[lo : lo + block], width, wanted)

    def _block(
        self, kept: np.ndarray, width: int, wanted: Sequence[int]
    ) -> tuple[np.ndarray, list[Any], list[str | None]]:
        """:meth:`records` of some lines: the bytes read run from the first one's start to
        the start of the line after the last one (blank lines and line breaks between them
        add no quote, comma or byte beyond ASCII)."""
        starts, ends = self._starts[kept], self._ends[kept]
        lo, hi = starts[0], self._next(kept[-1])
        part = self._buf[lo:hi]
        commas = np.flatnonzero(part == _COMMA) + lo
        line_of = np.searchsorted(starts, commas, side="right") - 1
        counted = np.bincount(line_of, minlength=len(starts))
        quoted = np.maximum.reduceat(part == _QUOTE, starts - lo)
        utf8 = np.maximum.reduceat(part, starts - lo) < 0x80
        if not utf8.all() and self._utf8():
            utf8[:] = True  # all of the file is UTF-8, so is each of its lines
        usual = ~quoted & utf8 & (counted == width - 1)  # csv_fields splits these on commas
        split = commas[usual[line_of]].reshape(int(usual.sum()), width - 1)
        bounds = np.column_stack([starts[usual], split + 1]), np.column_stack([split, ends[usual]])
        quick = [self._slices(bounds[0][:, j], bounds[1][:, j]) for j in wanted]
        other = np.flatnonzero(~usual)
        what: list[str | None] = [None] * len(kept)
        slow: list[list[str | None]] = [[] for _ in wanted]
        for i in other.tolist():
            fields = csv_fields(self._line(kept[i]))
            if isinstance(fields, list) and len(fields) != width:
                fields = f"{len(fields)} fields, the header has {width}"
            what[i] = fields if isinstance(fields, str) else None
            for column, j in zip(slow, wanted, strict=True):
                column.append(None if isinstance(fields, str) else fields[j])
        fields = [self._ordered(a, s, other) for a, s in zip(quick, slow, strict=True)]
        return kept + 1, fields, what

    def _utf8(self) -> bool:
        """Whether all of the file is UTF-8 text, checked by Arrow without a copy of it."""
        import pyarrow as pa

        if self._all_utf8 is None:
            offsets = pa.py_buffer(np.array([0, len(self._content)], dtype=np.int64))
            data = [None, offsets, pa.py_buffer(self._content)]
            try:
                pa.Array.from_buffers(pa.large_binary(), 1, data).cast(pa.large_string())
                self._all_utf8 = True
            except pa.ArrowInvalid:
                self._all_utf8 = False
        return self._all_utf8

    def _slices(self, lo: np.ndarray, hi: np.ndarray) -> Any:
        """``content[lo[i]:hi[i]]`` for each i as a pyarrow string array, cut from the file's
        bytes by Arrow: the slices and the gaps between them make one binary array's
        consecutive values, of which every other is taken."""
        import pyarrow as pa

        offsets = np.empty(2 * len(lo), dtype=np.int64)
        offsets[0::2], offsets[1::2] = lo, hi
        if not len(lo):
            return pa.array([], type=pa.string())
        pieces = pa.Array.from_buffers(
            pa.large_binary(),
            len(offsets) - 1,
            [None, pa.py_buffer(offsets), pa.py_buffer(self._content)],
        )
        return pieces.take(np.arange(0, len(offsets) - 1, 2)).cast(pa.string())

    def _ordered(self, quick: Any, slow: list[str | None], other: np.ndarray) -> Any:
        """One field of every line: the split lines' ``quick`` and the ``other`` lines'
        ``slow`` values, put back in line order."""
        import pyarrow as pa

        if not len(other):
            return quick
        n = len(quick) + len(slow)
        where = np.empty(n, dtype=np.int64)
        usual = np.ones(n, dtype=bool)
        usual[other] = False
        where[usual] = np.arange(len(quick))
        where[other] = len(quick) + np.arange(len(slow))
        return pa.concat_arrays([quick, pa.array(slow, type=pa.string())]).take(where)

    def _line(self, i: int) -> bytes:
        return self._content[self._starts[i] : self._ends[i]]


def decoded(raw: bytes) -> str | None:
    """``raw`` as UTF-8 text, None if it is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def csv_header(raw: bytes) -> list[str] | str:
    """A CSV file's column names from its header line (a UTF-8 byte order mark dropped, names
    stripped), or what keeps it from being one.

    Examples
    --------
    >>> csv_header(b"\\xef\\xbb\\xbftimestamp, value ")
    ['timestamp', 'value']
    """
    fields = csv_fields(raw.removeprefix(b"\xef\xbb\xbf"))
    return fields if isinstance(fields, str) else [h.strip() for h in fields]


def csv_fields(raw: bytes) -> list[str] | str:
    """The fields of one CSV line (quotes as in RFC 4180), or what keeps it from being one.

    Examples
    --------
    >>> csv_fields(b'a,"b,c"'), csv_fields(b"\\xff,1"), csv_fields(b'"a,1')
    (['a', 'b,c'], 'not UTF-8 text', 'not CSV (unexpected end of data: an unclosed quote?)')
    >>> csv_fields(b'b",1000,1')[:45]
    'not CSV (a quote inside a field that does not'
    """
    text = decoded(raw)
    if text is None:
        return "not UTF-8 text"
    if text and '"' not in text and "\r" not in text and "\n" not in text:  # the usual line:
        return text.split(",")  # what csv.reader gives, in 1/2 of its time
    try:
        fields = next(csv.reader([text], strict=True))
    except csv.Error as e:
        hint = ": an unclosed quote?" if "end of data" in str(e) else ""
        return f"not CSV ({e}{hint})"
    if '"' in text and not _QUOTED_RIGHT.fullmatch(text):  # csv.reader keeps such a quote
        return (  # the second half of a quoted field broken over two lines, most likely
            "not CSV (a quote inside a field that does not start with one: RFC 4180 quotes "
            "the whole field; a line break inside quotes?)"
        )
    return fields


_QUOTED_RIGHT = re.compile(r'(?:"(?:[^"]|"")*"|[^",]*)(?:,(?:"(?:[^"]|"")*"|[^",]*))*', re.S)
"""A line whose every quote is RFC 4180's (§2.5-2.7): a field is quoted whole or holds none."""
