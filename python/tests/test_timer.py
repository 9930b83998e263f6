"""StepTimer on its own: per-step arithmetic, the rolling table, the ranges it opens."""
import io
import json
import time

import pytest

import stepscope
from stepscope.timer import range_name


def busy(ms):
    time.sleep(ms / 1e3)


def run_steps(timer, n, stages_ms, between_ms=0.0):
    for _ in range(n):
        busy(between_ms)
        for stage, ms in stages_ms.items():
            with timer(stage):
                busy(ms)
        timer.step()


def test_stages_and_other_sum_to_the_step():
    timer = stepscope.StepTimer(record_function=False, nvtx=False)
    run_steps(timer, 6, {"h2d": 1, "forward": 4, "backward": 6, "optimizer": 2}, between_ms=5)
    st = timer.stats()
    assert st["steps"] == 6 and timer.steps == 6
    stages = st["stages"]
    assert list(stages) == ["h2d", "forward", "backward", "optimizer", "(other)"]
    total = sum(r["mean_ms"] for r in stages.values())
    # The first step opens at its first stage; later ones at the previous step() call.
    assert total == pytest.approx(st["step"]["mean_ms"], rel=1e-9)
    assert stages["backward"]["mean_ms"] >= 6 and stages["forward"]["mean_ms"] >= 4
    assert stages["h2d"]["mean_ms"] >= 1 and stages["optimizer"]["mean_ms"] >= 2
    # (other) holds the untimed 5 ms of every step but the first.
    assert stages["(other)"]["p50_ms"] >= 5
    hist = timer.history()
    assert [h["step"] for h in hist] == list(range(6))
    for h in hist:
        assert h["stages_ms"]["forward"] >= 4 and h["device_ms"] == {}
        assert sum(h["stages_ms"].values()) <= h["wall_ms"]
    assert sum(r["share"] for r in stages.values()) == pytest.approx(1.0)
    for r in stages.values():
        assert r["device_mean_ms"] is None
        assert r["p50_ms"] <= r["p90_ms"] <= r["max_ms"]


def test_nested_stages_are_not_counted_twice():
    timer = stepscope.StepTimer(record_function=False, nvtx=False)
    for _ in range(3):
        with timer("forward"):
            busy(2)
            with timer("attention"):
                busy(3)
        timer.step()
    st = timer.stats()["stages"]
    assert st["attention"]["mean_ms"] >= 3
    assert st["forward"]["mean_ms"] >= 5
    top = st["forward"]["mean_ms"] + st["(other)"]["mean_ms"]
    assert top == pytest.approx(timer.stats()["step"]["mean_ms"], rel=1e-9)


def test_rolling_window_and_printing():
    out = io.StringIO()
    timer = stepscope.StepTimer(record_function=False, nvtx=False, window=4, print_every=3, file=out)
    run_steps(timer, 7, {"forward": 1})
    printed = out.getvalue()
    assert printed.count("StepTimer: steps") == 2  # after steps 3 and 6
    st = timer.stats()
    assert st["steps"] == 4 and st["first_step"] == 3 and st["last_step"] == 6
    assert "forward" in timer.table() and "(other)" in str(timer)
    timer.reset()
    assert timer.stats()["steps"] == 0 and "no step" in timer.table()


def test_data_wrapper_times_each_fetch():
    def slow_batches(n, ms):
        for i in range(n):
            busy(ms)
            yield i

    timer = stepscope.StepTimer(record_function=False, nvtx=False)
    seen = []
    for b in timer.data(slow_batches(4, 5)):
        with timer("forward"):
            busy(1)
        seen.append(b)
        timer.step()
    assert seen == [0, 1, 2, 3]
    st = timer.stats()
    assert st["steps"] == 4
    assert st["stages"]["data"]["mean_ms"] >= 5
    assert st["stages"]["data"]["share"] > st["stages"]["forward"]["share"]


def test_misuse_is_reported():
    timer = stepscope.StepTimer(record_function=False, nvtx=False)
    with pytest.raises(ValueError):
        timer("")
    with pytest.raises(RuntimeError):
        with timer("forward"):
            timer.step()
    with pytest.raises(ValueError):
        stepscope.StepTimer(window=0)


def test_ranges_carry_the_names_the_analyzer_counts(torch, tmp_path):
    """Under the profiler, every stage is a range of its canonical name, and the analyzer splits
    the steps into those stages (and "data" into batch wait)."""
    from torch.profiler import ProfilerActivity, profile

    assert [range_name(s) for s in stepscope.STAGES] == ["h2d", "forward", "backward", "optimizer"]
    assert range_name("data") == "data_load"
    model = torch.nn.Linear(32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64, 32)
    path = tmp_path / "timer.json"
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        timer = stepscope.StepTimer(profiler=prof)
        for _ in range(6):
            with timer("data"):
                busy(8)
            with timer("forward"):
                loss = model(x).square().mean()
            with timer("backward"):
                loss.backward()
            with timer("optimizer"):
                opt.step()
                opt.zero_grad()
            timer.step()
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert {"data_load", "forward", "backward", "optimizer"} <= {e.get("name") for e in events}
    report = stepscope.analyze(str(path))
    cats = report["ranks"][0]["partition"]["steady_mean_categories_ns"]
    assert cats["batch_wait"] > 0.5 * sum(cats.values()), cats
    assert cats["compute_forward"] > 0 and cats["compute_backward"] > 0, cats


class FakeCuda:
    """Stands in for torch.cuda: events complete when the test says the device got there."""

    def __init__(self):
        self.clock_ms = 0.0
        self.done_upto = 0.0
        self.synced = 0

    def Event(self, enable_timing):
        assert enable_timing
        cuda = self

        class Event:
            def record(self):
                self.at = cuda.clock_ms

            def query(self):
                return self.at <= cuda.done_upto

            def synchronize(self):
                cuda.synced += 1
                cuda.done_upto = max(cuda.done_upto, self.at)

            def elapsed_time(self, end):
                return end.at - self.at

        return Event()


def test_cuda_events_give_device_times_without_waiting():
    cuda = FakeCuda()
    timer = stepscope.StepTimer(record_function=False, nvtx=False, cuda_events=True)
    timer._resolved_backends = True
    timer._cuda = cuda
    for _ in range(3):
        for stage, device_ms in (("forward", 2.0), ("backward", 5.0)):
            with timer(stage):
                cuda.clock_ms += device_ms  # the device work this stage enqueued
        timer.step()
    # The device has finished nothing yet: step() must not have waited for it.
    assert cuda.synced == 0 and len(timer._pending) == 6
    cuda.done_upto = cuda.clock_ms
    st = timer.stats()
    assert st["stages"]["forward"]["device_mean_ms"] == pytest.approx(2.0)
    assert st["stages"]["backward"]["device_mean_ms"] == pytest.approx(5.0)
    assert st["stages"]["(other)"]["device_mean_ms"] is None
    assert "device ms" in timer.table()
    assert not timer._pending
