"""Run by Python at the start of every process the driver's JVM starts: Spark's archives off
``sys.path`` (:func:`tsmon.spark.daemon.drop_spark_archives`), then the next
``sitecustomize`` on the path, if there is one, as if this one were not there.

:func:`tsmon.spark.session.spark_session` puts this directory (nothing else in it is
importable) at the end of the JVM's ``PYTHONPATH``, which Spark passes on to every Python
process it starts, behind its own archives.
"""

import os
import sys


def _next_sitecustomize() -> None:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(module_from_spec(spec))


if any(os.path.basename(p) == "pyspark.zip" for p in sys.path):
    try:
        from tsmon.spark.daemon import drop_spark_archives
    except ImportError:  # tsmon is not importable here: Spark's path as it was
        pass
    else:
        drop_spark_archives()
_next_sitecustomize()
