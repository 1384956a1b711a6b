"""Spark's Python processes import the installed pyspark, not Spark's ``pyspark.zip``.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip, and the spark-core jar) at
the front of every Python process's ``sys.path``. Python cannot cache bytecode for modules in
a zip, so each new process compiles every pyspark module it imports from source: about
0.4-0.8 CPU s per process on 2 cores. :func:`drop_spark_archives` takes those archives off
``sys.path`` when the pyspark that the rest of the path imports is the same version as the
zip (tsmon pins ``PYSPARK_PYTHON`` to the driver's interpreter, whose pyspark started the JVM);
a different version keeps Spark's path unchanged. Two ways in, the same function:

- ``python -m tsmon.spark.daemon [worker module]`` (:func:`main`, Spark's
  ``spark.python.daemon.module``): the daemon that forks the batch host's workers, on any
  executor; it then runs ``pyspark.daemon`` as Spark would have;
- ``tsmon/spark/startup/sitecustomize.py``, which :func:`tsmon.spark.session.spark_session`
  puts on the driver JVM's ``PYTHONPATH``: Python runs it at the start of every process that
  JVM starts, before the ``-m`` module is found, including those that ignore the daemon
  setting (a Python data source's lookup, creation and read planning, and its streaming
  reader).

Neither may import pyspark (or anything that does) before the path is changed.
"""

from __future__ import annotations

import os
import re
import runpy
import sys
import zipfile
from importlib.machinery import PathFinder

__all__ = ["drop_spark_archives", "main", "spark_archives"]

_VERSION = re.compile(r"""__version__(?:\s*:\s*str)?\s*=\s*["']([^"']+)["']""")


def _version_text(text: str) -> str | None:
    found = _VERSION.search(text)
    return found.group(1) if found else None


def _zip_version(path: str) -> str | None:
    """The pyspark version inside Spark's ``pyspark.zip``, or None if unreadable."""
    try:
        with zipfile.ZipFile(path) as archive:
            return _version_text(archive.read("pyspark/version.py").decode())
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def _installed_version(path: list[str]) -> str | None:
    """The version of the pyspark that ``path`` imports, or None if it has none."""
    spec = PathFinder.find_spec("pyspark", path)
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        with open(os.path.join(spec.submodule_search_locations[0], "version.py")) as f:
            return _version_text(f.read())
    except OSError:
        return None


def spark_archives(path: list[str]) -> list[str]:
    """The entries of ``path`` that Spark added for its own Python code (its pyspark and py4j
    zips and the spark-core jar, by name) when the rest of ``path`` imports a pyspark of the
    same version as the zip, else none."""
    archives = [p for p in path if p.endswith((".zip", ".jar")) and _sparks(os.path.basename(p))]
    ours = [p for p in archives if os.path.basename(p) == "pyspark.zip" and os.path.isfile(p)]
    if len(ours) != 1:
        return []
    rest = [p for p in path if p not in archives]
    version = _zip_version(ours[0])
    if version is None or version != _installed_version(rest):
        return []
    return archives


def _sparks(name: str) -> bool:
    """Whether an archive is one of Spark's own by its name (a user's ``--py-files`` may sit
    in the same directory, on YARN or Kubernetes)."""
    return (
        name == "pyspark.zip"
        or (name.startswith("py4j-") and name.endswith(".zip"))
        or (name.startswith("spark-core_") and name.endswith(".jar"))
    )


def drop_spark_archives() -> None:
    """Take :func:`spark_archives` off this process's ``sys.path``."""
    drop = set(spark_archives(sys.path))
    sys.path[:] = [p for p in sys.path if p not in drop]


def main() -> None:
    drop_spark_archives()
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
