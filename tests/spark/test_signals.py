"""Ctrl-C while a Spark job waits: the first signal stops it between JVM calls, a second one
gives up waiting for the stop (real signals sent to this process)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from tsmon.spark.signals import run_until_signalled


def _send_sigint(after: float) -> threading.Timer:
    timer = threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_the_first_signal_stops_the_work_and_is_reported():
    stopped, before = threading.Event(), signal.getsignal(signal.SIGINT)
    timer = _send_sigint(0.3)
    came = run_until_signalled(lambda signalled: signalled.wait(30), stopped.set)
    timer.join()
    assert came and stopped.is_set()
    assert signal.getsignal(signal.SIGINT) is before  # restored (pyspark's, with a session)


def test_a_second_signal_gives_up_a_stop_that_hangs():
    release, before = threading.Event(), signal.getsignal(signal.SIGINT)
    timers = [_send_sigint(0.3), _send_sigint(1.0)]
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_until_signalled(lambda signalled: release.wait(30), lambda: release.wait(30))
    release.set()
    for timer in timers:
        timer.join()
    assert time.monotonic() - start < 10
    assert signal.getsignal(signal.SIGINT) is before
