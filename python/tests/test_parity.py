"""The CLI and the Python module offer the same options, under the same names, with the same
defaults and the same refusal of a bad value: each command's option schema
(`stepscope._stepscope.options(command)`, the one table both are made from) is set against the
CLI's `--help`, the Python signature, and what each does with a value outside the option's check.
Options that only shape the terminal or files (report files, verbosity, table width) are the CLI's
own."""
import inspect
import json
import re
import subprocess

import pytest

import stepscope
from conftest import cli_error_message, run_cli
from stepscope import plan as stepscope_plan

# What only the command line has: output files, terminal presentation, exit-code policy and the
# alternative spellings of the positional runs.
CLI_ONLY = {"help", "json", "html", "annotate", "summary", "csv", "top", "ranks", "wide", "verbose", "quiet", "config",
            "fail_if_slower", "bases", "tests"}
# Python names that are older spellings of a CLI name.
PY_ALIASES = {"bootstrap_samples"}


def cli_options(cli, *command):
    """{python_name: default text or None} of a command's options, from its --help."""
    out = subprocess.run([cli, *command, "--help"], capture_output=True, text=True, check=True).stdout
    options = {}
    for line in out.splitlines():
        m = re.match(r"\s+(?:-\w,)?--([\w-]+)(?:\s+(\S+))?( \.\.\.)?", line)
        if not m:
            continue
        name = m.group(1).replace("-", "_")
        # A repeatable option is a list in Python: --stage NAME=REGEX ... is `stages`.
        if m.group(3):
            name += "s"
        # The default is printed at the end of the option column: "--seed UINT=1".
        column = re.split(r"\s{2,}", line.strip())[0]
        default = re.search(r"=(-?[\d.]+)$", column)
        options[name] = default.group(1) if default else None
    return options


def matched(cli_names, py_names):
    """CLI names as Python spells them: a repeatable option is plural unless the Python
    parameter keeps the singular (plan kv's `seq` takes one length or a list)."""
    return {n[:-1] if n not in py_names and n.endswith("s") and n[:-1] in py_names else n for n in cli_names}


def py_options(func):
    """The options among a function's parameters: its keyword-only ones and those with a default."""
    sig = inspect.signature(func)
    return {n: p.default for n, p in sig.parameters.items()
            if (p.kind == p.KEYWORD_ONLY or p.default is not p.empty) and n not in PY_ALIASES}


ANALYSIS_COMMANDS = [("analyze", stepscope.analyze), ("diff", stepscope.diff), ("whatif", stepscope.whatif),
                     ("history", stepscope.history)]


def schema_default(value):
    """A Python default as the schema writes it: no value is "", a number its digits."""
    return "" if value is None else str(value)


@pytest.mark.parametrize("command,func", ANALYSIS_COMMANDS)
def test_analysis_options_are_the_schema_on_both_sides(cli, command, func):
    """Every option of a command's schema is the CLI option of that name and short flag, and the
    Python keyword argument of its Python name with the schema's default; the CLI and Python
    offer no analysis option the schema does not hold."""
    schema = stepscope._stepscope.options(command)
    assert schema
    usage = subprocess.run([cli, command, "--help"], capture_output=True, text=True, check=True).stdout
    cli_opts = cli_options(cli, command)
    py = py_options(func)
    for o in schema:
        line = re.search(rf"^\s+(?:(-\w),)?--{o['name']}\b(.*)$", usage, re.M)
        assert line, o["name"]
        assert (line.group(1) or "") == o["flag"], o["name"]
        if o["value_name"]:
            assert line.group(2).startswith(f" {o['value_name']}"), o["name"]
        if o["default"]:
            assert re.search(rf"={re.escape(o['default'])}(\s|$)", line.group(2)), o["name"]
        assert o["python"] in py, o["python"]
        assert schema_default(py[o["python"]]) == o["default"] or (o["default"] == "" and py[o["python"]] in (0, "")), \
            o["python"]
    names = {o["python"] for o in schema}
    if command == "analyze":
        assert set(py) == names
        assert {k for k in cli_opts if k not in CLI_ONLY} == names


@pytest.mark.parametrize("command,func", [("diff", stepscope.diff), ("merge", stepscope.merge)])
def test_other_options_match_the_python_functions(cli, command, func):
    """The options of a command outside its schema (none left for diff), set side by side."""
    names = {o["python"] for o in stepscope._stepscope.options(command)}
    cli_opts = {k: v for k, v in cli_options(cli, command).items() if k not in CLI_ONLY and k not in names}
    py = {k: v for k, v in py_options(func).items() if k not in names}
    cli_opts = {n: cli_opts[k] for k in cli_opts for n in matched({k}, set(py))}
    assert set(cli_opts) == set(py), (sorted(set(cli_opts) - set(py)), sorted(set(py) - set(cli_opts)))
    for name, default in cli_opts.items():
        if default is not None:
            assert str(py[name]) == default, name


def test_an_option_outside_the_schema_is_refused(tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        stepscope._stepscope.analyze_json([str(tmp_path)], colour=1)


def test_a_check_of_the_schema_is_the_same_refusal_in_python():
    with pytest.raises(stepscope.Error, match=r"^--jobs -1: must be between 0 and 256$"):
        stepscope._stepscope.analyze_json(["x"], jobs=-1)


def python_default(option):
    """The schema's default as the Python signature holds it."""
    if option["type"] == "flag":
        return False
    if not option["default"]:
        return inspect.Parameter.empty if option["required"] else None
    return {"count": int, "number": float, "duration": float}.get(option["type"], str)(option["default"])


@pytest.mark.parametrize("calc", stepscope_plan.CALCULATORS)
def test_plan_options_are_the_schema_on_both_sides(cli, calc):
    """Every option of a calculator's schema is the CLI option of that name, short flag, value name
    and default, and the Python keyword argument of its Python name with that default; neither
    side offers an option the schema does not hold."""
    schema = stepscope._stepscope.options(f"plan {calc}")
    usage = subprocess.run([cli, "plan", calc, "--help"], capture_output=True, text=True, check=True).stdout
    cli_opts = {n: d for n, d in cli_options(cli, "plan", calc).items() if n not in CLI_ONLY}
    py = inspect.signature(getattr(stepscope_plan, calc)).parameters
    for o in schema:
        names = (f"{o['flag']},--{o['name']}" if o["flag"] else f"--{o['name']}").replace("-", "[-]")
        line = re.search(rf"^\s+{names}\b(.*)$", usage, re.M)
        assert line, o["name"]
        if o["value_name"]:
            assert line.group(1).startswith(f" {o['value_name']}"), o["name"]
        if o["type"] != "flag":
            shown = re.search(r"=(\S+)", line.group(1)[len(o["value_name"]) + 1 if o["value_name"] else 0:])
            assert (shown.group(1) if shown else "") == o["default"], o["name"]
        assert ("REQUIRED" in line.group(1)) == o["required"], o["name"]
        assert py[o["python"]].default == python_default(o), o["python"]
    assert len(cli_opts) == len(schema)
    assert list(py) == [o["python"] for o in schema]


# A base of valid options per command, and for each option with a check a value outside it.
BASE_ARGV = {"plan memory": ["--params", "7B"], "plan roofline": ["--layer"], "plan comm": ["--params", "7B"],
             "plan scaling": ["--point", "1:100"], "plan pipeline": [], "plan kv": ["--model", "llama-3-8b"],
             "plan serve": ["--model", "llama-3-8b", "--users", "10", "--avg-seq", "1000"],
             "plan specdec": ["--draft-ms", "2", "--target-ms", "30"],
             "plan stack": ["--step-ms", "100", "--speedup", "a=2"]}
BAD_VALUE = {"non-negative": lambda o: -1, "positive": lambda o: 0, "0-1": lambda o: 2,
             "range": lambda o: int(o["high"]) + 1}


def checked_options():
    for command in [c for c, _ in ANALYSIS_COMMANDS] + [f"plan {c}" for c in stepscope_plan.CALCULATORS]:
        for o in stepscope._stepscope.options(command):
            if o["check"]:
                yield command, o, BAD_VALUE[o["check"]](o)
            if o["type"] in ("count", "number", "duration") and command.startswith("plan"):
                yield command, o, "x"


CHECKED = list(checked_options())


@pytest.mark.parametrize("command,option,value", CHECKED, ids=[f"{c}-{o['name']}-{v}" for c, o, v in CHECKED])
def test_a_bad_value_is_refused_alike(cli, fixtures, tmp_path, command, option, value):
    """The CLI refuses it with one line and exit 2, Python with stepscope.Error (a ValueError) and
    the same message."""
    argv = [f"--{option['name']}", str(value)]
    if command.startswith("plan"):
        calc = command.split()[1]
        base = BASE_ARGV[command]
        if f"--{option['name']}" in base:
            i = base.index(f"--{option['name']}")
            base = base[:i] + base[i + 2:]
        rc, _, err = run_cli(cli, *command.split(), *base, *argv, "--json")
        kwargs = dict(zip(base[::2], base[1::2]))
        kwargs = {k[2:].replace("-", "_"): v for k, v in kwargs.items()}
        kwargs = {{"point": "points", "speedup": "speedups"}.get(k, k): v for k, v in kwargs.items()}
        if command == "plan roofline":
            kwargs = {"layer": True}
        call = lambda: getattr(stepscope_plan, calc)(**kwargs, **{option["python"]: value})  # noqa: E731
    elif command == "history":
        rc, _, err = run_cli(cli, command, "-q", str(tmp_path), *argv)
        call = lambda: stepscope.history(str(tmp_path), **{option["python"]: value})  # noqa: E731
    else:
        trace = str(fixtures / "cpu" / "a_dataloader_w0_slow_transform.pt.trace.json.gz")
        sides = [trace, trace] if command == "diff" else [trace]
        rc, _, err = run_cli(cli, command, "-q", *sides, *argv) if command != "whatif" else \
            run_cli(cli, command, *sides, *argv)
        func = {"analyze": stepscope.analyze, "diff": stepscope.diff, "whatif": stepscope.whatif}[command]
        call = lambda: func(*sides, **{option["python"]: value})  # noqa: E731
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1, err
    with pytest.raises(stepscope.Error) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert str(e.value) == cli_error_message(err)


# The spellings the CLI accepts for a value, given to Python as the same text: both read them
# with the same parser, so both give the same document (or refuse with the same message).
SPELLINGS = [
    ("memory", dict(model="llama-3-8b", activations="per_layer"), ["--model", "llama-3-8b", "--activations", "per_layer"]),
    ("memory", dict(model="llama-3-8b", activations="Per-Layer"), ["--model", "llama-3-8b", "--activations", "Per-Layer"]),
    ("memory", dict(model="llama-3-8b", activations="exact"), ["--model", "llama-3-8b", "--activations", "exact"]),
    ("memory", dict(model="llama-3-8b", attention="eager"), ["--model", "llama-3-8b", "--attention", "eager"]),
    ("memory", dict(model="llama-3-8b", attention="memory_efficient"), ["--model", "llama-3-8b", "--attention", "memory_efficient"]),
    ("memory", dict(model="llama-3-8b", attention="SDPA"), ["--model", "llama-3-8b", "--attention", "SDPA"]),
    ("memory", dict(model="llama-3-8b", flash=True), ["--model", "llama-3-8b", "--flash"]),
    ("memory", dict(model="llama-3-8b", seq="8K", batch="2"), ["--model", "llama-3-8b", "--seq", "8K", "--batch", "2"]),
    ("memory", dict(params="7B", sharding="shard_grad_op", gpus=8), ["--params", "7B", "--sharding", "shard_grad_op", "--gpus", "8"]),
    ("memory", dict(model="llama-2-7b", checkpoint="4", offload="cpu"), ["--model", "llama-2-7b", "--checkpoint", "4", "--offload", "cpu"]),
    ("roofline", dict(layer=True, model="llama-3-8b", seq="2K"), ["--layer", "--model", "llama-3-8b", "--seq", "2K"]),
    ("roofline", dict(layer=True, hidden="4K", heads=32, kv_heads=8), ["--layer", "--hidden", "4K", "--heads", "32", "--kv-heads", "8"]),
    ("comm", dict(params="7B", backward_ms="0.9s", latency_us="2us", overlap=0.5), ["--params", "7B", "--backward-ms", "0.9s", "--latency-us", "2us", "--overlap", "0.5"]),
    ("pipeline", dict(stages=4, micro_batch_ms="30ms"), ["--stages", "4", "--micro-batch-ms", "30ms"]),
    ("stack", dict(step_ms="0.85s", hours="90min", speedups={"workers@data": 2, "pinning@data": 1.9}, shares={"data": 0.6}),
     ["--step-ms", "0.85s", "--hours", "90min", "--speedup", "workers@data=2", "--speedup", "pinning@data=1.9", "--share", "data=0.6"]),
    ("specdec", dict(draft_ms="2ms", target_ms="0.03s"), ["--draft-ms", "2ms", "--target-ms", "0.03s"]),
    ("kv", dict(model="llama-3-8b", seq="8K", batch="4"), ["--model", "llama-3-8b", "--seq", "8K", "--batch", "4"]),
]

REFUSED = [
    ("memory", dict(model="llama-3-8b", activations="per layer"), ["--model", "llama-3-8b", "--activations", "per layer"]),
    ("memory", dict(model="llama-3-8b", attention="fast"), ["--model", "llama-3-8b", "--attention", "fast"]),
    ("memory", dict(model="llama-3-8b", attention="eager", flash=True), ["--model", "llama-3-8b", "--attention", "eager", "--flash"]),
    ("stack", dict(step_ms=100, speedups={"a@data": 2}, shares={"data": 1.5}), ["--step-ms", "100", "--speedup", "a@data=2", "--share", "data=1.5"]),
]


@pytest.mark.parametrize("calc,kwargs,argv", SPELLINGS, ids=[f"{c[0]}-{i}" for i, c in enumerate(SPELLINGS)])
def test_plan_spellings_read_the_same_in_the_cli_and_python(cli, calc, kwargs, argv):
    out = subprocess.run([cli, "plan", calc, *argv, "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert getattr(stepscope_plan, calc)(**kwargs) == json.loads(out.stdout)


@pytest.mark.parametrize("calc,kwargs,argv", REFUSED, ids=[f"{c[0]}-{i}" for i, c in enumerate(REFUSED)])
def test_plan_spellings_refused_alike(cli, calc, kwargs, argv):
    out = subprocess.run([cli, "plan", calc, *argv, "--json"], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    with pytest.raises(stepscope.Error) as e:
        getattr(stepscope_plan, calc)(**kwargs)
    assert str(e.value) in out.stderr
