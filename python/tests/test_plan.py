"""stepscope.plan.<calculator>(...) gives the document `stepscope plan <calculator> --json` prints
for the same inputs, and raises stepscope.Error with the CLI's message on bad input."""
import json

import pytest

import stepscope
from conftest import cli_error_message, run_cli

# (calculator, keyword arguments, the same inputs as CLI options)
CASES = [
    ("memory", dict(model="llama-3-8b", gpus=8, zero=3, batch=4, seq=4096),
     ["--model", "llama-3-8b", "--gpus", "8", "--zero", "3", "--batch", "4", "--seq", "4096"]),
    ("memory", dict(params="7B"), ["--params", "7B"]),
    ("memory", dict(params=7e9, dtype="fp16", optimizer="sgd", sharding="FULL_SHARD", gpus=4,
                    checkpoint=2, flash=True, gpu="h100-sxm", headroom=0.2),
     ["--params", "7e9", "--dtype", "fp16", "--optimizer", "sgd", "--sharding", "FULL_SHARD",
      "--gpus", "4", "--checkpoint", "2", "--flash", "--gpu", "h100-sxm", "--headroom", "0.2"]),
    ("roofline", dict(gemm=(4096, 4096, 4096), layernorm=4096),
     ["--gemm", "4096,4096,4096", "--layernorm", "4096"]),
    ("roofline", dict(layer=True, gpu="h100-sxm", batch=4, seq=2048, hidden=4096),
     ["--layer", "--gpu", "h100-sxm", "--batch", "4", "--seq", "2048", "--hidden", "4096"]),
    ("roofline", dict(attention="8,32,2048,128", fused=True, flops="2.7e11", bytes="100MB",
                      dtype="fp16"),
     ["--attention", "8,32,2048,128", "--fused", "--flops", "2.7e11", "--bytes", "100MB",
      "--dtype", "fp16"]),
    ("comm", dict(params="7B", gpus=8, bandwidth=50),
     ["--params", "7B", "--gpus", "8", "--bandwidth", "50"]),
    ("comm", dict(bytes="14GB", gpus=16, link="infiniband", backward_ms=900, overlap=0.8),
     ["--bytes", "14GB", "--gpus", "16", "--link", "infiniband", "--backward-ms", "900",
      "--overlap", "0.8"]),
    ("scaling", dict(points={1: 100, 8: 600}), ["--point", "1:100", "--point", "8:600"]),
    ("scaling", dict(points=["1:100", (4, 350), "8:600"]),
     ["--point", "1:100", "--point", "4:350", "--point", "8:600"]),
    ("pipeline", dict(stages=4, micro_batches=16, interleave=2, micro_batch_ms=30),
     ["--stages", "4", "--micro-batches", "16", "--interleave", "2", "--micro-batch-ms", "30"]),
    ("stack", dict(step_ms=850, cost=50000, speedups={"loader workers": 1.4, "BF16 AMP": 1.7}),
     ["--step-ms", "850", "--cost", "50000", "--speedup", "loader workers=1.4",
      "--speedup", "BF16 AMP=1.7"]),
    ("kv", dict(model="llama-3-70b", seq=8192), ["--model", "llama-3-70b", "--seq", "8192"]),
    ("kv", dict(layers=32, heads=32, head_dim=128, seq=[2048, "4096", "8K"]),
     ["--layers", "32", "--heads", "32", "--head-dim", "128", "--seq", "2048,4096,8K"]),
    ("serve", dict(model="llama-2-7b", users=1000, avg_seq=1000, weights="int4"),
     ["--model", "llama-2-7b", "--users", "1000", "--avg-seq", "1000", "--weights", "int4"]),
    ("specdec", dict(draft_ms=2, target_ms=20, accept=0.7, k=4),
     ["--draft-ms", "2", "--target-ms", "20", "--accept", "0.7", "--k", "4"]),
    ("gpus", {}, []),
    ("models", {}, []),
]


@pytest.mark.parametrize("calc,kwargs,argv", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_same_document_as_the_cli(cli, calc, kwargs, argv):
    got = getattr(stepscope.plan, calc)(**kwargs)
    rc, out, err = run_cli(cli, "plan", calc, *argv, "--json")
    assert rc == 0, err
    assert got == json.loads(out)
    assert got.get("calculator", calc) == calc or calc in ("gpus", "models")


BAD = [
    ("memory", dict(params="seven"), ["--params", "seven"]),
    ("memory", dict(model="no-such-model"), ["--model", "no-such-model"]),
    ("memory", dict(params="7B", zero=2, sharding="ddp"),
     ["--params", "7B", "--zero", "2", "--sharding", "ddp"]),
    ("roofline", dict(gemm="4096,4096"), ["--gemm", "4096,4096"]),
    ("roofline", dict(), []),
    ("comm", dict(gpus=8), ["--gpus", "8"]),
    ("kv", dict(model="llama-3-8b", seq="12.5"), ["--model", "llama-3-8b", "--seq", "12.5"]),
    ("scaling", dict(points=["8-600"]), ["--point", "8-600"]),
    ("stack", dict(step_ms=100, speedups=["fast=-2"]), ["--step-ms", "100", "--speedup", "fast=-2"]),
    # A text where a number goes is read as the CLI reads it, and refused in its words.
    ("memory", dict(gpus="eight"), ["--gpus", "eight"]),
    ("memory", dict(headroom="lots"), ["--headroom", "lots"]),
    ("kv", dict(model="llama-3-8b", seq=[1.5]), ["--model", "llama-3-8b", "--seq", "1.5"]),
    ("specdec", dict(draft_ms="fast", target_ms=20, accept=0.8), ["--draft-ms", "fast", "--target-ms", "20"]),
    ("memory", dict(params="7B", zero=4), ["--params", "7B", "--zero", "4"]),
    ("roofline", dict(layer=True, heads=0), ["--layer", "--heads", "0"]),
]


@pytest.mark.parametrize("calc,kwargs,argv", BAD, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD)])
def test_bad_input_raises_the_cli_message(cli, calc, kwargs, argv):
    rc, _, err = run_cli(cli, "plan", calc, *argv, "--json")
    assert rc == 2, err
    with pytest.raises(stepscope.Error) as e:
        getattr(stepscope.plan, calc)(**kwargs)
    assert str(e.value) == cli_error_message(err)


WRONG_TYPES = [
    ("memory", (), dict(gpus=[8]), "plan.memory: gpus=[8]: expected int or str"),
    ("memory", (), dict(batch=True), "plan.memory: batch=True: expected int or str"),
    ("memory", (), dict(batch=2.5), "plan.memory: batch=2.5: expected int or str"),
    ("memory", (), dict(headroom=[0.1]), "plan.memory: headroom=[0.1]: expected float or str"),
    ("memory", (), dict(flash="yes"), "plan.memory: flash='yes': expected bool"),
    ("memory", (), dict(no_such_option=1), "plan.memory: no option 'no_such_option'"),
    ("memory", ("llama-3-8b",), {}, "plan.memory: takes no positional arguments"),
    ("kv", (), dict(model="llama-3-8b", seq=[None]), "plan.kv: seq=[None]: expected str, a list or a dict"),
    ("scaling", (None,), {}, "plan.scaling: missing required argument 'points'"),
    ("specdec", (), dict(draft_ms=None, target_ms=20, accept=0.8), "plan.specdec: missing required argument 'draft_ms'"),
]


@pytest.mark.parametrize("calc,args,kwargs,start", WRONG_TYPES, ids=[f"{c[0]}-{i}" for i, c in enumerate(WRONG_TYPES)])
def test_wrong_argument_types_raise_stepscope_error(calc, args, kwargs, start):
    with pytest.raises(stepscope.Error) as e:
        getattr(stepscope.plan, calc)(*args, **kwargs)
    assert isinstance(e.value, TypeError)
    assert isinstance(e.value, stepscope.ArgumentError)
    assert str(e.value).startswith(start), str(e.value)


def test_calculator_docstrings_name_dict_results():
    assert "-> dict" in stepscope.plan.memory.__doc__
    assert "headroom: fraction of GPU memory kept free (default 0.1)" in stepscope.plan.memory.__doc__
