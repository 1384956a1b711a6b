"""The Spark runtime: tsmon jobs on Structured Streaming (source nodes in executors, the
coordinator on the driver, a control channel between them).

``from tsmon.spark import Monitor``: the PySpark API (:mod:`tsmon.spark.api`, docs/pyspark.md),
imported on first use so that ``import tsmon.spark`` stays light.
"""

from typing import Any

__all__ = ["Monitor", "Run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tsmon.spark import api

        return getattr(api, name)
    raise AttributeError(f"module 'tsmon.spark' has no attribute {name!r}")
