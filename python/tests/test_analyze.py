"""stepscope.analyze / stepscope.diff give the CLI's JSON documents; bad input raises
stepscope.Error with the CLI's message and never takes the interpreter down."""
import concurrent.futures
import gzip
import json
import os
import sys

import pytest

import stepscope
from conftest import cli_error_message, run_cli, run_python

# Real traces of different shapes: CPU-only legacy array, GPU single rank, a multi-rank folder.
FIXTURES = [
    "cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz",
    "cpu/f_instrumented_stages.pt.trace.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/sampled_world128",
]


def cli_json(cli, *args):
    rc, out, err = run_cli(cli, "analyze", "-q", "--json", "-", *args)
    assert rc in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name", FIXTURES)
def test_same_dict_as_the_cli(cli, fixtures, name):
    path = str(fixtures / name)
    report = stepscope.analyze(path)
    assert report == cli_json(cli, path)
    assert report["schema"] == stepscope._stepscope.analysis_schema
    assert report["ranks"], "no rank analysed"


def test_stage_rules_as_the_cli_takes_them(cli, fixtures):
    path = str(fixtures / FIXTURES[0])
    rule = r"aten::linear"
    by_dict = stepscope.analyze(path, stages={"optimizer": rule}, jobs=1)
    by_list = stepscope.analyze(path, stages=[f"optimizer={rule}"])
    assert by_dict == by_list == cli_json(cli, "--stage", f"optimizer={rule}", path)
    plain = stepscope.analyze(path)
    opt = lambda r: r["ranks"][0]["partition"]["steady_mean_categories_ns"]["compute_optimizer"]
    assert opt(by_dict) > opt(plain), "the rule moved no time into the optimizer stage"


def test_step_range_as_the_cli_takes_it(cli, fixtures):
    path = str(fixtures / FIXTURES[1])
    report = stepscope.analyze(path, step_range="forward")
    assert report == cli_json(cli, "--step-range", "forward", path)
    p = report["ranks"][0]["partition"]
    assert p["steps"] and all(s["name"] == "forward" for s in p["steps"])


def test_paths_as_pathlike_and_lists(fixtures):
    p = fixtures / FIXTURES[0]
    assert stepscope.analyze(p) == stepscope.analyze([str(p)])


def rename_forward(fixtures, tmp_path, new_name, file_name="renamed.json"):
    """The instrumented-stages fixture with its first "forward" range renamed (raw bytes)."""
    with gzip.open(fixtures / FIXTURES[1], "rb") as f:
        raw = f.read()
    assert b'"forward"' in raw
    path = tmp_path / file_name
    path.write_bytes(raw.replace(b'"forward"', b'"' + new_name + b'"', 1))
    return str(path)


def test_non_ascii_names_as_the_cli_writes_them(cli, fixtures, tmp_path):
    # Non-ASCII in a range name and in the path, which the report repeats.
    path = rename_forward(fixtures, tmp_path, "vorwärts \u2713 前向".encode(), "trace_✓_前向.json")
    report = stepscope.analyze(path)
    assert report == cli_json(cli, path)
    assert report["ranks"][0]["ingest"]["path"] == path


def test_invalid_utf8_raises_the_cli_message(cli, fixtures, tmp_path):
    path = rename_forward(fixtures, tmp_path, b"forw\xff\xfeard")
    rc, _, err = run_cli(cli, "analyze", "-q", path)
    assert rc == 2
    with pytest.raises(stepscope.Error) as e:
        stepscope.analyze(path)
    assert str(e.value) == cli_error_message(err)
    assert "UTF-8" in str(e.value)


def test_threads_share_the_module(fixtures):
    """The analysis runs without the GIL; concurrent calls give the same report."""
    path = str(fixtures / FIXTURES[2])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda _: stepscope.analyze(path, jobs=1), range(4)))
    assert all(r == reports[0] for r in reports)


def test_other_threads_run_during_the_analysis(fixtures):
    """The GIL is released while the trace is read and analysed: a Python thread keeps ticking."""
    import threading
    import time

    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.002)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        start = time.perf_counter()
        stepscope.analyze(str(fixtures / "hta/df_index_resolver/df_index_resolver.json.gz"), jobs=1)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    margin = 0.2 * (end - start)
    inside = [x for x in ticks if start + margin < x < end - margin]
    assert end - start > 0.05, "the analysis was too quick to tell"
    # Held GIL: no tick at all inside the window; released: one every few milliseconds.
    assert len(inside) >= 5, (len(inside), end - start)


def test_diff_matches_the_cli(cli, fixtures):
    base = str(fixtures / "hta/trace_diff/control/control.json.gz")
    test = str(fixtures / "hta/trace_diff/test/test.json.gz")
    d = stepscope.diff(base, test)
    rc, out, err = run_cli(cli, "diff", "-q", "--json", "-", base, test)
    assert rc in (0, 1), err
    assert d == json.loads(out)
    assert d["step"]["base_ns"] > 0 and d["step"]["test_ns"] > 0


# ---- errors --------------------------------------------------------------------------------

def bad_inputs(fixtures, tmp_path):
    """(name, path) of inputs the CLI rejects with exit code 2."""
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x00\x01 this is not JSON {{{")
    not_gzip = tmp_path / "not_really.json.gz"
    not_gzip.write_bytes(b"plain text pretending to be gzip")
    return [("missing", str(tmp_path / "missing.json")), ("empty dir", str(empty_dir)),
            ("garbage", str(garbage)), ("not gzip", str(not_gzip))]


def test_bad_input_raises_the_cli_message(cli, fixtures, tmp_path):
    for name, path in bad_inputs(fixtures, tmp_path):
        rc, _, err = run_cli(cli, "analyze", "-q", path)
        assert rc == 2, name
        with pytest.raises(stepscope.Error) as e:
            stepscope.analyze(path)
        assert str(e.value) == cli_error_message(err), name
        assert isinstance(e.value, ValueError)


def test_bad_stage_rule_raises_the_cli_message(cli, fixtures):
    path = str(fixtures / FIXTURES[0])
    for rule in ("nonsense=x", "forward=(", "no-equals-sign"):
        rc, _, err = run_cli(cli, "analyze", "-q", "--stage", rule, path)
        assert rc == 2, rule
        with pytest.raises(stepscope.Error) as e:
            stepscope.analyze(path, stages=[rule])
        assert str(e.value) == cli_error_message(err), rule


def test_bad_arguments_raise_clearly(fixtures):
    with pytest.raises(stepscope.Error, match="no trace"):
        stepscope.analyze([])
    with pytest.raises(stepscope.Error, match="paths"):
        stepscope.analyze(42)
    with pytest.raises(stepscope.Error, match="--jobs"):
        stepscope.analyze(str(fixtures / FIXTURES[0]), jobs=-1)


def test_damaged_traces_never_crash_the_interpreter(fixtures, tmp_path):
    """Truncations and corrupted bytes of a real trace: each call returns or raises, in a child
    interpreter so that a crash would show as its exit status."""
    with gzip.open(fixtures / FIXTURES[2], "rb") as f:
        raw = f.read()
    cases = []
    for i, cut in enumerate((1, 17, len(raw) // 3, len(raw) // 2, len(raw) - 5)):
        p = tmp_path / f"cut{i}.json"
        p.write_bytes(raw[:cut])
        cases.append(str(p))
    for i, at in enumerate(range(1000, len(raw), len(raw) // 12)):
        b = bytearray(raw)
        b[at:at + 8] = b'}]{"\x00\xff:,'
        p = tmp_path / f"flip{i}.json"
        p.write_bytes(bytes(b))
        cases.append(str(p))
    code = (
        "import json, stepscope, sys\n"
        f"cases = json.loads({json.dumps(json.dumps(cases))})\n"
        "outcomes = []\n"
        "for c in cases:\n"
        "    try:\n"
        "        stepscope.analyze(c, jobs=1); outcomes.append('ok')\n"
        "    except stepscope.Error as e:\n"
        "        assert str(e), c; outcomes.append('error')\n"
        "print(json.dumps(outcomes))\n")
    p = run_python(code)
    assert p.returncode == 0, p.stderr
    outcomes = json.loads(p.stdout)
    assert len(outcomes) == len(cases)
    assert "error" in outcomes  # the early cuts cannot be read


def test_import_does_not_import_torch():
    p = run_python("import sys, stepscope; t = stepscope.StepTimer(); "
                   "print('torch' in sys.modules)")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
