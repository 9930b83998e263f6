"""StepTimer: the instrumented training step as a library.

    timer = stepscope.StepTimer(print_every=100)
    for inputs, targets in timer.data(loader):          # optional: times each batch fetch
        with timer("h2d"):
            inputs, targets = inputs.to(dev), targets.to(dev)
        with timer("forward"):
            loss = loss_fn(model(inputs), targets)
        with timer("backward"):
            loss.backward()
        with timer("optimizer"):
            opt.step(); opt.zero_grad(set_to_none=True)
        timer.step()

Each stage opens a `torch.profiler.record_function` range under the name the analyzer counts as
that stage (so a trace taken under torch.profiler splits into these stages), an NVTX range when
CUDA is available (Nsight Systems), and optionally a pair of CUDA events that give the stage's
device time without any profiler. A rolling window of per-step stage times can be printed every
N steps. torch is imported on first use, never at import time; without torch the timer still
keeps host-side times.
"""
import collections
import numbers
import sys
import time

from ._errors import ArgumentError
from ._stepscope import Error

# The stages of the seed's instrumented training step, in loop order.
STAGES = ("h2d", "forward", "backward", "optimizer")

# Range names the analyzer recognises. "data" is recorded as "data_load", the name the
# analyzer counts as waiting for the input pipeline.
_RANGE_NAMES = {"data": "data_load"}

_OTHER = "(other)"

_torch_module = None
_torch_tried = False


def _torch():
    """torch, imported on first use; None when it is not installed."""
    global _torch_module, _torch_tried
    if not _torch_tried:
        _torch_tried = True
        try:
            import torch
            _torch_module = torch
        except ImportError:
            _torch_module = None
    return _torch_module


def range_name(stage):
    """The record_function / NVTX range name for a stage."""
    return _RANGE_NAMES.get(stage, stage)


def _percentile(sorted_values, q):
    """Linear-interpolated percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class _Stage:
    """One `with timer(stage):` block."""

    __slots__ = ("timer", "name", "t0", "ranges", "events", "top", "discard")

    def __init__(self, timer, name):
        self.timer = timer
        self.name = name
        self.discard = False

    def __enter__(self):
        timer = self.timer
        self.top = timer._depth == 0
        timer._depth += 1
        if timer._step_start is None:
            timer._step_start = time.perf_counter_ns()
        self.ranges = timer._open_ranges(self.name)
        self.events = timer._start_events()
        self.t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        t1 = time.perf_counter_ns()
        timer = self.timer
        if self.events is not None and not self.discard:
            self.events[1].record()
            timer._pending.append((timer._current, self.name, self.events[0], self.events[1]))
        timer._close_ranges(self.ranges)
        timer._depth -= 1
        if not self.discard:
            timer._current.add_host(self.name, t1 - self.t0, self.top)
        return False


class _StepRecord:
    """Times of one training step: host ns per stage, device ms per stage (CUDA events)."""

    __slots__ = ("index", "host", "device", "timed_top", "wall")

    def __init__(self, index):
        self.index = index
        self.host = {}
        self.device = {}
        self.timed_top = 0  # host ns inside top-level stages (nested ones are not added twice)
        self.wall = None

    def add_host(self, stage, ns, top):
        self.host[stage] = self.host.get(stage, 0) + ns
        if top:
            self.timed_top += ns


def _count(option, value, low):
    """A whole-number option, refused with stepscope.Error (a ValueError, or an ArgumentError for a
    wrong type) instead of a TypeError from deep inside the timer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"StepTimer: {option} must be a whole number (got {value!r})")
    if value < low:
        raise Error(f"StepTimer: {option} must be at least {low} (got {value})")
    return int(value)


class StepTimer:
    """Times the stages of each training step; see the module documentation.

    cuda_events: also record CUDA events around each stage, giving device-side stage times
        without the profiler (only when CUDA is available; resolved without blocking, as the
        events complete).
    nvtx: open NVTX ranges (default: when CUDA is available).
    record_function: open torch.profiler.record_function ranges (default True).
    profiler: a torch.profiler.profile; `step()` then calls its `step()` too.
    window: steps kept for the rolling table.
    print_every: print the table every N steps (0: never) to `file` (default sys.stdout).
    """

    def __init__(self, *, cuda_events=False, nvtx=None, record_function=True, profiler=None,
                 window=100, print_every=0, file=None):
        window = _count("window", window, 1)
        print_every = _count("print_every", print_every, 0)
        if file is not None and not callable(getattr(file, "write", None)):
            raise ArgumentError(f"StepTimer: file must be a text stream with write() (got {type(file).__name__})")
        self.window = window
        self.print_every = print_every
        self.file = file
        self.profiler = profiler
        self._want_cuda_events = cuda_events
        self._want_nvtx = nvtx
        self._want_record_function = record_function
        self._resolved_backends = False
        self._record_function = None
        self._nvtx = None
        self._cuda = None
        self._steps = collections.deque(maxlen=window)
        self._pending = collections.deque()
        self._stage_order = []
        self._depth = 0
        self._count = 0
        self._current = _StepRecord(0)
        self._step_start = None

    # ---- instrumentation ------------------------------------------------------------------

    def __call__(self, stage):
        """A context manager timing one stage: `with timer("forward"): ...`."""
        if not isinstance(stage, str) or not stage:
            raise ValueError(f"stage must be a non-empty string (got {stage!r})")
        if stage not in self._stage_order:
            self._stage_order.append(stage)
        return _Stage(self, stage)

    def data(self, iterable):
        """Iterates `iterable`, timing each fetch as the "data" stage (batch wait)."""
        it = iter(iterable)
        while True:
            with self("data") as fetch:
                try:
                    item = next(it)
                except StopIteration:
                    fetch.discard = True  # the end of the data is no batch wait
                    return
            yield item

    def step(self):
        """Ends the current training step (call once per iteration, after the optimizer)."""
        now = time.perf_counter_ns()
        if self._depth:
            raise RuntimeError("StepTimer.step() called inside a stage")
        rec = self._current
        rec.wall = now - self._step_start if self._step_start is not None else 0
        self._steps.append(rec)
        self._count += 1
        self._current = _StepRecord(self._count)
        self._step_start = now
        if self.profiler is not None:
            self.profiler.step()
        self._resolve_events(block=False)
        if self.print_every and self._count % self.print_every == 0:
            print(self.table(), file=self.file or sys.stdout, flush=True)

    @property
    def steps(self):
        """Steps completed so far."""
        return self._count

    def reset(self):
        """Forgets every recorded step."""
        self._resolve_events(block=True)
        self._steps.clear()
        self._pending.clear()
        self._count = 0
        self._current = _StepRecord(0)
        self._step_start = None

    # ---- results ---------------------------------------------------------------------------

    def stats(self):
        """Per-stage figures over the rolling window, in milliseconds.

        {"steps": N, "first_step": i, "last_step": j,
         "stages": {stage: {"mean_ms", "p50_ms", "p90_ms", "max_ms", "share", "device_mean_ms"}},
         "step": {"mean_ms", "p50_ms", "p90_ms", "max_ms"}}
        "(other)" is the step time outside every top-level stage; the top-level stages and
        "(other)" sum to the step. device_mean_ms is None without CUDA events.
        """
        self._resolve_events(block=True)
        steps = list(self._steps)
        out = {"steps": len(steps), "first_step": steps[0].index if steps else None,
               "last_step": steps[-1].index if steps else None, "stages": {}, "step": None}
        if not steps:
            return out
        walls = [s.wall / 1e6 for s in steps]
        mean_wall = sum(walls) / len(walls)
        out["step"] = self._summary(walls)
        for stage in self._stage_order + [_OTHER]:
            if stage == _OTHER:
                host = [max(0, s.wall - s.timed_top) / 1e6 for s in steps]
            else:
                host = [s.host.get(stage, 0) / 1e6 for s in steps]
            row = self._summary(host)
            row["share"] = row["mean_ms"] / mean_wall if mean_wall > 0 else 0.0
            device = [s.device[stage] for s in steps if stage in s.device]
            row["device_mean_ms"] = sum(device) / len(device) if device else None
            out["stages"][stage] = row
        return out

    def history(self):
        """The steps in the rolling window, oldest first, in milliseconds:
        [{"step": i, "wall_ms": w, "stages_ms": {stage: ms}, "device_ms": {stage: ms}}, ...]."""
        self._resolve_events(block=True)
        return [{"step": s.index, "wall_ms": s.wall / 1e6,
                 "stages_ms": {k: v / 1e6 for k, v in s.host.items()},
                 "device_ms": dict(s.device)} for s in self._steps]

    def table(self):
        """The rolling per-stage table as text."""
        st = self.stats()
        if not st["steps"]:
            return "StepTimer: no step completed yet"
        has_device = any(r["device_mean_ms"] is not None for r in st["stages"].values())
        head = f"{'stage':<12}{'mean ms':>10}{'p50 ms':>10}{'p90 ms':>10}{'max ms':>10}"
        head += f"{'device ms':>11}" if has_device else ""
        head += f"{'share':>8}"
        lines = [f"StepTimer: steps {st['first_step']}-{st['last_step']} "
                 f"(last {st['steps']} of {self._count})", head]

        def line(name, r, share):
            s = f"{name:<12}{r['mean_ms']:>10.2f}{r['p50_ms']:>10.2f}{r['p90_ms']:>10.2f}{r['max_ms']:>10.2f}"
            if has_device:
                d = r.get("device_mean_ms")
                s += f"{d:>11.2f}" if d is not None else f"{'-':>11}"
            return s + f"{share:>8.1%}"

        for name, r in st["stages"].items():
            lines.append(line(name, r, r["share"]))
        lines.append(line("step", st["step"], 1.0))
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    # ---- internals -------------------------------------------------------------------------

    @staticmethod
    def _summary(values):
        s = sorted(values)
        return {"mean_ms": sum(s) / len(s), "p50_ms": _percentile(s, 50),
                "p90_ms": _percentile(s, 90), "max_ms": s[-1]}

    def _resolve_backends(self):
        self._resolved_backends = True
        if not (self._want_record_function or self._want_cuda_events or self._want_nvtx is not False):
            return  # host times only: no need for torch
        torch = _torch()
        if torch is None:
            return
        if self._want_record_function:
            self._record_function = torch.profiler.record_function
        cuda = torch.cuda.is_available()
        if self._want_nvtx or (self._want_nvtx is None and cuda):
            if cuda:
                self._nvtx = torch.cuda.nvtx
        if self._want_cuda_events and cuda:
            self._cuda = torch.cuda

    def _open_ranges(self, stage):
        if not self._resolved_backends:
            self._resolve_backends()
        name = range_name(stage)
        rf = None
        if self._record_function is not None:
            rf = self._record_function(name)
            rf.__enter__()
        if self._nvtx is not None:
            self._nvtx.range_push(name)
        return rf

    def _close_ranges(self, rf):
        if self._nvtx is not None:
            self._nvtx.range_pop()
        if rf is not None:
            rf.__exit__(None, None, None)

    def _start_events(self):
        if self._cuda is None:
            return None
        start = self._cuda.Event(enable_timing=True)
        end = self._cuda.Event(enable_timing=True)
        start.record()
        return start, end

    def _resolve_events(self, block):
        """Turns completed CUDA event pairs into device times; waits only when `block`."""
        while self._pending:
            rec, stage, start, end = self._pending[0]
            if not block and not end.query():
                # Bound the backlog: a device far behind the host would grow it without end.
                if len(self._pending) <= 8 * self.window:
                    break
            end.synchronize()
            rec.device[stage] = rec.device.get(stage, 0.0) + start.elapsed_time(end)
            self._pending.popleft()
