"""The CLI and the Python module offer the same options, under the same names, with the same
defaults: each command's `--help` is read and set against the Python signature. Options that
only shape the terminal or files (report files, verbosity, table width) are the CLI's own."""
import inspect
import re
import subprocess

import pytest

import stepscope
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
    sig = inspect.signature(func)
    return {n: p.default for n, p in sig.parameters.items()
            if p.kind == p.KEYWORD_ONLY and n not in PY_ALIASES}


@pytest.mark.parametrize("command,func", [("analyze", stepscope.analyze), ("diff", stepscope.diff),
                                          ("merge", stepscope.merge)])
def test_analysis_commands_match_the_python_functions(cli, command, func):
    cli_opts = {k: v for k, v in cli_options(cli, command).items() if k not in CLI_ONLY}
    py = py_options(func)
    cli_opts = {n: cli_opts[k] for k in cli_opts for n in matched({k}, set(py))}
    assert set(cli_opts) == set(py), (sorted(set(cli_opts) - set(py)), sorted(set(py) - set(cli_opts)))
    for name, default in cli_opts.items():
        if default is not None:
            assert str(py[name]) == default, name


@pytest.mark.parametrize("calc", stepscope_plan.CALCULATORS)
def test_plan_calculators_match_the_python_functions(cli, calc):
    native = getattr(stepscope._stepscope.plan, calc)
    py = set(stepscope_plan._parameters(native))
    cli_opts = matched(set(cli_options(cli, "plan", calc)) - CLI_ONLY, py)
    # A calculator whose Python form takes a collection where the CLI repeats an option
    # (scaling's points, stack's speedups) names it in the plural.
    singular = {p[:-1] if p not in cli_opts and p.endswith("s") and p[:-1] in cli_opts else p for p in py}
    assert cli_opts == singular, (sorted(cli_opts - singular), sorted(singular - cli_opts))
