"""Ctrl-C during an analysis, and bad arguments that used to escape as builtin exceptions."""
import _thread
import ctypes
import json
import threading
import time

import pytest

import stepscope
from stepscope import _stepscope


def test_ctrl_c_interrupts_a_long_analysis_at_once(monkeypatch):
    libc = ctypes.CDLL(None)

    tokens = []

    def long_call(*args, cancel=None, **kwargs):
        tokens.append(cancel)
        # A C call with the GIL released that never looks at Python's signals, as the analysis.
        libc.usleep(3_000_000)
        return "{}"

    monkeypatch.setattr(_stepscope, "analyze_json", long_call)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        stepscope.analyze("whatever.json")
    assert time.perf_counter() - t0 < 1.5
    timer.join()
    # The readers are told to stop too, not only the caller's wait.
    assert tokens and tokens[0].cancelled


def test_a_cancelled_read_stops_with_keyboard_interrupt(fixtures):
    token = _stepscope.CancelToken()
    token.cancel()
    trace = str(fixtures / "hta/ns_resolution_trace")
    with pytest.raises(KeyboardInterrupt):
        _stepscope.analyze_json([trace], cancel=token)
    with pytest.raises(KeyboardInterrupt):
        _stepscope.hta_load([trace], cancel=token)
    # Untouched, the same read answers.
    assert json.loads(_stepscope.analyze_json([trace], cancel=_stepscope.CancelToken()))["ranks"]


def test_errors_of_the_analysis_still_reach_the_caller(tmp_path):
    with pytest.raises(stepscope.Error):
        stepscope.analyze(str(tmp_path / "missing.json"))


def test_from_json_refuses_missing_and_bad_files(tmp_path):
    with pytest.raises(stepscope.Error, match="cannot read"):
        stepscope.Report.from_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(stepscope.Error, match="not a stepscope JSON report"):
        stepscope.Report.from_json(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([1, 2]))
    with pytest.raises(stepscope.Error, match="no 'ranks'"):
        stepscope.Report.from_json(other)
    with pytest.raises(stepscope.Error):
        stepscope.Report.from_json(5.5)
    # Still what callers caught before.
    with pytest.raises(ValueError):
        stepscope.Report.from_json(bad)


@pytest.mark.parametrize("kwargs,match", [({"window": "a"}, "window must be a whole number"),
                                          ({"window": 0}, "window must be at least 1"),
                                          ({"print_every": 1.5}, "print_every must be a whole number"),
                                          ({"file": 5}, "file must be a text stream")])
def test_step_timer_refuses_bad_arguments(kwargs, match):
    with pytest.raises(stepscope.Error, match=match) as e:
        stepscope.StepTimer(**kwargs)
    assert "\n" not in str(e.value)


def test_step_timer_type_errors_stay_type_errors():
    with pytest.raises(TypeError):
        stepscope.StepTimer(window="a")


@pytest.mark.parametrize("stages", ["forward=lin\0ear", {"forward": "lin\0ear"}, [("forward", "a\0b")],
                                    ["backward=x", "forward=\0"]])
def test_stage_rule_with_nul_is_refused(stages, tmp_path):
    with pytest.raises(stepscope.Error, match="NUL"):
        stepscope.analyze(str(tmp_path / "x.json"), stages=stages)
