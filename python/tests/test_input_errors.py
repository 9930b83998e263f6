"""Every input problem raises stepscope.Error (a ValueError) with a one-line message: unreadable
paths and directory entries, rank files cut before their first event, exports with rows that hold
no time, and arguments of the wrong type or range. Inputs are made here."""
import json
import os
import sqlite3

import pytest

import stepscope
from conftest import cli_error_message, run_cli

LOOP_REASON = "Too many levels of symbolic links"


def rank_trace(rank):
    """A small rank trace with two ProfilerSteps."""
    events = []
    for s in range(2):
        t = 1000 + s * 10000
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                       "ts": t, "dur": 9000})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 100,
                       "dur": 8000})
    return json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2},
                       "traceEvents": events})


def rank_dir(tmp_path, name="ranks"):
    d = tmp_path / name
    d.mkdir()
    (d / "rank0.json").write_text(rank_trace(0))
    return d


def raises_error(call):
    with pytest.raises(stepscope.Error) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_named_symlink_loop_gives_its_reason(cli, tmp_path):
    loop = tmp_path / "trace.json"
    loop.symlink_to(loop)
    msg = raises_error(lambda: stepscope.analyze(loop))
    assert msg == f"{loop}: cannot read: {LOOP_REASON}"
    rc, _, err = run_cli(cli, "analyze", "-q", loop)
    assert rc == 2
    assert cli_error_message(err) == msg


def test_loop_in_a_directory_is_skipped_with_a_warning(tmp_path):
    d = rank_dir(tmp_path)
    loop = d / "rank1.json"
    loop.symlink_to(loop)
    report = stepscope.analyze(d)
    assert len(report["ranks"]) == 1
    assert f"{loop}: cannot read: {LOOP_REASON}; skipped" in json.dumps(report)


def test_directory_of_only_unreadable_entries_is_refused(cli, tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    (d / "rank0.json").symlink_to(d / "missing.json")
    msg = raises_error(lambda: stepscope.analyze(d))
    assert msg.startswith(f"{d}: no readable trace")
    assert "rank0.json" in msg
    rc, _, err = run_cli(cli, "analyze", "-q", d)
    assert rc == 2
    assert cli_error_message(err) == msg


def test_rank_cut_before_its_first_event_is_left_out(tmp_path):
    d = rank_dir(tmp_path)
    cut = d / "rank1.json"
    cut.write_text('{"schemaVersion": 1, "traceEvents": [')
    report = stepscope.analyze(d)
    assert len(report["ranks"]) == 1
    assert f"{cut}: no events before the file ends; left out of the ranks" in json.dumps(report)


def test_undecodable_path_names_its_file(tmp_path):
    d = os.fsencode(tmp_path) + b"/r\xff"
    os.mkdir(d)
    with open(d + b"/rank0.json", "w") as f:
        f.write(rank_trace(0))
    assert len(stepscope.analyze(d)["ranks"]) == 1
    assert len(stepscope.analyze(os.fsdecode(d))["ranks"]) == 1
    missing = d + b"/gone.json"
    msg = raises_error(lambda: stepscope.analyze(missing))
    assert msg == f"{os.fsdecode(missing)}: no such file or directory"


def test_path_with_a_nul_byte_is_refused(tmp_path):
    assert "NUL" in raises_error(lambda: stepscope.analyze(str(tmp_path / "a\0b.json")))


def nsys_export(path, kernels):
    """An export of one process's kernels, (start, end) as SQLite literals; its table lacks the
    real schema's NOT NULL so that NULL can be planted too."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES (1, 'void gemm(float*)');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
        " correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);")
    gpid = (1 << 48) | (4242 << 24)
    for start, end in kernels:
        db.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({start}, {end}, 0, 7, 1, {gpid}, 1, 1)")
    db.commit()
    db.close()
    return path


def test_export_rows_without_a_time_are_skipped_and_counted(tmp_path):
    bad = [("'noon'", 2000), (1000, "NULL"), ("x'00'", 2000), (9223372036854775000, 9223372036854775807),
           (-9223372036854775807, 1000), (5000, 4000), (1 << 62, (1 << 62) + 1)]
    path = nsys_export(str(tmp_path / "bad_times.sqlite"), [(1000, 3000)] + bad + [(4000, 4500)])
    report = stepscope.analyze(path)
    ingest = report["ranks"][0]["ingest"]
    assert ingest["events"] == 2
    assert f"{len(bad)} rows of CUPTI_ACTIVITY_KIND_KERNEL with a missing or out-of-range start/end were skipped" \
        in ingest["warnings"]


@pytest.mark.parametrize("jobs", ["2", 1.5, None, True, 10**30, -1, 100000])
def test_bad_jobs_raise_error(jobs, tmp_path):
    d = rank_dir(tmp_path)
    assert "--jobs" in raises_error(lambda: stepscope.analyze(d, jobs=jobs))
    assert "--jobs" in raises_error(lambda: stepscope.diff(d, d, jobs=jobs))


def test_jobs_message_is_the_clis(cli, tmp_path):
    d = rank_dir(tmp_path)
    rc, _, err = run_cli(cli, "analyze", "-q", "--jobs", "100000", d)
    assert rc == 2
    assert raises_error(lambda: stepscope.analyze(d, jobs=100000)) == cli_error_message(err)


@pytest.mark.parametrize("stages", [5, [("forward",)], [1], [("forward", 2)]])
def test_bad_stage_rules_raise_error(stages, tmp_path):
    raises_error(lambda: stepscope.analyze(rank_dir(tmp_path), stages=stages))


def test_bad_step_range_raises_error(tmp_path):
    assert "--step-range" in raises_error(lambda: stepscope.analyze(rank_dir(tmp_path), step_range=3))


@pytest.mark.parametrize("option, value", [("bootstrap_samples", "many"), ("bootstrap_samples", 10**12),
                                           ("seed", -1), ("seed", 2.5), ("kernel_threshold", float("nan")),
                                           ("kernel_threshold", "5%")])
def test_bad_diff_options_raise_error(option, value, tmp_path):
    d = rank_dir(tmp_path)
    raises_error(lambda: stepscope.diff(d, d, **{option: value}))
