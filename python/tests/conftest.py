"""Shared fixtures: where the real traces are, the CLI to compare against, and torch."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE_DIR = HERE.parents[1]


def fixtures_dir():
    env = os.environ.get("STEPSCOPE_FIXTURES_DIR")
    return Path(env) if env else SOURCE_DIR.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def fixtures():
    d = fixtures_dir()
    if not d.is_dir():
        pytest.skip(f"no fixtures at {d}")
    return d


@pytest.fixture(scope="session")
def cli():
    """The `stepscope` executable built beside the module (CTest passes its path)."""
    env = os.environ.get("STEPSCOPE_CLI")
    candidates = [env] if env else [str(p / "stepscope") for p in sorted(SOURCE_DIR.glob("build*"))]
    candidates.append(shutil.which("stepscope") or "")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("no stepscope executable found (set STEPSCOPE_CLI)")


@pytest.fixture(scope="session")
def torch():
    """torch, required when the suite runs under CTest (STEPSCOPE_REQUIRE_TORCH=1)."""
    if os.environ.get("STEPSCOPE_REQUIRE_TORCH") == "1":
        import torch as t  # a missing torch fails the run here
        return t
    return pytest.importorskip("torch")


def run_cli(cli, *args):
    """Runs the CLI; returns (exit code, stdout, stderr)."""
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def cli_error_message(stderr):
    """The message the CLI printed after "stepscope: error: "."""
    prefix = "stepscope: error: "
    lines = [l for l in stderr.splitlines() if l.startswith(prefix)]
    assert lines, f"no error line in {stderr!r}"
    return lines[-1][len(prefix):]


def run_python(code, timeout=120):
    """Runs `code` in a fresh interpreter with this one's module path; returns the process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env)
