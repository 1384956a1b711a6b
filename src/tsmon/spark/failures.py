"""A failed streaming query, told in one line: :class:`~tsmon.spark.job.JobError` with the
reason Spark gives (the rest of its message is the query plan)."""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tsmon.spark.job import JobError

__all__ = ["query_failures", "start_failures", "worker_needs"]


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
        missing = _MISSING.search(reason) if _WORKER in message else None
        if missing is not None:
            reason += _missing_hint(missing.group(1))
        raise JobError(f"the streaming query failed: {reason}") from None


def _missing_hint(module: str) -> str:
    """What to do about ``module`` missing in a Python worker: one tsmon needs from the
    environment (:func:`worker_needs`) means the workers run another interpreter; another one
    is the user's own code's, missing where the workers run."""
    top = module.split(".")[0]
    if top in worker_needs():
        return (
            "; Spark's Python workers run another interpreter than this one: start the "
            f"SparkSession with PYSPARK_PYTHON={sys.executable} in the environment "
            "(tsmon.spark.session.spark_session() does)"
        )
    return (
        f"; {top!r} is no module tsmon needs (a function of the input DataFrame's may): "
        "install it where Spark's Python workers run"
    )


@functools.cache
def worker_needs() -> frozenset[str]:
    """The top-level modules tsmon and its requirements install (``tsmon``, ``pandas``,
    ``pyarrow``, ``numpy``, ``scipy``, ``lark``, ...), from the installed distribution's
    metadata; just ``tsmon`` when it runs from a source tree that is not installed."""
    try:
        requires = importlib.metadata.requires("tsmon") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    names = {
        _distribution(m.group(0))
        for r in requires
        if "extra ==" not in r and (m := _REQUIREMENT.match(r)) is not None
    }
    modules = importlib.metadata.packages_distributions()
    return frozenset(
        {"tsmon"}
        | {m for m, dists in modules.items() if any(_distribution(d) in names for d in dists)}
    )


def _distribution(name: str) -> str:
    """A distribution's normalized name (PEP 503): ``Prometheus_Client`` is
    ``prometheus-client``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@contextmanager
def start_failures() -> Iterator[None]:
    """A streaming query Spark refuses to start becomes a :class:`JobError` with the first
    line of its reason (the rest is the plan); an input that aggregates, with the fix; a Java
    error (the checkpoint cannot be written, say) with its exception line, not its stack."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    try:
        yield
    except Py4JJavaError as e:
        lines = [line for line in str(e).splitlines() if line.startswith(": ")]
        reason = lines[0].removeprefix(": ") if lines else str(e).strip().splitlines()[0]
        raise JobError(f"the streaming query cannot start: {reason}") from None
    except AnalysisException as e:
        reason = (str(e).strip().splitlines() or ["no reason given"])[0].rstrip(";")
        if "after aggregation" in reason:
            reason += (
                ": give the rows before the aggregation (tsmon's queries aggregate), or write "
                "the aggregate out and monitor that as a stream"
            )
        raise JobError(f"the streaming query cannot start: {reason}") from None


TRACEBACK = "Traceback (most recent call last):"  # a foreachBatch function raised
#: A Python worker's error (an import error there: the workers may run another interpreter).
_WORKER = "An exception was thrown from the Python worker"
#: The module a worker could not import, in the reason's exception line.
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
#: The distribution name a requirement starts with (``pandas<3,>=2.1``).
_REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
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
