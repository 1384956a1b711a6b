"""Spark's Python daemon, importing the installed pyspark (``spark.python.daemon.module``).

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip, and the spark-core jar) at
the front of every Python worker's ``sys.path``. Python cannot cache bytecode for modules in
a zip, so each new worker process compiles every pyspark module it imports from source:
about 0.6-1.2 CPU s per process on 2 cores. Spark starts the batch host's workers with this
setting's module (a Python data source's own processes keep ``pyspark.daemon`` and their
cost). :func:`main` drops those archives from ``sys.path`` when the interpreter's installed
pyspark is the same version as the zip (tsmon pins ``PYSPARK_PYTHON`` to the driver's
interpreter, whose pyspark started the JVM), then runs ``pyspark.daemon`` as Spark would
have. A different version keeps Spark's path unchanged. Run as ``python -m
tsmon.spark.daemon [worker module]``; it must not import pyspark (or anything that does)
before the path is changed.
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
    zips and the spark-core jar, by name) when the installed pyspark can replace them (the
    same version), else none."""
    archives = [p for p in path if os.path.isfile(p) and p.endswith((".zip", ".jar"))]
    ours = [p for p in archives if os.path.basename(p) == "pyspark.zip"]
    try:
        installed = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return []
    if len(ours) != 1 or _zip_version(ours[0]) != installed:
        return []
    return [p for p in archives if _sparks(os.path.basename(p))]


def _sparks(name: str) -> bool:
    """Whether an archive is one of Spark's own by its name (a user's ``--py-files`` may sit
    in the same directory, on YARN or Kubernetes)."""
    return (
        name == "pyspark.zip"
        or (name.startswith("py4j-") and name.endswith(".zip"))
        or (name.startswith("spark-core_") and name.endswith(".jar"))
    )


def main() -> None:
    drop = set(spark_archives(sys.path))
    sys.path[:] = [p for p in sys.path if p not in drop]
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
