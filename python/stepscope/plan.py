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
CLI's message; an argument of the wrong type or an unknown keyword raises stepscope.ArgumentError,
which is both a stepscope.Error and a TypeError:

    >>> stepscope.plan.memory(gpus="eight")
    Traceback (most recent call last):
    stepscope.ArgumentError: plan.memory: gpus='eight': expected int
"""
import functools as _functools
import json as _json
import re as _re

from . import _stepscope
from ._errors import ArgumentError

# The native signature's types (pybind11 writes them in the docstring's first line) and the
# Python values each accepts. bool is an int in Python, but no count is given as True.
_ACCEPTS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
}


def _parameters(native):
    """name -> (type text, optional) from the first docstring line, e.g.
    "memory(model: Optional[str] = None, gpus: int = 1) -> str" gives
    {"model": ("str", True), "gpus": ("int", False)}."""
    first = (native.__doc__ or "").split("\n", 1)[0]
    inside = first[first.find("(") + 1:first.rfind(")")]
    out = {}
    for m in _re.finditer(r"(\w+): ((?:Optional\[)?)([\w.]+)", inside):
        out[m.group(1)] = (m.group(3), bool(m.group(2)))
    return out


def _short(error):
    """pybind11's conversion message without its advice on debug builds."""
    return str(error).split(" (#define", 1)[0]


def _check_arguments(name, params, args, kwargs):
    names = list(params)
    if len(args) > len(names):
        raise ArgumentError(f"plan.{name}: takes at most {len(names)} positional arguments, got {len(args)}")
    given = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in params:
            raise ArgumentError(f"plan.{name}: no option {key!r}; options: {', '.join(names) or 'none'}")
        given[key] = value
    for key, value in given.items():
        type_text, optional = params[key]
        accepts = _ACCEPTS.get(type_text)
        if value is None and optional or accepts is None or accepts(value):
            continue
        raise ArgumentError(f"plan.{name}: {key}={value!r}: expected {type_text}")

CALCULATORS = ("memory", "roofline", "comm", "scaling", "pipeline", "kv", "serve", "specdec",
               "stack", "gpus", "models")
__all__ = list(CALCULATORS)


# Options the CLI reads as durations, with the unit of a bare number in seconds: a text value
# ("1.2s", "90min") is read the same way here.
_DURATIONS = {"step_ms": 1e-3, "backward_ms": 1e-3, "compute_ms": 1e-3, "micro_batch_ms": 1e-3,
              "draft_ms": 1e-3, "target_ms": 1e-3, "latency_us": 1e-6, "hours": 3600.0}


def _cli_spellings(params, kwargs):
    """Text given where the native function takes a number, read as the CLI reads its option:
    an integer as a size ("8K" = 8192), a duration with its unit ("1.2s"). Text that is neither
    is left for the type check to refuse."""
    out = dict(kwargs)
    for key, value in kwargs.items():
        if not isinstance(value, str) or key not in params:
            continue
        option = "--" + key.replace("_", "-")
        try:
            if key in _DURATIONS:
                out[key] = _stepscope.plan._duration_s(value, _DURATIONS[key], option) / _DURATIONS[key]
            elif params[key][0] == "int":
                out[key] = _stepscope.plan._size(value, option)
        except Exception:  # noqa: BLE001 - not a size or duration: the type check names it
            pass
    return out


def _as_dict(name):
    native = getattr(_stepscope.plan, name)
    params = _parameters(native)

    @_functools.wraps(native)
    def calculator(*args, **kwargs):
        kwargs = _cli_spellings(params, kwargs)
        _check_arguments(name, params, args, kwargs)
        try:
            return _json.loads(native(*args, **kwargs))
        except TypeError as e:
            # The top-level types passed the check above: what failed is a value inside a
            # sequence or mapping that the native code could not convert.
            raise ArgumentError(f"plan.{name}: {_short(e)}") from None

    calculator.__module__ = __name__
    if calculator.__doc__:
        calculator.__doc__ = calculator.__doc__.replace(") -> str", ") -> dict", 1)
    return calculator


for _name in CALCULATORS:
    globals()[_name] = _as_dict(_name)
del _name
