"""Start a SparkSession with the facts tsmon's Spark runtime depends on.

Why this module exists: a session that "mostly works" fails later in confusing ways.
The default HDFS-backed state store keeps every key in memory, Python workers started
with another interpreter cannot import tsmon, and 200 shuffle partitions make every local
micro-batch pay for 200 empty state stores. :func:`spark_session` pins all of these, and
checks Java first so that a missing or old JDK is one clear sentence, not a Py4J traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tsmon.spark.files import atomic_write

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "ARROW_RECORDS_PER_BATCH",
    "JVM_OPTIONS",
    "MIN_BATCHES_TO_RETAIN",
    "MIN_JAVA",
    "ROCKSDB_PROVIDER",
    "SHORT_RUN_JVM_OPTIONS",
    "STARTUP",
    "JavaError",
    "check_java",
    "jvm_output",
    "jvm_python_path",
    "spark_session",
]

MIN_JAVA = 17
"""Oldest Java major version Spark 4 runs on."""

MIN_BATCHES_TO_RETAIN = 10
"""Batches of offsets, commits and state versions a checkpoint keeps (Spark's default: 100);
recovery needs only the last one."""

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""The state store provider tsmon runs on (RocksDB: state larger than memory, changelogs)."""

JVM_OPTIONS = "-XX:+UseParallelGC"
"""The driver JVM's GC (on ``local[*]`` the driver runs the tasks too): the parallel
collector, not Java 17's default G1, whose concurrent cycles (started by arrays over half a
1 MB region: a file's bytes, Arrow batches, a bucket's state), refinement and write barriers
cost 0.5-2 µs per point in ``bench_spark.py`` against 0.3-0.5 (benchmarks/README.md, "Where
the JVM's CPU goes")."""

SHORT_RUN_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""For a job that runs for seconds to a minute (the demo, the tests): the JIT's first tier
(C1) only. C2 compiles for several CPU seconds in a job's first batches and pays off over
minutes: C1 only cut the demo's streaming time by ~30 % but slows a long job's task threads
(``benchmarks/README.md``, "Where the JVM's CPU goes")."""

ARROW_RECORDS_PER_BATCH = 100_000
"""Rows per Arrow batch between the JVM and Python (Spark's default: 10,000). The bucket host
gets a bucket's rows as one frame anyway (:class:`tsmon.spark.host.BucketHost`), and pyspark
converts each piece of a bucket to pandas on its own (~1.3 ms of fixed cost per piece, then
the host's ``pd.concat``): with ~19,000 rows per bucket in ``bench_spark.py``, 10,000 made ~2.5
pieces per bucket and cost 0.47-0.58 µs per point in "rows to pandas", 100,000 cost 0.19-0.23
(``benchmarks/README.md``, "Fewer, larger Arrow batches to the host"). The JVM's Arrow batch
holds up to this many rows (a few MB); the setting is the session's, so every pandas UDF of
the session gets batches of up to this many rows."""

STARTUP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")
"""The directory of tsmon's ``sitecustomize`` for Spark's Python processes
(:mod:`tsmon.spark.daemon`), added to the driver JVM's ``PYTHONPATH``."""

_INSTALL_HINT = "install a JDK 17+ (e.g. 'apt-get install openjdk-17-jre-headless') and retry"


_QUIET_LOG4J2 = """\
# Written by tsmon.spark.session: Spark's own logging at ERROR, to stderr.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


class JavaError(RuntimeError):
    """Java is missing or too old for Spark; the message says what was found and the fix."""


def _java_binary() -> str | None:
    """The ``java`` Spark will launch: ``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def _java_major(first_line: str) -> int | None:
    """Major version from the first line of ``java -version`` (``1.8.0`` gives 1, as in
    ``scripts/check_java.sh``, so Java 8 is rejected).

    >>> _java_major('openjdk version "17.0.15" 2025-04-15')
    17
    >>> _java_major('java version "1.8.0_392"')
    1
    >>> _java_major("garbage") is None
    True
    """
    m = re.search(r'version "(\d+)', first_line)
    return int(m.group(1)) if m else None


def check_java() -> int:
    """Return the Java major version, or raise :class:`JavaError` if below :data:`MIN_JAVA`.

    Same rule as ``scripts/check_java.sh``: the first line of ``java -version`` must name a
    major version of at least 17.
    """
    java = _java_binary()
    if java is None:
        raise JavaError(
            f"tsmon needs Java {MIN_JAVA} or newer for Spark and found no 'java' "
            f"(looked in $JAVA_HOME/bin and on PATH): {_INSTALL_HINT}."
        )
    try:
        proc = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise JavaError(f"tsmon could not run {java!r} -version ({e}): {_INSTALL_HINT}.") from None
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    first = lines[0] if lines else ""
    major = _java_major(first)
    if major is None or major < MIN_JAVA:
        raise JavaError(
            f"tsmon needs Java {MIN_JAVA} or newer for Spark, found: {first or '(no output)'} "
            f"at {java}; {_INSTALL_HINT}."
        )
    return major


def _quiet_log4j2_file() -> str:
    """Path of a log4j2 config that logs only errors (written once per temp dir)."""
    path = os.path.join(tempfile.gettempdir(), "tsmon-log4j2-quiet.properties")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == _QUIET_LOG4J2:
                return path
    except OSError:
        pass
    atomic_write(path, _QUIET_LOG4J2)
    return path


@contextmanager
def jvm_output(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """A JVM started in this block writes its stdout and stderr to ``path`` (appended), and so
    do the Python workers it starts; this process's own output is put back when the block
    ends. ``None``: no change (Spark writes to this process's console).

    Spark prints to the console from outside Python: the JVM's start-up warnings, its log
    lines (errors, and the stack traces of listeners at shutdown) and the workers' output go
    to the file descriptors the JVM inherited, so they are redirected at the descriptors.
    """
    if path is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (log, *saved):
            os.close(fd)


@contextmanager
def jvm_python_path(entry: str) -> Iterator[None]:
    """A JVM started in this block has ``entry`` at the end of its ``PYTHONPATH``, which Spark
    appends to the path of every Python process it starts; this process's own environment is
    put back when the block ends."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (before, entry) if p)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def spark_session(
    master: str = "local[2]",
    app_name: str = "tsmon",
    conf: Mapping[str, str] | None = None,
    log: str | os.PathLike[str] | None = None,
    jvm_options: str | None = None,
) -> SparkSession:
    """Get or create a SparkSession configured for tsmon.

    Pinned settings (``conf`` entries override them):

    - ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` = this interpreter, so workers import
      the same tsmon and pickle the same classes;
    - the RocksDB state store provider, with changelog checkpointing (a batch commits its
      changes, not a snapshot of the whole store) and :data:`MIN_BATCHES_TO_RETAIN` versions
      kept (Spark keeps 100: disk grows with them);
    - ``spark.sql.shuffle.partitions`` = 2 when ``master`` is local, else 16 (each partition
      is a state store, and empty ones still cost time per micro-batch; Spark's 200 is far
      too many, and a checkpoint keeps the count it was started with: set it in the job's
      ``[job.spark_conf]`` to about 2× the cluster's cores);
    - bounded state on disk: ``spark.sql.streaming.minBatchesToRetain`` =
      :data:`MIN_BATCHES_TO_RETAIN` (Spark's 100 keeps 100 versions of every source node's
      state; a restart needs the last), RocksDB compacted at every commit (a node's state is
      rewritten whole each batch, so without it every retained version keeps every SST file
      written since the first and the state directory grows without bound) and old versions
      deleted every 15 s (Spark's maintenance interval: 60 s);
    - :data:`ARROW_RECORDS_PER_BATCH` rows per Arrow batch to Python (Spark's 10,000 cut a
      bucket's rows into pieces that pyspark converts one by one);
    - Spark's Python processes import the installed pyspark instead of compiling Spark's
      ``pyspark.zip`` in every process (:mod:`tsmon.spark.daemon`): the batch host's
      workers start through that module (``spark.python.daemon.module``), and the JVM's
      ``PYTHONPATH`` ends with :data:`STARTUP`, whose ``sitecustomize`` does the same in
      the processes that ignore the daemon setting (a Python data source's);
    - no web UI, no console progress bar, Spark logging at ERROR from JVM start (a log4j2
      file in the temp dir) and the driver JVM's :data:`JVM_OPTIONS` (the parallel GC), then
      ``jvm_options`` (None: the environment's ``TSMON_JVM_OPTIONS``; the test suite and the
      demo compile with the JIT's first tier only, :data:`SHORT_RUN_JVM_OPTIONS`:
      docs/running.md), unless ``conf`` sets ``spark.driver.extraJavaOptions``.

    Settings only apply to a new session: if one is already running in this process, it is
    returned as is (Spark's ``getOrCreate``), apart from the log level. ``log``: a new JVM
    writes its own output there, not to the console (:func:`jvm_output`).

    Raises :class:`JavaError` with one clear sentence when Java is missing or older than 17.
    A local session starts in about 5-9 s on 2 cores.
    """
    check_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    from pyspark.sql import SparkSession

    settings: dict[str, str] = {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j2.configurationFile=file:{_quiet_log4j2_file()} {JVM_OPTIONS} "
            + (os.environ.get("TSMON_JVM_OPTIONS", "") if jvm_options is None else jvm_options)
        ).strip(),
        "spark.sql.shuffle.partitions": "16",
        # state: commit only the changes of a batch to the checkpoint, keep fewer versions,
        # compact RocksDB at commit, delete old versions often, and compress with zstd (14 %
        # smaller than lz4 on bench_spark, same CPU; a checkpoint keeps the codec it was
        # started with: Spark records it in the offset log) (docs/running.md)
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.minBatchesToRetain": str(MIN_BATCHES_TO_RETAIN),
        "spark.sql.streaming.stateStore.rocksdb.compactOnCommit": "true",
        "spark.sql.streaming.stateStore.maintenanceInterval": "15s",
        "spark.sql.streaming.stateStore.compression.codec": "zstd",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_RECORDS_PER_BATCH),
        # the host's workers import the installed pyspark, not Spark's zip compiled afresh
        # in each process (tsmon.spark.daemon; other processes: STARTUP)
        "spark.python.daemon.module": "tsmon.spark.daemon",
    }
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no loopback-address warning
        settings.update(
            {
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            }
        )
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with jvm_output(log), jvm_python_path(STARTUP), _signals_held() as came:
        session = builder.getOrCreate()
    if came:  # Ctrl-C or SIGTERM while Spark started: stop it, then act on it
        session.stop()
        raise KeyboardInterrupt
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def _signals_held() -> Iterator[list[int]]:
    """SIGINT and SIGTERM that come while the block runs are kept in the list yielded, not
    acted on. pyspark launches the driver JVM ignoring SIGINT, so a ``KeyboardInterrupt``
    raised in the launch ended Python and left the JVM running on its own. A handler that
    pyspark sets meanwhile (its SIGINT handler, once the JVM is up) stays. Outside the main
    thread, where no handler can be set, signals are left as they are. A second signal
    raises ``KeyboardInterrupt`` at once, as ``run_until_signalled``'s does: a launch that
    hangs can still be left."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def keep(signum: int, _: object) -> None:
        if came:  # a second one: give up waiting for the launch
            raise KeyboardInterrupt
        came.append(signum)

    held = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, keep) for s in held}
    try:
        yield came
    finally:
        for s in held:
            if signal.getsignal(s) is keep:
                signal.signal(s, previous[s])
