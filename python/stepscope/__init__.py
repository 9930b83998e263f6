"""stepscope: names the stage that stalls a deep-learning training step.

    import stepscope
    report = stepscope.analyze("./tb_logs")          # the `stepscope analyze --json` report
    report["diagnosis"]["verdict"]["headline"]
    stepscope.diff("before/", "after/")               # the `stepscope diff --json` document
    stepscope.plan.memory(model="llama-3-8b", gpus=8, zero=3)

    timer = stepscope.StepTimer()                     # in the training loop
    with timer("forward"): ...
    timer.step()

Bad input raises `stepscope.Error` (a ValueError) with the message the CLI prints.
The analysis runs in C++ with the GIL released. Importing stepscope does not import torch.
"""
import json as _json
import os as _os

from . import _stepscope
from ._stepscope import Error
from . import plan
from .timer import STAGES, StepTimer

__all__ = ["analyze", "diff", "plan", "Error", "StepTimer", "STAGES", "__version__"]
__version__ = "0.1.0"


def _paths(paths):
    """One path (str or os.PathLike) or a sequence of them -> list of str."""
    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    try:
        out = [_os.fsdecode(_os.fspath(p)) for p in paths]
    except TypeError:
        raise Error(f"paths: expected a path or a list of paths, got {type(paths).__name__}") from None
    if not out:
        raise Error("no trace given")
    return out


def _stage_rules(stages):
    """{"forward": "REGEX"}, [("forward", "REGEX")] or ["forward=REGEX"] -> ["NAME=REGEX"]."""
    if stages is None:
        return []
    if isinstance(stages, str):
        return [stages]
    if isinstance(stages, dict):
        stages = stages.items()
    rules = []
    for item in stages:
        if isinstance(item, str):
            rules.append(item)
        else:
            name, regex = item
            rules.append(f"{name}={regex}")
    return rules


def analyze(paths, *, jobs=0, stages=None, step_range=None):
    """Analyse PyTorch profiler (Kineto) traces: the same content as `stepscope analyze --json`.

    paths: a trace file (.json, .json.gz), a directory of per-rank traces, or a list of them.
    jobs: threads for reading (0: one per core).
    stages: extra stage rules, {"forward": "REGEX", ...} or ["NAME=REGEX", ...] as --stage takes
        (names: forward, backward, optimizer, data, sync, side).
    step_range: the annotation (e.g. NVTX range) that is one step, as --step-range.
    """
    text = _stepscope.analyze_json(_paths(paths), jobs=jobs, stages=_stage_rules(stages),
                                   step_range=step_range or "")
    return _json.loads(text)


def diff(base, test, *, jobs=0, stages=None, step_range=None, bootstrap_samples=2000, seed=1,
         kernel_threshold=0.05):
    """Compare two runs of the same job: the same content as `stepscope diff --json`.

    Did the step get faster beyond noise (bootstrap interval of the speedup), which categories
    moved, and did the bottleneck move. `base` and `test` take what `analyze` takes.
    """
    text = _stepscope.diff_json(_paths(base), _paths(test), jobs=jobs, stages=_stage_rules(stages),
                                step_range=step_range or "", bootstrap_samples=bootstrap_samples, seed=seed,
                                kernel_threshold=kernel_threshold)
    return _json.loads(text)
