"""A user's files: reading one (a query file, a job file) and checking one a command will write,
with an error that says what is wrong.

``Path.read_text`` fails with ``[Errno 21] Is a directory: 'x'`` or ``'utf-8' codec can't
decode byte 0xff in position 58``: neither names the file's role nor, for bad bytes, the line.
:func:`read_text` raises the same exception types with messages a user can act on.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_writable", "read_text"]


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


def check_writable(path: Path, option: str, inputs: list[Path]) -> None:
    """Raise ``OSError`` with the fix unless ``path`` (given as ``option``) can be written as a
    file and is none of the command's ``inputs`` (it would overwrite the recording it reads).

    Run before the work: finding out afterwards would cost the whole replay and its events.
    (Permission checks use ``os.access``; a superuser passes them, and the write itself is
    still guarded by the ``OSError`` handler of :func:`tsmon.cli.main`.)
    """
    fix = f"pass a file path in an existing, writable folder to {option}"
    if path.is_dir():
        raise OSError(f"{option} {path} is a folder, not a file; {fix}")
    parent = path.parent
    if not parent.exists():
        raise OSError(f"{option} {path}: folder {parent} does not exist; {fix}")
    if not parent.is_dir():
        raise OSError(f"{option} {path}: {parent} is not a folder; {fix}")
    if path.exists() and any(p.exists() and path.samefile(p) for p in inputs):
        raise OSError(f"{option} {path} is an input of this command: writing would overwrite it")
    if path.exists() and not os.access(path, os.W_OK):
        raise OSError(f"{option} {path}: no permission to overwrite the file; {fix}")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(f"{option} {path}: no permission to create files in {parent}; {fix}")
