"""A failed streaming query, told in one line: :class:`~tsmon.spark.job.JobError` with the
reason Spark gives (the rest of its message is the query plan)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from tsmon.spark.job import JobError

__all__ = ["query_failures"]


@contextmanager
def query_failures() -> Iterator[None]:
    """A failed streaming query becomes a :class:`JobError` with the first line of its reason
    (the rest of Spark's message is the query plan)."""
    from pyspark.errors import StreamingQueryException

    try:
        yield
    except StreamingQueryException as e:
        raise JobError(f"the streaming query failed: {_reason(str(e))}") from None


TRACEBACK = "Traceback (most recent call last):"  # a foreachBatch function raised


def _reason(message: str) -> str:
    r"""The first line of a failed query's message; if it ends in a Python traceback (a sink
    or a callback raised), with the traceback's exception line.

    >>> _reason("[X] Message: " + TRACEBACK + "\n  File a\nValueError: no\n SQLSTATE\n=== Query")
    '[X] Message: ValueError: no'
    """
    first, *rest = message.strip().splitlines() or ["no reason given"]
    frames = itertools.takewhile(lambda line: not line.startswith(("===", "\t")), rest)
    exception = [line for line in frames if line.strip() and line[0] != " "][-1:]
    if not first.endswith(TRACEBACK) or not exception:
        return first
    return first.removesuffix(TRACEBACK) + exception[0]
