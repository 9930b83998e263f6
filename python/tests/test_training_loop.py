"""A real tiny training loop, instrumented with StepTimer under torch.profiler, analysed through
stepscope.analyze: the input pipeline is slow, so the verdict must say input-bound; with two
loader workers the batch wait must drop, and stepscope.diff must say so."""
import time

import pytest

import stepscope

SLEEP_PER_SAMPLE_S = 0.003   # stands in for decoding and augmenting one sample
BATCH = 8                    # -> ~24 ms of loading per batch on one process
FEATURES = 64
WAIT, WARMUP, ACTIVE = 1, 2, 12


class SlowDataset:
    """Synthetic samples whose __getitem__ sleeps, as a slow transform would."""

    def __init__(self, torch, n):
        self.torch, self.n = torch, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(SLEEP_PER_SAMPLE_S)
        g = self.torch.Generator().manual_seed(i)
        return self.torch.randn(FEATURES, generator=g), i % 4


def train(torch, out_path, num_workers):
    """Trains a tiny MLP under the profiler; returns the StepTimer and the trace path."""
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule
    from torch.utils.data import DataLoader

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = WAIT + WARMUP + ACTIVE
    loader = DataLoader(SlowDataset(torch, BATCH * (steps + 2)), batch_size=BATCH,
                        num_workers=num_workers)
    sched = schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out_path))) as prof:
        timer = stepscope.StepTimer(profiler=prof)
        for i, (x, y) in enumerate(loader):
            with timer("h2d"):
                x, y = x.to("cpu"), y.to("cpu")
            with timer("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with timer("backward"):
                loss.backward()
            with timer("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            timer.step()
            if i + 1 == steps:
                break
    assert out_path.exists(), "the profiler wrote no trace"
    return timer


@pytest.fixture(scope="module")
def runs(torch, tmp_path_factory):
    d = tmp_path_factory.mktemp("loop")
    torch.set_num_threads(1)
    out = {}
    for workers in (0, 2):
        path = d / f"workers{workers}.pt.trace.json"
        timer = train(torch, path, workers)
        out[workers] = (path, timer, stepscope.analyze(str(path)))
    return out


def partition(report):
    assert len(report["ranks"]) == 1
    return report["ranks"][0]["partition"]


def verdict(report):
    return (report.get("diagnosis") or report)["verdict"]


def test_slow_loader_is_input_bound(runs):
    _, _, report = runs[0]
    v = verdict(report)
    assert v["bound"] == "input-bound", v["headline"]
    assert v["share"] > 0.5


def test_stage_times_sum_to_each_step(runs):
    _, _, report = runs[0]
    p = partition(report)
    assert p["step_source"] == "ProfilerStep"
    assert len(p["steps"]) == ACTIVE
    for s in p["steps"]:
        total = sum(s["categories_ns"].values())
        assert total == s["duration_ns"], s["name"]
        # The loop waits on the loader every step; the instrumented stages are found as such.
        assert s["categories_ns"]["batch_wait"] > 0.5 * s["duration_ns"], s["name"]
    steady = [s for s in p["steps"] if not s.get("warmup")]
    assert steady
    for stage in ("compute_forward", "compute_backward", "compute_optimizer"):
        assert sum(s["categories_ns"][stage] for s in steady) > 0, stage


def test_timer_agrees_with_the_trace(runs):
    """The StepTimer's own step times measure the same steps the analyzer found in the trace."""
    _, timer, report = runs[0]
    p = partition(report)
    trace_mean_ms = sum(s["duration_ns"] for s in p["steps"]) / len(p["steps"]) / 1e6
    st = timer.stats()
    # The timer's last ACTIVE steps are the ones the profiler recorded.
    walls = [s["wall_ms"] for s in timer.history()[-ACTIVE:]]
    timer_mean_ms = sum(walls) / len(walls)
    assert timer_mean_ms == pytest.approx(trace_mean_ms, rel=0.15)
    # Loading is outside every timed stage: the timer's "(other)" holds it.
    other = st["stages"]["(other)"]["mean_ms"]
    expected_load_ms = SLEEP_PER_SAMPLE_S * BATCH * 1e3
    assert other > 0.8 * expected_load_ms
    shares = sum(r["share"] for name, r in st["stages"].items())
    assert shares == pytest.approx(1.0, abs=1e-9)


def test_two_workers_cut_the_batch_wait(runs):
    wait = {}
    for workers in (0, 2):
        p = partition(runs[workers][2])
        wait[workers] = p["steady_mean_categories_ns"]["batch_wait"]
    assert wait[2] < 0.75 * wait[0], wait


def test_diff_says_the_batch_wait_dropped(runs):
    d = stepscope.diff(str(runs[0][0]), str(runs[2][0]))
    step = d["step"]
    assert step["speedup"] > 1.0
    assert step["significant"] is True
    cats = {c["category"]: c for c in d["categories"]}
    assert cats["batch_wait"]["delta_ns"] < 0
    # The batch wait is the category that moved most.
    assert d["categories"][0]["category"] == "batch_wait"
