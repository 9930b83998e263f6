"""stepscope: names the stage that stalls a deep-learning training step.

    import stepscope
    report = stepscope.analyze("./tb_logs")          # the `stepscope analyze --json` report
    report["diagnosis"]["verdict"]["headline"]
    stepscope.diff("before/", "after/")               # the `stepscope diff --json` document
    stepscope.plan.memory(model="llama-3-8b", gpus=8, zero=3)

    report = stepscope.analyze_report("./tb_logs")   # the same report, with pandas DataFrames
    report.get_temporal_breakdown()                   # HTA's method names; report.levers(), ...

    timer = stepscope.StepTimer()                     # in the training loop
    with timer("forward"): ...
    timer.step()

Bad input raises `stepscope.Error` (a ValueError) with the message the CLI prints; an argument of
the wrong type raises `stepscope.ArgumentError`, both a `stepscope.Error` and a TypeError.
The analysis runs in C++ with the GIL released. Importing stepscope imports neither torch nor
pandas (the DataFrames of `stepscope.Report` import pandas when first asked for).
"""
import json as _json
import math as _math
import numbers as _numbers
import os as _os

from . import _stepscope
from ._stepscope import Error
from ._errors import ArgumentError
from ._interrupt import call_interruptibly as _interruptibly
from . import plan
from .timer import STAGES, StepTimer
from .frames import Report, analyze_report

__all__ = ["analyze", "analyze_report", "Report", "whatif", "merge", "diff", "history", "plan", "Error", "ArgumentError", "StepTimer", "STAGES",
           "__version__"]
__version__ = "0.1.0"


def _paths(paths):
    """One path (str, bytes or os.PathLike) or a sequence of them -> list of bytes.

    The file system's own bytes go to the reader: a name that is not valid UTF-8 (which
    os.fsdecode keeps as surrogates) still names its file.
    """
    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    try:
        out = [_os.fsencode(_os.fspath(p)) for p in paths]
    except TypeError:
        raise Error(f"paths: expected a path or a list of paths, got {type(paths).__name__}") from None
    if not out:
        raise Error("no trace given")
    for p in out:
        # The C library would read the name only up to the NUL: another file.
        if b"\0" in p:
            raise Error(f"{_os.fsdecode(p)!r}: a path cannot hold a NUL byte")
    return out


def _stage_rules(stages):
    """{"forward": "REGEX"}, [("forward", "REGEX")] or ["forward=REGEX"] -> ["NAME=REGEX"]."""
    if stages is None:
        return []
    if isinstance(stages, str):
        return [_stage_rule(stages)]
    if isinstance(stages, dict):
        stages = stages.items()
    try:
        items = list(stages)
    except TypeError:
        raise Error(f"stages: expected NAME=REGEX rules, got {type(stages).__name__}") from None
    return [_stage_rule(item) for item in items]


def _stage_rule(item):
    if isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(x, str) for x in item):
        item = f"{item[0]}={item[1]}"
    if not isinstance(item, str):
        raise Error(f"--stage {item!r}: expected 'NAME=REGEX' or a (NAME, REGEX) pair of strings")
    # The C++ side reads the rule as a C string: a NUL would silently cut the pattern short.
    if "\0" in item:
        raise Error(f"--stage {item!r}: a stage rule cannot hold a NUL character")
    return item


def _whole_number(option, value, low, high):
    """An integer option checked here: a wrong type would otherwise escape as a TypeError (or an
    OverflowError past the C++ int) instead of stepscope.Error."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise Error(f"{option} {value!r}: expected a whole number")
    value = int(value)
    if not low <= value <= high:
        raise Error(f"{option} {value}: must be between {low} and {high}")
    return value


def _checked_whole(command, name, value):
    """A whole-number option of the command's schema, in the bounds of its check and refused in
    the words of the CLI (which reads the same schema)."""
    option = next(o for o in _stepscope.options(command) if o["python"] == name)
    return _whole_number("--" + option["name"], value, int(option["low"]), int(option["high"]))


def _jobs(jobs):
    return _checked_whole("analyze", "jobs", jobs)


def _step_range(step_range):
    if step_range is None:
        return ""
    if not isinstance(step_range, str):
        raise Error(f"--step-range {step_range!r}: expected the name of an annotation")
    return step_range


def _number(option, value):
    """A number option's type checked here; its range is the schema's check (stepscope diff's)."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Real) or not _math.isfinite(value):
        raise Error(f"{option} {value!r}: expected a number")
    return float(value)


def analyze(paths, *, jobs=0, stages=None, step_range=None, model=None):
    """Analyse PyTorch profiler (Kineto) traces: the same content as `stepscope analyze --json`.

    paths: a trace file (.json, .json.gz), a directory of per-rank traces, or a list of them.
    jobs: threads for reading and for analysing ranks (0: one per core; at most 256).
    stages: extra stage rules, {"forward": "REGEX", ...} or ["NAME=REGEX", ...] as --stage takes
        (names: forward, backward, optimizer, data, sync, side).
    step_range: the annotation (e.g. NVTX range) that is one step, as --step-range.
    model: memory snapshots: a model preset whose planned model states are set beside the
        observed peak, as --model.
    """
    if model is not None and not isinstance(model, str):
        raise Error(f"--model {model!r}: expected the name of a model preset")
    cancel = _stepscope.CancelToken()
    text = _interruptibly(_stepscope.analyze_json, _paths(paths), jobs=_jobs(jobs), stages=_stage_rules(stages),
                          step_range=_step_range(step_range), cancel=cancel, on_interrupt=cancel.cancel,
                          model=model or "")
    return _json.loads(text)


def whatif(paths, changes=None, *, jobs=0, steps=None, gpu_hour_cost=None):
    """Replay the trace's steps with changes applied: the same content as `stepscope whatif --json`.

    changes: a `--set` value or a list of them ("kernels:gemm=0.5x", "comm=overlap",
        "batch_wait=0", "launch=graph", "syncs=none", "workers=4", "copies=pinned",
        "copies=side-stream"), applied together; none replays the trace as recorded.
    steps, gpu_hour_cost: price the plan for a run of that many steps (GPU-hours, and USD).
    """
    if isinstance(changes, str):
        changes = [changes]
    cancel = _stepscope.CancelToken()
    text = _interruptibly(_stepscope.whatif_json, _paths(paths), changes=list(changes or []), jobs=_jobs(jobs),
                          steps=int(steps or 0), gpu_hour_cost=float(gpu_hour_cost or 0), cancel=cancel,
                          on_interrupt=cancel.cancel)
    return _json.loads(text)


def merge(summaries):
    """Put the rank summaries of separate runs side by side: the same content as
    `stepscope merge --json`, and the same as `analyze` over all their traces at once.

    summaries: a summary file written by `stepscope analyze TRACE --summary FILE`, or a list.
    """
    return _json.loads(_interruptibly(_stepscope.merge_json, _paths(summaries)))


def diff(base, test, *, jobs=0, stages=None, step_range=None, bootstrap=2000, seed=1,
         kernel_threshold=0.05, bootstrap_samples=None):
    """Compare two runs of the same job: the same content as `stepscope diff --json`.

    Did the step get faster beyond noise (bootstrap interval of the speedup), which categories
    moved, and did the bottleneck move. `base` and `test` take what `analyze` takes; the options
    are `stepscope diff`'s (`bootstrap_samples` is the older name of `bootstrap`).
    """
    if bootstrap_samples is not None:
        bootstrap = bootstrap_samples
    cancel = _stepscope.CancelToken()
    text = _interruptibly(_stepscope.diff_json, _paths(base), _paths(test), jobs=_jobs(jobs), stages=_stage_rules(stages),
                          step_range=_step_range(step_range),
                          bootstrap=_checked_whole("diff", "bootstrap", bootstrap),
                          seed=_whole_number("--seed", seed, 0, 2**64 - 1),
                          kernel_threshold=_number("--kernel-threshold", kernel_threshold), cancel=cancel,
                          on_interrupt=cancel.cancel)
    return _json.loads(text)


def history(logdir=None, *, store=None, job=None, jobs=0):
    """Each job's step time over its runs, from the run history: `stepscope history --json` as a
    pandas DataFrame, one row per analysed run, oldest first within each job.

    logdir: a log directory; its runs not yet in the history are analysed into it first (the
        history is LOGDIR/.stepscope/runs.sqlite unless `store` names another file).
    store: the history's SQLite file, read as it is when no logdir is given.
    job: only the runs of this job.
    Columns: job, run, date (UTC), ranks, steps, mean_step_ns, share_<category> for each category
    of the partition, bound, verdict, trust, baseline (the run compared with), speedup, speedup_lo,
    speedup_hi, significant, regressed. `df.attrs["newest_regressed"]` is what
    `--fail-if-regressed` tests.
    """
    import pandas as pd

    if logdir is None and store is None:
        raise Error("history: give a logdir, or store=PATH")
    text = _interruptibly(_stepscope.history_json, _os.fsencode(logdir) if logdir is not None else b"",
                          store=_os.fsencode(store) if store is not None else b"", job=job or "", jobs=_jobs(jobs))
    doc = _json.loads(text)
    rows = []
    for j in doc["jobs"]:
        for r in j["runs"]:
            b = r["baseline"] or {}
            row = {"job": j["job"], "run": r["run"], "date": pd.to_datetime(r["date"], unit="s", utc=True),
                   "ranks": r["ranks"], "steps": r["steps"], "mean_step_ns": r["mean_step_ns"]}
            row.update({f"share_{k}": v for k, v in r["shares"].items()})
            row.update({"bound": r["bound"], "verdict": r["verdict"], "trust": r["trust"],
                        "baseline": b.get("run"), "speedup": b.get("speedup", 1.0),
                        "speedup_lo": b.get("speedup_lo", 1.0), "speedup_hi": b.get("speedup_hi", 1.0),
                        "significant": b.get("significant", False), "regressed": b.get("regressed", False)})
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["newest_regressed"] = doc["newest_regressed"]
    df.attrs["store"] = doc["store"]
    return df
