"""`python -m stepscope` runs the command-line tool with the same arguments, exit code and output."""
import os
import subprocess
import sys

import pytest


def run(args, env=None, stdin=None):
    return subprocess.run([sys.executable, "-m", "stepscope", *args], capture_output=True, text=True,
                          env=env, input=stdin)


def test_help_and_exit_codes_are_the_binarys(cli):
    r = run(["--help"])
    assert r.returncode == 0
    assert "Usage: stepscope" in r.stdout
    direct = subprocess.run([cli, "anlyze"], capture_output=True, text=True)
    via = run(["anlyze"])
    assert via.returncode == direct.returncode == 2
    assert via.stderr == direct.stderr
    assert "did you mean 'analyze'" in via.stderr


def test_analyze_through_the_module_matches_the_binary(cli, fixtures):
    trace = os.path.join(fixtures, "hta", "triton_example", "triton_example.json.gz")
    via = run(["analyze", "-q", trace])
    direct = subprocess.run([cli, "analyze", "-q", trace], capture_output=True, text=True)
    assert via.returncode == direct.returncode == 0
    assert via.stdout == direct.stdout


def test_without_a_binary_it_says_how_to_get_one():
    import stepscope.__main__ as entry
    shipped = os.path.join(os.path.dirname(entry.__file__), "bin", "stepscope")
    if os.path.exists(shipped):
        pytest.skip("an installed package ships its binary")
    env = {k: v for k, v in os.environ.items() if k != "STEPSCOPE_CLI"}
    r = run(["--help"], env=env)
    assert r.returncode == 2
    assert "STEPSCOPE_CLI" in r.stderr
