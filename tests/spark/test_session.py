"""The Java check gives one clear sentence instead of a Py4J traceback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import tsmon
from tsmon.spark.session import JavaError, check_java


def _fake_java(tmp_path, first_line: str) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text(f"#!/bin/sh\necho '{first_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)


def test_missing_java(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaError, match=r"found no 'java'.*install a JDK 17"):
        check_java()


def test_old_java(tmp_path, monkeypatch):
    _fake_java(tmp_path, 'java version "1.8.0_392"')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaError, match=r'found: java version "1.8.0_392"'):
        check_java()


def test_java_17_passes(tmp_path, monkeypatch):
    _fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert check_java() == 17
    assert os.environ["JAVA_HOME"] == str(tmp_path)


@pytest.mark.spark
def test_the_driver_jvm_runs_with_tsmons_options_then_the_environments(spark):
    """The JVM was started with the parallel GC and then ``TSMON_JVM_OPTIONS`` (set for the
    suite by conftest), in that order, so the environment's options win a conflict."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = [str(a) for a in bean.getInputArguments()]
    extra = os.environ["TSMON_JVM_OPTIONS"].split()
    assert "-XX:+UseParallelGC" in arguments
    assert all(a in arguments for a in extra), (extra, arguments)
    assert arguments.index("-XX:+UseParallelGC") < arguments.index(extra[0])


def _worker_imports(rows):
    import sys

    import pandas as pd
    import pyspark

    for _ in rows:
        yield pd.DataFrame({"pyspark": [pyspark.__file__], "path": ["\n".join(sys.path)]})


@pytest.mark.spark
def test_python_workers_import_the_installed_pyspark_not_sparks_zip(spark):
    """Workers start through tsmon.spark.daemon: the interpreter's own pyspark (cached
    bytecode), with Spark's pyspark.zip, py4j zip and spark-core jar off ``sys.path``."""
    import pyspark

    row = spark.range(1).mapInPandas(_worker_imports, "pyspark string, path string").first()
    assert row.pyspark == pyspark.__file__
    assert not [p for p in row.path.splitlines() if p.endswith((".zip", ".jar")) and "spark" in p]


def _archive(path, version: str) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyspark/version.py", f"__version__: str = '{version}'\n")
    return str(path)


def test_spark_archives_dropped_only_for_the_installed_version(tmp_path):
    from importlib import metadata

    import pyspark

    from tsmon.spark.daemon import spark_archives

    installed = str(Path(pyspark.__file__).parents[1])  # where the rest of the path finds it

    lib = tmp_path / "python" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "jars").mkdir()
    (lib / "py4j-0.10.9.9-src.zip").write_bytes(b"")
    jar = tmp_path / "jars" / "spark-core_2.13-4.3.0.jar"
    jar.write_bytes(b"")
    other = lib / "user.zip"  # a user's --py-files beside Spark's (YARN, Kubernetes)
    other.write_bytes(b"")
    same = _archive(lib / "pyspark.zip", metadata.version("pyspark"))
    path = [str(tmp_path), same, str(lib / "py4j-0.10.9.9-src.zip"), str(jar), str(other)]
    assert spark_archives([*path, installed]) == path[1:4]
    assert spark_archives(path) == []  # nothing else to import pyspark from: keep the zip
    _archive(lib / "pyspark.zip", "3.5.0")
    assert spark_archives([*path, installed]) == []
    assert spark_archives([str(tmp_path), str(other), installed]) == []


def _spark_python_path(*extra: str) -> str:
    """``PYTHONPATH`` as Spark gives it to its Python processes: its own archives first."""
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    archives = [str(lib / "pyspark.zip"), *map(str, sorted(lib.glob("py4j-*.zip")))]
    tsmon_root = str(Path(tsmon.__file__).parents[1])
    return os.pathsep.join([*archives, tsmon_root, *extra])


def _imported_pyspark(python_path: str) -> str:
    code = "import pyspark.daemon; print(pyspark.daemon.__file__)"
    env = {**os.environ, "PYTHONPATH": python_path}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_startup_hook_makes_sparks_processes_import_the_installed_pyspark(tmp_path):
    """A process started with Spark's path and :data:`STARTUP` at its end imports the
    installed pyspark (cached bytecode), not the zip; then runs the next sitecustomize."""
    import pyspark

    from tsmon.spark.session import STARTUP

    installed = str(Path(pyspark.__file__).parent / "daemon.py")
    assert _imported_pyspark(_spark_python_path()).endswith("pyspark.zip/pyspark/daemon.py")
    assert _imported_pyspark(_spark_python_path(STARTUP)) == installed
    code = "import sys; print(sorted(m for m in sys.modules if m.startswith('tsmon')))"
    env = {**os.environ, "PYTHONPATH": _spark_python_path(STARTUP)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert (done.stdout, done.stderr) == ("[]\n", "")  # -m tsmon.spark.daemon: no runpy warning
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.stderr.write('next ran')\n")
    env = {**os.environ, "PYTHONPATH": _spark_python_path(STARTUP, str(tmp_path))}
    done = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True)
    assert done.stderr == "next ran"


def test_jvm_python_path_appends_then_restores(monkeypatch):
    from tsmon.spark.session import jvm_python_path

    monkeypatch.setenv("PYTHONPATH", "a")
    with jvm_python_path("b"):
        assert os.environ["PYTHONPATH"] == os.pathsep.join(["a", "b"])
    assert os.environ["PYTHONPATH"] == "a"
    monkeypatch.delenv("PYTHONPATH")
    with jvm_python_path("b"):
        assert os.environ["PYTHONPATH"] == "b"
    assert "PYTHONPATH" not in os.environ


@pytest.mark.spark
def test_the_driver_jvms_python_path_ends_with_the_startup_hook(spark):
    """Spark appends the JVM's ``PYTHONPATH`` to every Python process it starts, among them a
    Python data source's (which ignore ``spark.python.daemon.module``)."""
    from tsmon.spark.session import STARTUP

    path = str(spark._jvm.java.lang.System.getenv("PYTHONPATH"))
    assert path.split(os.pathsep)[-1] == STARTUP
