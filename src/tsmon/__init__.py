"""tsmon: monitor many time series with persistent queries, in-process or on Spark.

>>> from tsmon import Monitor
>>> Monitor(["cpu"]).series()
['cpu']
"""

from tsmon.core.window_spec import WindowSpec
from tsmon.engine.events import Event
from tsmon.engine.monitor import IngestReport, Monitor
from tsmon.query import QuerySyntaxError

__all__ = ["Event", "IngestReport", "Monitor", "QuerySyntaxError", "WindowSpec"]
__version__ = "0.1.0"
