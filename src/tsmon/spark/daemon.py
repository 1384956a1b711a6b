"""Spark's Python daemon, importing the installed pyspark (``spark.python.daemon.module``).

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip, and the spark-core jar) at
the front of every Python worker's ``sys.path``. Python cannot cache bytecode for modules in
a zip, so each new worker process compiles every pyspark module it imports from source:
about 0.6-1.2 CPU s per process on 2 cores, paid by every daemon Spark starts (the batch
host's, and one per Python data source step: lookup, create, plan). :func:`main` drops those
archives from ``sys.path`` when the interpreter's installed pyspark is the same version as
the zip (tsmon pins ``PYSPARK_PYTHON`` to the driver's interpreter, whose pyspark started
the JVM), then runs ``pyspark.daemon`` as Spark would have. A different version keeps Spark's
path unchanged. Run as ``python -m tsmon.spark.daemon [worker module]``; it must not import
pyspark (or anything that does) before the path is changed.
"""

from __future__ import annotations

import os
import re
import runpy
import sys
import zipfile
from importlib import metadata

__all__ = ["main", "spark_archives"]

_VERSION = re.compile(r"""__version__(?:\s*:\s*str)?\s*=\s*["']([^"']+)["']""")


def _zip_version(path: str) -> str | None:
    """The pyspark version inside Spark's ``pyspark.zip``, or None if unreadable."""
    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read("pyspark/version.py").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    found = _VERSION.search(text)
    return found.group(1) if found else None


def spark_archives(path: list[str]) -> list[str]:
    """The entries of ``path`` that Spark added for its own Python code (its pyspark and py4j
    zips and jars) when the installed pyspark can replace them (the same version), else
    none."""
    archives = [p for p in path if os.path.isfile(p) and p.endswith((".zip", ".jar"))]
    ours = [p for p in archives if os.path.basename(p) == "pyspark.zip"]
    try:
        installed = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return []
    if len(ours) != 1 or _zip_version(ours[0]) != installed:
        return []
    spark = os.path.dirname(ours[0])
    return [
        p
        for p in archives
        if os.path.dirname(p) == spark or os.path.basename(p).startswith("spark-core")
    ]


def main() -> None:
    drop = set(spark_archives(sys.path))
    sys.path[:] = [p for p in sys.path if p not in drop]
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
