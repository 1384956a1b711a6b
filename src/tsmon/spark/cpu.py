"""CPU time of tsmon's Python work in Spark's Python workers, by part, back to the driver.

Spark's stage metrics give the JVM's CPU per task (``executorCpuTime``) but not that of the
Python worker processes, whose time only shows in the tasks' wall time (with any wait for a
busy core). So the file reader and the bucket host time their own parts with
``time.process_time`` (the worker's CPU, whatever the machine's load) and add them to a Spark
accumulator (:class:`CpuTimes`); the driver reports each batch's share in ``progress.jsonl``
(``pythonCpuMs``). A task that is retried adds its time again: these are costs, not counts.

:func:`settle_worker` cuts a cost of the workers that no part sees: pyspark's daemon runs a
full ``gc.collect()`` after every task of a reused worker.
"""

from __future__ import annotations

import gc
from time import process_time
from typing import TYPE_CHECKING, Any

from pyspark.accumulators import AccumulatorParam

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = ["Clock", "CpuTimes", "settle_worker"]

_settled = False


class _Sums(AccumulatorParam):
    """Accumulates ``{part: seconds}`` dicts by summing each part."""

    def zero(self, value: dict[str, float]) -> dict[str, float]:
        return {}

    def addInPlace(self, a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        for part, seconds in b.items():
            a[part] = a.get(part, 0.0) + seconds
        return a


class CpuTimes:
    """The driver's side: an accumulator the workers add their parts to (:attr:`acc`, to give
    to :class:`Clock`), read as the milliseconds spent since the previous read."""

    def __init__(self, spark: SparkSession) -> None:
        self.acc = spark.sparkContext.accumulator({}, _Sums())
        self._seen: dict[str, float] = {}

    def since_last(self) -> dict[str, float]:
        """Milliseconds per part added since the last call (all of them at the first)."""
        now = dict(self.acc.value)
        out = {k: round(1000 * (v - self._seen.get(k, 0.0)), 3) for k, v in sorted(now.items())}
        self._seen = now
        return out


class Clock:
    """A worker's side: :meth:`lap` charges the CPU time since the previous lap to a part;
    :meth:`send` adds the laps to the accumulator (if any) and starts over."""

    def __init__(self, acc: Any) -> None:
        self.acc = acc
        self.spent: dict[str, float] = {}
        self._t = process_time()

    def lap(self, part: str) -> None:
        """Charge the CPU time since the previous lap (or the start) to ``part``."""
        now = process_time()
        self.spent[part] = self.spent.get(part, 0.0) + now - self._t
        self._t = now

    def send(self) -> None:
        """Add the laps to the accumulator and start over."""
        if self.acc is not None and self.spent:
            self.acc.add(self.spent)
        self.spent = {}
        self._t = process_time()


def settle_worker() -> None:
    """Once per Python worker process (a no-op outside a Spark task): collect the garbage,
    then move every object alive, the ~100 k objects of the modules pyspark, pandas, pyarrow
    and tsmon imported, to the garbage collector's permanent generation (``gc.freeze``).

    pyspark's daemon calls ``gc.collect()`` after every task of a reused worker, a full
    collection that walked all of them: ~60 ms per task, 4 Python tasks per batch in
    ``bench_spark.py`` (the file reader's and the host's), ~0.8 µs per point that no part
    measured. Frozen objects are still freed when their last reference goes; only cycles
    among the objects alive at this call (the first task's, besides the modules) are never
    collected, once per process."""
    global _settled
    from pyspark import TaskContext

    if _settled or TaskContext.get() is None:
        return
    gc.collect()
    gc.freeze()
    _settled = True
