"""tsmon: monitor many time series with persistent queries, in-process or on Spark.

>>> from tsmon import Monitor
>>> Monitor(["cpu"]).series()
['cpu']

The names below are imported on first use, so that importing a submodule (a Spark worker
importing ``tsmon.spark.pysources``, say) does not import the whole in-process monitor.
"""

from importlib import import_module
from typing import Any

__all__ = ["Event", "IngestReport", "Monitor", "QuerySyntaxError", "WindowSpec"]
__version__ = "0.1.0"

_HOMES = {
    "Event": "tsmon.engine.events",
    "IngestReport": "tsmon.engine.monitor",
    "Monitor": "tsmon.engine.monitor",
    "QuerySyntaxError": "tsmon.query",
    "WindowSpec": "tsmon.core.window_spec",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'tsmon' has no attribute {name!r}")
