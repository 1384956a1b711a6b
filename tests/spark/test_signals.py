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


def test_while_spark_starts_a_signal_is_held_and_a_second_one_gives_up():
    from tsmon.spark.session import _signals_held

    before = signal.getsignal(signal.SIGINT)
    with _signals_held() as came:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs between bytecodes of this thread
    assert came == [signal.SIGINT] and signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt), _signals_held() as came:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is before
