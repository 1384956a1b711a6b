"""Reading a user's text file (a query file, a job file) with an error that says what is wrong.

``Path.read_text`` fails with ``[Errno 21] Is a directory: 'x'`` or ``'utf-8' codec can't
decode byte 0xff in position 58``: neither names the file's role nor, for bad bytes, the line.
:func:`read_text` raises the same exception types with messages a user can act on.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_text"]


def read_text(path: Path, what: str = "file") -> str:
    """The UTF-8 text of ``path``; ``what`` names the file in errors (``"query file"``).

    Raises ``FileNotFoundError``, ``IsADirectoryError`` or ``PermissionError`` (``OSError``\\ s)
    naming the path, and ``ValueError`` naming the line and column of the first byte that is
    not UTF-8.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp) / "q.tsq"
    ...     _ = p.write_bytes(b"QUERY a ON x\\nWHEN last > \\xff1\\n")
    ...     try:
    ...         read_text(p, "query file")
    ...     except ValueError as e:
    ...         print(str(e).replace(tmp, "TMP"))
    query file TMP/q.tsq is not UTF-8 text: byte 0xff at line 2, column 13; save it as UTF-8
    """
    if path.is_dir():
        raise IsADirectoryError(f"{what} {path} is a folder; pass the path of a file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such {what}: {path}") from None
    except PermissionError:
        raise PermissionError(f"no permission to read {what} {path}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(
            f"{what} {path} is not UTF-8 text: byte 0x{data[e.start]:02x} at line {line}, "
            f"column {column}; save it as UTF-8"
        ) from None
