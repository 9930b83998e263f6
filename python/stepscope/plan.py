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

Counts and sizes take text ("7B", "14GB", "8K") or numbers, durations a number of the option's
unit or a text with a unit ("0.9s"). The keyword arguments, their defaults and checks are each
calculator's table (`stepscope._stepscope.options("plan memory")`), the one the CLI's options are
made from; the values go to the CLI's own reading of its options as the texts it would be given.
A value it refuses raises stepscope.Error with the CLI's message; an argument of the wrong type or
an unknown keyword raises stepscope.ArgumentError, which is both a stepscope.Error and a TypeError:

    >>> stepscope.plan.memory(gpus="eight")
    Traceback (most recent call last):
    stepscope.Error: --gpus: expected a whole number like 4096, 8K or 1.5M, got 'eight'
    >>> stepscope.plan.memory(gpus=[8])
    Traceback (most recent call last):
    stepscope.ArgumentError: plan.memory: gpus=[8]: expected int or str
"""
import inspect as _inspect
import json as _json

from . import _stepscope
from ._errors import ArgumentError

CALCULATORS = tuple(name for name, _ in _stepscope.plan.calculators())
__all__ = list(CALCULATORS)

# The Python values each option type takes beside text. bool is an int in Python, but no count
# is given as True.
_NUMBER = (int, float)
_ACCEPTS = {"count": (int,), "number": _NUMBER, "duration": _NUMBER, "text": _NUMBER + (list, tuple)}
_EXPECTED = {"count": "int or str", "number": "float or str", "duration": "float or str",
             "text": "str, a number or a sequence", "flag": "bool", "text list": "str, a list or a dict"}


def _text(value):
    """A number or a sequence of sizes ("M,N,K") as the command line writes it."""
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return value if isinstance(value, str) else repr(value)


def _item(value, sep):
    """One text of a repeated option: "TEXT", or a (name, value) pair joined by the option's
    separator ("1:100", "fused AdamW=1.12")."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"{value[0]}{sep}{value[1]}"
    if isinstance(value, _NUMBER) and not isinstance(value, bool):
        return repr(value)
    raise TypeError


def _texts(calc, option, value):
    """The command line's texts for a value of the option; None for a flag left off."""
    kind = option["type"]
    if kind == "flag" and isinstance(value, bool):
        return ["true"] if value else None
    if kind == "text list" and not isinstance(value, bool):
        items = value.items() if isinstance(value, dict) else [value] if isinstance(value, (str,) + _NUMBER) else value
        sep = ":" if ":" in option["value_name"] else "="
        try:
            return [_item(item, sep) for item in items]
        except TypeError:
            pass
    elif kind != "flag" and not isinstance(value, bool) and isinstance(value, (str,) + _ACCEPTS[kind]):
        return [_text(value)]
    raise ArgumentError(f"plan.{calc}: {option['python']}={value!r}: expected {_EXPECTED[kind]}")


def _default(option):
    """The schema's default as a Python value: None where the option is unset."""
    text, kind = option["default"], option["type"]
    if kind == "flag":
        return False
    if not text:
        return _inspect.Parameter.empty if option["required"] else None
    return int(text) if kind == "count" else float(text) if kind in ("number", "duration") else text


def _signature(schema):
    # A calculator of one option (scaling's points) takes it positionally too.
    kind = _inspect.Parameter.POSITIONAL_OR_KEYWORD if len(schema) == 1 else _inspect.Parameter.KEYWORD_ONLY
    return _inspect.Signature([_inspect.Parameter(o["python"], kind, default=_default(o)) for o in schema],
                              return_annotation=dict)


def _given(calc, schema, args, kwargs):
    """{option name: texts} of the arguments given; an argument left at None is an option not given."""
    by_python = {o["python"]: o for o in schema}
    if len(args) > (1 if len(schema) == 1 else 0):
        raise ArgumentError(f"plan.{calc}: takes no positional arguments but {len(args)} were given")
    if args:
        kwargs = {schema[0]["python"]: args[0], **kwargs}
    given = {}
    for key, value in kwargs.items():
        if key not in by_python:
            raise ArgumentError(f"plan.{calc}: no option {key!r}; options: {', '.join(by_python) or 'none'}")
        texts = None if value is None else _texts(calc, by_python[key], value)
        if texts is not None:
            given[by_python[key]["name"]] = texts
    for o in schema:
        if o["required"] and o["name"] not in given:
            raise ArgumentError(f"plan.{calc}: missing required argument {o['python']!r}")
    return given


def _help(schema):
    lines = []
    for o in schema:
        default = f" (default {o['default']})" if o["default"] else ""
        lines.append(f"    {o['python']}: {o['help']}{default}")
    return "\n".join(lines)


def _calculator(calc, about):
    schema = _stepscope.options(f"plan {calc}")

    def calculator(*args, **kwargs):
        return _json.loads(_stepscope.plan.run(calc, _given(calc, schema, args, kwargs)))

    calculator.__name__ = calculator.__qualname__ = calc
    calculator.__module__ = __name__
    calculator.__signature__ = _signature(schema)
    calculator.__doc__ = (f"{calc}{calculator.__signature__}\n\n{about[0].upper()}{about[1:]}: "
                          f"`stepscope plan {calc} --json` as a dict.\n\n{_help(schema)}")
    return calculator


for _name, _about in _stepscope.plan.calculators():
    globals()[_name] = _calculator(_name, _about)
del _name, _about
