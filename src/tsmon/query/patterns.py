"""Series globs: the one matching rule for ``ON`` triggers and aggregate terms.

A series pattern is an :mod:`fnmatch` glob matched case-sensitively against whole names
(``fnmatchcase``), on every platform. A spelling is a glob when it contains ``*``, ``?`` or
``[``; anything else names one series literally.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

#: Characters that make a spelling a glob.
GLOB_CHARS = frozenset("*?[")


def is_glob(spelling: str) -> bool:
    """Whether ``spelling`` is a glob rather than a literal series name.

    Examples
    --------
    >>> is_glob("host*.cpu"), is_glob("db?.cpu"), is_glob("web[12].mem"), is_glob("a-b.x")
    (True, True, True, False)
    """
    return not GLOB_CHARS.isdisjoint(spelling)


def series_matches(series: str, patterns: Iterable[str]) -> bool:
    """Whether ``series`` matches one of ``patterns`` (case-sensitive fnmatch).

    Examples
    --------
    >>> series_matches("db1.cpu", ["db?.cpu"]), series_matches("DB1.cpu", ["db?.cpu"])
    (True, False)
    >>> series_matches("a-b.x", ["a-b.x"]), series_matches("db10.cpu", ["db?.cpu", "web*"])
    (True, False)
    """
    return any(fnmatchcase(series, pattern) for pattern in patterns)
