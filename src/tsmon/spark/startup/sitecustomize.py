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


def _drop_spark_archives() -> None:
    """:func:`tsmon.spark.daemon.drop_spark_archives`, loaded from its file under another name:
    imported as ``tsmon.spark.daemon``, the module would already be in ``sys.modules`` when
    Spark's daemon setting runs it with ``-m``, and runpy would warn about it on stderr."""
    from importlib.util import module_from_spec, spec_from_file_location

    spark = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = spec_from_file_location("_tsmon_startup_daemon", os.path.join(spark, "daemon.py"))
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except OSError:  # no daemon.py beside this directory: Spark's path as it was
        return
    module.drop_spark_archives()


if any(os.path.basename(p) == "pyspark.zip" for p in sys.path):
    _drop_spark_archives()
_next_sitecustomize()
