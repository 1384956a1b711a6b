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


def no_match(patterns: Iterable[str], series: Iterable[str], shown: int = 3) -> str | None:
    """None when one of ``series`` matches ``patterns``; else the words saying that none does,
    with a few of the series there are (a renamed series or a wrong glob shows at once).

    Examples
    --------
    >>> no_match(["nab.*"], ["nab.cpu"]) is None
    True
    >>> no_match(["nab.*"], ["realAWSCloudwatch.ec2_cpu_5f5533"])
    "no series matches nab.* (series now: 'realAWSCloudwatch.ec2_cpu_5f5533')"
    >>> no_match(["a.*", "b"], [])
    'no series matches a.*, b (no series yet)'
    """
    patterns, names = list(patterns), sorted(series)
    if any(series_matches(name, patterns) for name in names):
        return None
    if not names:
        now = "no series yet"
    else:
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        now = "series now: " + ", ".join(repr(n) for n in names[:shown]) + more
    return f"no series matches {', '.join(patterns)} ({now})"
