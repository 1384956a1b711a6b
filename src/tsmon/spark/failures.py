"""A failed streaming query, told in one line: :class:`~tsmon.spark.job.JobError` with the
reason Spark gives (the rest of its message is the query plan)."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tsmon.spark.job import JobError

__all__ = ["query_failures", "start_failures"]


@contextmanager
def query_failures() -> Iterator[None]:
    """A failed streaming query becomes a :class:`JobError` with the first line of its reason
    (the rest of Spark's message is the query plan)."""
    from pyspark.errors import StreamingQueryException

    try:
        yield
    except StreamingQueryException as e:
        message = str(e)
        reason = _reason(message)
        if _WORKER in message and "ModuleNotFoundError: " in reason:
            reason += (
                "; Spark's Python workers run another interpreter than this one: start the "
                f"SparkSession with PYSPARK_PYTHON={sys.executable} in the environment "
                "(tsmon.spark.session.spark_session() does)"
            )
        raise JobError(f"the streaming query failed: {reason}") from None


@contextmanager
def start_failures() -> Iterator[None]:
    """A streaming query Spark refuses to start becomes a :class:`JobError` with the first
    line of its reason (the rest is the plan); an input that aggregates, with the fix."""
    from pyspark.errors import AnalysisException

    try:
        yield
    except AnalysisException as e:
        reason = (str(e).strip().splitlines() or ["no reason given"])[0].rstrip(";")
        if "after aggregation" in reason:
            reason += (
                ": give the rows before the aggregation (tsmon's queries aggregate), or write "
                "the aggregate out and monitor that as a stream"
            )
        raise JobError(f"the streaming query cannot start: {reason}") from None


TRACEBACK = "Traceback (most recent call last):"  # a foreachBatch function raised
#: A Python worker's error (an import error there: the workers run another interpreter).
_WORKER = "An exception was thrown from the Python worker"
#: A Spark error class, as in ``[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH]``.
_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9_]*)*\]")


def _reason(message: str) -> str:
    r"""The first line of a failed query's message; if it ends in a Python traceback (a sink
    or a callback raised), with the traceback's exception line, or, for a Java error raised
    through Py4J (the input read as a batch is collected, a write), its deepest cause that
    names a Spark error class (the exception line itself often says only "Exception thrown in
    awaitResult").

    >>> _reason("[X] Message: " + TRACEBACK + "\n  File a\nValueError: no\n SQLSTATE\n=== Query")
    '[X] Message: ValueError: no'
    >>> _reason("[X] M: " + TRACEBACK + "\n  File a\npy4j.Py4JJavaError: o1\n: E: awaitResult:"
    ...         "\n\tat a\nCaused by: E: [READ.BAD] file f, column [c]\n\tat b\n"
    ...         "Caused by: E2: column: [c]\n\tat c\n=== Query\nCaused by: E: [PLAN] x")
    '[X] M: E: [READ.BAD] file f, column [c]'
    """
    first, *rest = message.strip().splitlines() or ["no reason given"]
    frames = itertools.takewhile(lambda line: not line.startswith(("===", "\t")), rest)
    exception = [line for line in frames if line.strip() and line[0] != " "][-1:]
    if not first.endswith(TRACEBACK) or not exception:
        return first
    line = exception[0]
    if line.startswith(": "):  # Py4J's line of a Java error, ': <exception>: <message>'
        body = itertools.takewhile(lambda line: not line.startswith("==="), rest)
        causes = [c for c in body if c.startswith("Caused by: ") and _ERROR_CLASS.search(c)]
        line = (causes or [line])[-1].removeprefix("Caused by: ").removeprefix(": ")
    return first.removesuffix(TRACEBACK) + line
