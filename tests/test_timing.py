import time
import types

import pytest
import torch
from torch.utils.benchmark import Timer

import lecture_utils.timing as timing
from lecture_utils.device import torch_threads
from lecture_utils.timing import Timing, compare_with_timer, time_fn, work_clock


def test_warmup_calls_are_not_timed_and_every_trial_is():
    calls = []
    result = time_fn(lambda: calls.append(1), "cpu", warmup=4, trials=7)
    assert len(calls) == 4 + 7
    assert len(result.seconds) == 7 and result.calls_per_trial == 1


def test_a_sleep_is_timed_at_its_length():
    result = time_fn(lambda: time.sleep(0.01), "cpu", warmup=1, trials=5)
    assert 0.01 <= result.min_s <= result.median_s < 0.05


def test_agrees_with_torch_utils_benchmark_timer():
    def sleep():
        time.sleep(0.004)

    ours = time_fn(sleep, "cpu", warmup=1, trials=9).median_s
    theirs = Timer("sleep()", globals={"sleep": sleep}).timeit(9).median
    assert ours == pytest.approx(theirs, rel=0.5)
    ours, theirs = compare_with_timer(sleep, "cpu", num_threads=1, rounds=3, calls=4)
    assert 0.004 <= ours == pytest.approx(theirs, rel=0.5)


def test_compare_with_timer_sets_and_restores_the_thread_count():
    previous = torch.get_num_threads()
    seen = []
    compare_with_timer(lambda: seen.append(torch.get_num_threads()), "cpu", num_threads=1, rounds=2, calls=3)
    assert set(seen) == {1} and len(seen) >= 2 * (1 + 3)
    assert torch.get_num_threads() == previous


def test_each_trial_waits_for_the_device(monkeypatch):
    """On CUDA the clock must stop only after synchronize: a slow synchronize shows up in the time."""
    events = []

    def fake_synchronize(device):
        events.append(("sync", torch.device(device).type))
        time.sleep(0.005)

    monkeypatch.setattr(timing.torch.cuda, "synchronize", fake_synchronize)
    result = time_fn(lambda: events.append("call"), "cuda", warmup=2, trials=3)
    assert events[:2] == ["call", "call"]
    assert events[2:] == [("sync", "cuda"), "call", ("sync", "cuda")] * 3
    assert result.min_s >= 0.005


def test_short_calls_are_repeated_until_a_trial_is_long_enough():
    result = time_fn(lambda: time.sleep(0.0005), "cpu", warmup=1, trials=3, min_trial_s=0.005)
    # Doubling stops at the first count whose run lasts 5 ms; half of it took less, so at most 16 calls.
    assert result.calls_per_trial in (2, 4, 8, 16)
    assert 0.0005 <= result.median_s < 0.005  # the reported time is per call
    assert time_fn(lambda: time.sleep(0.002), "cpu", warmup=0, trials=2, min_trial_s=0.001).calls_per_trial == 1


def test_timing_statistics():
    result = Timing((3.0, 1.0, 2.0, 100.0, 2.5))
    assert result.median_s == 2.5 and result.min_s == 1.0


def test_only_a_device_that_can_be_synchronized_is_timed():
    with pytest.raises(ValueError, match="device type 'meta' is not supported"):
        time_fn(lambda: None, "meta")


def test_a_timing_needs_trials():
    with pytest.raises(ValueError, match="at least one trial"):
        Timing(())


def test_compare_with_timer_keeps_each_timers_best_round(monkeypatch):
    blocks = iter([0.5, 0.2, 0.4])  # seconds for time_fn's block of `calls` calls, round by round
    timer_medians = iter([0.03, 0.01, 0.02])  # Timer's seconds per call, round by round

    class FakeTimer:
        def __init__(self, *args, **kwargs):
            pass

        def timeit(self, number):
            return types.SimpleNamespace(median=next(timer_medians))

    monkeypatch.setattr(timing, "time_fn", lambda fn, device, **kwargs: Timing((next(blocks),)))
    monkeypatch.setattr(timing, "Timer", FakeTimer)
    ours, theirs = compare_with_timer(lambda: None, "cpu", num_threads=1, rounds=3, calls=10)
    assert ours == pytest.approx(0.2 / 10) and theirs == pytest.approx(0.01)


def test_the_thread_clock_counts_work_and_not_waiting():
    """A sleep takes wall time but no CPU time; a busy loop takes both (time.thread_time's own count)."""

    def spin(seconds=0.005):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    with torch_threads(1):
        assert work_clock("cpu") == ("thread" if torch.backends.mkl.is_available() else "wall")
        assert time_fn(lambda: time.sleep(0.01), "cpu", warmup=0, trials=3, clock="thread").min_s < 0.002
        assert time_fn(lambda: time.sleep(0.01), "cpu", warmup=0, trials=3).min_s >= 0.01
        assert 0.005 <= time_fn(spin, "cpu", warmup=0, trials=3, clock="thread").min_s < 0.05


def test_the_thread_clock_needs_one_cpu_thread():
    with torch_threads(2):
        assert work_clock("cpu") == "wall"
        with pytest.raises(ValueError, match="needs a CPU with torch on one thread"):
            time_fn(lambda: None, "cpu", clock="thread")
    with pytest.raises(ValueError, match="needs a CPU with torch on one thread"):
        time_fn(lambda: None, "cuda", clock="thread")
    assert work_clock("cuda") == "wall"
