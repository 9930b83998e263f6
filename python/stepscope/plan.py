"""Planning calculators: the questions asked before a job runs.

Each function takes the options of `stepscope plan <calculator>` as keyword arguments (dashes
become underscores; an argument left at None is an option not given) and returns the document
`stepscope plan <calculator> --json` prints, as a dict:

    stepscope.plan.memory(model="llama-3-8b", gpus=8, zero=3, batch=4, seq=4096)
    stepscope.plan.roofline(gemm=(4096, 4096, 4096), gpu="h100-sxm")
    stepscope.plan.comm(params="7B", gpus=8, bandwidth=50)
    stepscope.plan.scaling({1: 100, 8: 600})
    stepscope.plan.pipeline(stages=4, micro_batches=16)
    stepscope.plan.stack(step_ms=850, speedups={"loader workers": 1.4, "BF16 AMP": 1.7})
    stepscope.plan.kv(model="llama-3-70b", seq=[8192, "32K"])
    stepscope.plan.serve(model="llama-2-7b", users=1000, avg_seq=1000, weights="int4")
    stepscope.plan.specdec(draft_ms=2, target_ms=20, accept=0.8)
    stepscope.plan.gpus(); stepscope.plan.models()

Counts and sizes take text ("7B", "14GB") or numbers. Bad input raises stepscope.Error with the
CLI's message.
"""
import functools as _functools
import json as _json

from . import _stepscope

CALCULATORS = ("memory", "roofline", "comm", "scaling", "pipeline", "kv", "serve", "specdec",
               "stack", "gpus", "models")
__all__ = list(CALCULATORS)


def _as_dict(name):
    native = getattr(_stepscope.plan, name)

    @_functools.wraps(native)
    def calculator(*args, **kwargs):
        return _json.loads(native(*args, **kwargs))

    calculator.__module__ = __name__
    if calculator.__doc__:
        calculator.__doc__ = calculator.__doc__.replace(") -> str", ") -> dict", 1)
    return calculator


for _name in CALCULATORS:
    globals()[_name] = _as_dict(_name)
del _name
