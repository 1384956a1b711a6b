"""A standalone Spark master and workers on loopback, started from the installed PySpark.

Why this module exists: the pip distribution of PySpark ships ``bin/spark-class`` but not the
``sbin/start-master.sh`` / ``start-worker.sh`` scripts of a full Spark download, so trying a
job on a real (if small) cluster would otherwise mean installing Spark by hand.
:class:`StandaloneCluster` starts ``org.apache.spark.deploy.master.Master`` and ``N`` ×
``org.apache.spark.deploy.worker.Worker`` as child processes, waits until the master's web UI
JSON (``/json/``) lists every worker as ``ALIVE``, and stops them on exit::

    with StandaloneCluster("/tmp/tsmon-cluster", workers=1) as cluster:
        print(cluster.url)         # spark://127.0.0.1:<port>, for [job] master = "..."

Everything binds to 127.0.0.1. Each worker gets ``<work_dir>/worker-<i>/`` (its executors'
directories, with their stdout/stderr) and each process a log file in ``work_dir``
(``master.log``, ``worker-<i>.log``). Workers run with ``PYSPARK_PYTHON`` = this interpreter,
so executors import the same tsmon (a driver made by :func:`tsmon.spark.session.spark_session`
passes its own in ``spark.pyspark.python``, which wins). POSIX only (``spark-class`` is bash).

Anything that keeps the cluster from starting (Java missing or too old, a busy port, a
process that exits, a worker that never registers) is a :class:`ClusterError` whose message
says what happened and ends with the tail of the log concerned. ``tsmon cluster`` runs one in
the foreground; see ``docs/cluster.md``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from tsmon.spark.session import JavaError, check_java

__all__ = ["HOST", "ClusterError", "StandaloneCluster", "spark_home"]

HOST = "127.0.0.1"
"""The address every process binds to (loopback only: nothing is reachable from outside)."""

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"
_LOG_TAIL = 20  # lines of a log quoted in an error
_POLL_S = 0.25


class ClusterError(OSError):
    """The cluster could not start or a process of it died; the message says which, and why.

    An ``OSError`` so that ``tsmon`` prints it as one ``error:`` line.
    """


def spark_home() -> Path:
    """The Spark distribution PySpark itself uses (``$SPARK_HOME``, else the pip package).

    Raises :class:`ClusterError` if it has no ``bin/spark-class``.
    """
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    if not (home / "bin" / "spark-class").is_file():
        raise ClusterError(
            f"no bin/spark-class in the Spark distribution {home} (from $SPARK_HOME or the "
            "pyspark package); unset SPARK_HOME or point it at a Spark 4 distribution"
        )
    return home


class StandaloneCluster:
    """A standalone master and ``workers`` workers on 127.0.0.1, as child processes.

    Parameters
    ----------
    work_dir
        Created if missing; holds the logs and one directory per worker.
    workers, cores, memory
        How many workers, and the cores and memory each offers (``memory`` as Spark writes
        it: ``512m``, ``1g``). An executor asks for 1g by default (``spark.executor.memory``).
    port, webui_port
        The master's RPC and web UI ports; 0 picks a free one.
    timeout
        Seconds to wait for the master and every worker to be up (7-15 s for one worker on
        2 cores, depending on load).

    The constructor only checks its arguments (``ValueError``); :meth:`start` (or ``with``)
    starts the processes and :meth:`stop` (or leaving the ``with``) stops them.
    """

    def __init__(
        self,
        work_dir: str | os.PathLike[str],
        workers: int = 1,
        cores: int = 1,
        memory: str = "1g",
        port: int = 0,
        webui_port: int = 0,
        timeout: float = 60.0,
    ) -> None:
        if workers < 1 or cores < 1:
            raise ValueError(f"need workers >= 1 and cores >= 1, got {workers} and {cores}")
        if not re.fullmatch(r"[1-9]\d*[mgMG]", memory):
            raise ValueError(f"memory must be like 512m or 1g, got {memory!r}")
        for name, value in (("port", port), ("webui_port", webui_port)):
            if not 0 <= value < 65536:
                raise ValueError(f"{name} must be in 0..65535 (0: a free port), got {value}")
        if port and port == webui_port:
            raise ValueError(f"port and webui_port must differ, both are {port}")
        self.work_dir = Path(work_dir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self._ports = (port, webui_port)
        self.port = 0
        self.webui_port = 0
        self._procs: list[tuple[subprocess.Popen[bytes], Path]] = []  # master first

    @property
    def url(self) -> str:
        """The master URL for a job file's ``[job] master`` (valid once started)."""
        return f"spark://{HOST}:{self.port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI (valid once started); ``/json/`` is its state as JSON."""
        return f"http://{HOST}:{self.webui_port}"

    def status(self) -> dict[str, Any]:
        """The master's state from ``<webui>/json/``: workers, active and completed apps.

        Raises :class:`ClusterError` if the master does not answer.
        """
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
                return json.loads(response.read().decode("utf-8"))
        except (OSError, ValueError) as e:  # URLError, refused, timeout; bad JSON
            raise ClusterError(f"the Spark master at {self.webui_url} did not answer: {e}") from e

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> StandaloneCluster:
        """Start the master, then the workers; return once all workers are registered.

        On any failure the processes already started are stopped before the
        :class:`ClusterError` is raised.
        """
        if self._procs:
            raise RuntimeError("this cluster is already started")
        try:
            check_java()
        except JavaError as e:
            raise ClusterError(str(e)) from None
        home = spark_home()
        self.port, self.webui_port = _free_ports(*self._ports)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        env = _environment(home)
        try:
            port, webui = str(self.port), str(self.webui_port)
            self._spawn(home, env, "master", _args(_MASTER, host=HOST, port=port, webui_port=webui))
            for i in range(self.workers):
                name = f"worker-{i}"
                (self.work_dir / name).mkdir(exist_ok=True)
                options = {"cores": str(self.cores), "memory": self.memory, "webui_port": "0"}
                args = _args(
                    _WORKER, self.url, host=HOST, work_dir=str(self.work_dir / name), **options
                )
                self._spawn(home, env, name, args)
            self._await_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def wait(self) -> None:
        """Block while every process runs; raise :class:`ClusterError` when one exits."""
        while True:
            self._check_alive()
            time.sleep(_POLL_S * 4)

    def stop(self) -> None:
        """Stop the workers (they stop their executors), then the master; idempotent.

        Each gets SIGTERM and 15 s to exit, then SIGKILL.
        """
        for proc, _ in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs = []

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------------
    def _spawn(self, home: Path, env: dict[str, str], name: str, args: list[str]) -> None:
        """Start ``spark-class args`` with its output in ``<work_dir>/<name>.log``.

        A new session: Ctrl-C in the terminal reaches only tsmon, which then stops the
        processes in order (workers first).
        """
        log_path = self.work_dir / f"{name}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                ["bash", str(home / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.work_dir,
                start_new_session=True,
            )
        self._procs.append((proc, log_path))

    def _check_alive(self) -> None:
        """Raise :class:`ClusterError` (with the log tail) if a process has exited."""
        for proc, log_path in self._procs:
            code = proc.poll()
            if code is None:
                continue
            log = _tail(log_path)
            hint = ""
            if re.search(r"BindException|Address already in use|could not bind", log):
                hint = (
                    f" (a port is in use: master {self.port}, web UI {self.webui_port}; pass "
                    "free ones, or 0 to pick one)"
                )
            raise ClusterError(
                f"the Spark {log_path.stem} process exited with status {code}{hint}; "
                f"last lines of {log_path}:\n{log}"
            )

    def _await_workers(self) -> None:
        """Poll ``/json/`` until the master is ALIVE with every worker ALIVE, or time out."""
        deadline = time.monotonic() + self.timeout
        alive = 0
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                state = self.status()
            except ClusterError:
                state = {}  # not listening yet
            alive = sum(w.get("state") == "ALIVE" for w in state.get("workers", []))
            if state.get("status") == "ALIVE" and alive >= self.workers:
                return
            time.sleep(_POLL_S)
        if not alive:  # master up or not: its log says which, the first worker's says why
            logs = [self._procs[0][1], self._procs[1][1]]
        else:
            logs = [p for _, p in self._procs[1:] if "registered with master" not in _tail(p, 0)]
        tails = "\n".join(f"last lines of {p}:\n{_tail(p)}" for p in logs)
        raise ClusterError(
            f"{alive} of {self.workers} Spark workers registered with the master at {self.url} "
            f"within {self.timeout:g} s; on a slow machine raise the timeout, else see why:\n"
            f"{tails}"
        )


def _free_ports(port: int, webui_port: int) -> tuple[int, int]:
    """The master's ports: each as given if nothing listens on it on 127.0.0.1, a free one if 0.

    Checked before the JVM starts, which would fail later and less clearly. Both sockets are
    held until both ports are known, so two free picks differ. ``SO_REUSEADDR`` as a Java
    server socket uses it: a port left in TIME_WAIT by a stopped master counts as free.
    """
    chosen = []
    with socket.socket() as first, socket.socket() as second:
        for s, wanted, what in ((first, port, "port"), (second, webui_port, "web UI port")):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((HOST, wanted))
            except OSError as e:
                raise ClusterError(
                    f"the master {what} {wanted} on {HOST} is in use ({e.strerror}); another "
                    "Spark master? pass another port, or 0 for a free one"
                ) from None
            chosen.append(int(s.getsockname()[1]))
    return chosen[0], chosen[1]


def _args(main_class: str, *positional: str, **options: str) -> list[str]:
    """``spark-class`` arguments; an option ``web_ui=v`` becomes ``--web-ui v``.

    >>> _args("Worker", "spark://h:1", cores="1", webui_port="0")
    ['Worker', 'spark://h:1', '--cores', '1', '--webui-port', '0']
    """
    flags = [[f"--{key.replace('_', '-')}", value] for key, value in options.items()]
    return [main_class, *positional, *(item for flag in flags for item in flag)]


def _environment(home: Path) -> dict[str, str]:
    """The environment of the Spark processes.

    ``spark.port.maxRetries=0``: a port taken between the check and the bind is an error, not
    a silent move to the next port (the URL printed would be wrong). The master's REST
    submission server is off: it is unauthenticated and would take the fixed port 6066. The
    master and worker JVMs (not the executors) only schedule: the client compiler and the
    serial collector start them about twice as fast on 2 busy cores. Options already in the
    environment come first; these are appended.
    """
    added = {
        "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    return {
        **os.environ,
        **{key: f"{os.environ.get(key, '')} {value}".strip() for key, value in added.items()},
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": HOST,  # the web UIs bind here too (else 0.0.0.0)
        "PYSPARK_PYTHON": sys.executable,
    }


def _tail(path: Path, lines: int = _LOG_TAIL) -> str:
    """The last ``lines`` lines of a log file (all of it for 0; "(empty)" if it has none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"
