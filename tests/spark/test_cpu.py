"""The CPU clock of the Python workers (tsmon.spark.cpu), without Spark."""

from __future__ import annotations

from time import process_time

from tsmon.spark.cpu import Clock, _Sums


class Sink:
    """What a worker's accumulator does with an ``add``: sums with the accumulator's param."""

    def __init__(self) -> None:
        self.value: dict[str, float] = {}

    def add(self, term: dict[str, float]) -> None:
        self.value = _Sums().addInPlace(self.value, term)


def _spin(seconds: float) -> None:
    end = process_time() + seconds
    while process_time() < end:
        pass


def test_laps_charge_the_cpu_between_them_to_their_part_and_send_starts_over() -> None:
    sink = Sink()
    clock = Clock(sink)
    start = process_time()
    _spin(0.02)
    clock.lap("a")
    _spin(0.01)
    clock.lap("b")
    _spin(0.01)
    clock.lap("a")
    elapsed = process_time() - start
    assert clock.spent["a"] >= 0.03 and clock.spent["b"] >= 0.01
    assert abs(sum(clock.spent.values()) - elapsed) < 0.005  # every lap counted once
    clock.send()
    assert clock.spent == {} and set(sink.value) == {"a", "b"}
    clock.lap("b")
    clock.send()
    assert sink.value["b"] >= 0.01  # summed over sends
    Clock(None).send()  # no accumulator: nothing to add to


def test_sums_add_parts_by_name() -> None:
    sums = _Sums()
    assert sums.zero({"x": 1.0}) == {}
    assert sums.addInPlace({"a": 1.0, "b": 2.0}, {"b": 0.5, "c": 3.0}) == {
        "a": 1.0,
        "b": 2.5,
        "c": 3.0,
    }
