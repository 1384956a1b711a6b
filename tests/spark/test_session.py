"""The Java check gives one clear sentence instead of a Py4J traceback."""

from __future__ import annotations

import os
import stat

import pytest

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
