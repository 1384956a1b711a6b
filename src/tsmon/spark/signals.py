"""Stopping a Spark job on Ctrl-C or SIGTERM without interrupting a call into the JVM.

A ``KeyboardInterrupt`` raised in the main thread while it waits in Py4J (pyspark's own SIGINT
handler cancels the jobs and raises one) makes Py4J log its broken connection with tracebacks
and the stream thread die with a Java one. :func:`run_until_signalled` runs the waiting in a
thread instead; a signal only sets a flag, and the main thread then calls ``stop``, which ends
the query the thread waits in.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

__all__ = ["INTERRUPTED", "run_until_signalled"]

INTERRUPTED = 130
"""The status of a command ended by Ctrl-C (128 + SIGINT, as a shell reports it)."""


def run_until_signalled(work: Callable[[threading.Event], None], stop: Callable[[], None]) -> bool:
    """Run ``work(signalled)`` in a thread until it returns or SIGINT/SIGTERM comes, then call
    ``stop`` (in the main thread, the thread still running or not); True if a signal came.
    ``signalled`` is set before ``stop`` is called: a ``work`` that loops over JVM calls
    checks it between them (a stopped query's ``processAllAvailable`` returns at once). An
    exception of ``work`` is raised here, unless a signal came first (stopping a query makes
    its waiter fail). A second signal while ``stop`` waits raises ``KeyboardInterrupt``. The
    previous handlers are restored. Outside the main thread, where no
    handler can be set, ``work`` then ``stop`` just run."""
    signalled, wake = threading.Event(), threading.Event()
    if threading.current_thread() is not threading.main_thread():
        try:
            work(signalled)
        finally:
            stop()
        return False
    failure: list[BaseException] = []

    def on_signal(*_: object) -> None:
        if signalled.is_set():  # a second one while stop() waits: give up waiting
            raise KeyboardInterrupt
        signalled.set()
        wake.set()

    def wait() -> None:
        try:
            work(signalled)
        except Exception as e:
            failure.append(e)
        finally:
            wake.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        waiter = threading.Thread(target=wait, name="tsmon-wait", daemon=True)
        waiter.start()
        while not wake.wait(0.2):
            pass
        stop()  # ends the query the waiter may still be in
        waiter.join()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if failure and not signalled.is_set():
        raise failure[0]
    return signalled.is_set()
