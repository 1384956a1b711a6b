"""Shared fixtures. ``spark``: one SparkSession for the whole test session (starting one costs
5-9 s), skipped with the reason when Java 17+ is missing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession


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
