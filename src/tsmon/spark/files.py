"""Atomic files: the one way the Spark runtime writes what a reader (a file stream, a restart,
another process) may look at while it is written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` under a hidden temp name beside ``path``, sync it, rename it into place.

    Hidden names (a leading ``.``) are ignored by Spark's file sources, and ``os.replace`` is
    atomic, so a reader sees the old file or the whole new one.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "sub" / "x.json"
    >>> atomic_write(p, '{"a": 1}'); p.read_text()
    '{"a": 1}'
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    atomic_file(path, lambda temp: _write(temp, raw))


def atomic_file(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Let ``write(temp)`` create a hidden temp file beside ``path``, then rename it in."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    write(temp)
    os.replace(temp, target)


def _write(temp: Path, raw: bytes) -> None:
    with open(temp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
