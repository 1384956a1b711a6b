"""Shared fixtures and Hypothesis settings.

``spark``: one SparkSession for the whole test session (starting one costs 5-9 s), skipped with
the reason when Java 17+ is missing. The query language's LALR parser is built once, before the
first test (:func:`query_parser`), so no test pays for it inside a Hypothesis deadline.

Every SparkSession the suite starts, in this process and in the ``tsmon`` processes its tests
run, compiles with the JIT's first tier only (``TSMON_JVM_OPTIONS=-XX:TieredStopAtLevel=1``
unless set): the suite's jobs run for seconds, and C2 compiles for several CPU seconds per JVM
that a short job never earns back (docs/running.md). It changes no result, only CPU time.

Hypothesis profiles: ``dev`` (the default: random examples, a 1 s deadline per example, the
example database on) and ``ci`` (selected when ``CI=true``: derandomized, so a run is
reproducible, no deadline on a shared machine, no database, and the blob to reproduce a
failure printed). ``HYPOTHESIS_PROFILE=<name>`` picks one explicitly.

``make test`` runs the suite on two pytest-xdist workers (``--dist loadscope``: a module's
tests run on one worker, so a module-scoped fixture is set up once); each worker is a test
session with its own ``spark`` session. (``--dist loadgroup`` would keep every Spark test in
one worker, but pytest-xdist 3.8 cannot group on pytest 9: it renames ``item._nodeid``, which
pytest 9 no longer reads.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from tsmon.query.grammar import lark_parser
from tsmon.spark.session import SHORT_RUN_JVM_OPTIONS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

os.environ.setdefault("TSMON_JVM_OPTIONS", SHORT_RUN_JVM_OPTIONS)

settings.register_profile("dev", deadline=timedelta(seconds=1))
settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev")
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slow tests first (longest first: the two xdist workers end together)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def query_parser() -> None:
    """Build the query language's parser once per session, before the first test."""
    lark_parser()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[2] session from :func:`tsmon.spark.session.spark_session`, stopped at the end."""
    from tsmon.spark.session import JavaError, spark_session

    try:
        session = spark_session(app_name="tsmon-tests")
    except JavaError as e:
        pytest.skip(str(e))
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()
