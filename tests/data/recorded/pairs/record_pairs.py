#!/usr/bin/env python3
"""Records real before/after pairs: the same small CPU training program profiled before and
after one change, so that a lever's predicted gain can be held to the gain the change gave.

Every trace is a few-second job on the CPU (one intra-op thread, tiny models), profiled with
torch.profiler (CPU activity, schedule wait=2, warmup=2, active=8: the first four loop steps
are not in the trace; the loader traces wait=12, active=9, see LOADER) and written gzipped with mtime 0 as <trace>.pt.trace.json.gz. Debian's
torch 1.13 has no Kineto: the trace is the legacy profiler's bare JSON array of "X" events.

  pair                       before -> after                               lever
  num_workers_0_to_2         DataLoader(num_workers=0) -> 2 persistent     num_workers
  num_workers_0_to_4         DataLoader(num_workers=0) -> 4 persistent     num_workers
  num_workers_2_to_4         2 persistent workers -> 4                     num_workers
  prefetch_factor_2_to_4     2 workers, prefetch_factor 2 -> 4: no gain,   prefetch_factor
                             the workers are slower than the step on average
  preprocess_cache           slow per-sample transform -> tensors decoded  preprocess_cache
                             once before the loop
  persistent_workers         2 workers respawned each 4-batch epoch (each   persistent_workers
                             opens its shards for 60 ms) -> persistent
  checkpoint_every_3rd       torch.save of the model and optimizer every    async_checkpoint
                             3rd step -> no save in the loop
  item_print_each_step       loss.item() and a print every step -> none     remove_item
  accumulate_4x16_to_1x64    4 micro-batches of 16 accumulated per step     micro_batch
                             -> one batch of 64 (same global batch)
  batch_16_to_64             batch 16 -> 64, one optimizer step per batch   micro_batch
                             (per-sample speedup: the step does 4x the work)

The slow transform is a 2 ms sleep per sample (a JPEG decode's stand-in that holds no core, so
four workers do not fight the recording host for its two cores) plus a normalisation.

Usage: /usr/bin/python3 record_pairs.py OUT_DIR [TRACE ...]
       /usr/bin/python3 record_pairs.py --measure STEPSCOPE_BINARY [MANIFEST]
The second form re-measures every pair of the manifest (default: pairs.json beside this file)
with `stepscope analyze --json` and writes each trace's mean steady step and the pair's
measured speedup back into it.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

WAIT, WARMUP, ACTIVE = 2, 2, 8
STEPS = WAIT + WARMUP + ACTIVE
SLEEP_PER_SAMPLE_S = 0.002
DIM = 256
SEED = 1234


def torch_modules():
    # Imported here so that --measure runs without torch.
    global torch, nn, DataLoader, Dataset, profile, ProfilerActivity, schedule
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule
    from torch.utils.data import DataLoader, Dataset


def slow_dataset_class():
    class SlowDataset(Dataset):
        """Synthetic samples whose transform sleeps: the loading cost of a decode."""

        def __init__(self, n, sleep_s):
            self.n, self.sleep_s = n, sleep_s

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return transform(i, self.sleep_s)

    return SlowDataset


def transform(i, sleep_s):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(DIM, generator=g)
    if sleep_s:
        time.sleep(sleep_s)
    return (x - x.mean()) / (x.std() + 1e-6), i % 10


def open_shards(_worker_id):
    time.sleep(0.06)  # each fresh worker opens its shard index: a respawn's fixed cost


def small_mlp(hidden=256):
    return nn.Sequential(nn.Linear(DIM, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def make_profiler(path, wait, active):
    return profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=wait, warmup=WARMUP, active=active),
                   on_trace_ready=lambda p: p.export_chrome_trace(path))


def loader(cfg):
    n = cfg.get("epoch_batches", cfg.get("wait", WAIT) + WARMUP + cfg.get("active", ACTIVE) + 4) * cfg["batch"]
    if cfg.get("cached"):
        ds = [transform(i, 0) for i in range(n)]  # decoded once, before the loop
    else:
        ds = slow_dataset_class()(n, cfg.get("sleep_s", SLEEP_PER_SAMPLE_S))
    kw = dict(batch_size=cfg["batch"], shuffle=False, num_workers=cfg.get("workers", 0))
    if kw["num_workers"]:
        kw.update(persistent_workers=cfg.get("persistent", True), prefetch_factor=cfg.get("prefetch", 2),
                  worker_init_fn=open_shards if cfg.get("open_shards") else None)
    return DataLoader(ds, **kw)


def batches(cfg):
    """Endless batches: the loader's epochs one after the other, or in-memory tensors."""
    if "workers" not in cfg and not cfg.get("cached"):
        data = [(torch.randn(cfg["batch"], DIM), torch.randint(0, 10, (cfg["batch"],))) for _ in range(4)]
        while True:
            yield from data
    dl = loader(cfg)
    while True:
        yield from dl


def sparse_embedding_model(rows):
    """DLRM-like: a large table of which each step touches a few rows, and a small MLP. Steps are
    cheap, checkpoints big (rows x 64 floats)."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.EmbeddingBag(rows, 64, mode="sum", sparse=True)
            self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))

        def forward(self, ids):
            return self.mlp(self.emb(ids))

    return Model()


def sparse_batches(cfg):
    data = [(torch.randint(0, cfg["sparse_rows"], (cfg["batch"], 8)), torch.randint(0, 10, (cfg["batch"],)))
            for _ in range(4)]
    while True:
        yield from data


def model_and_source(cfg):
    if cfg.get("sparse_rows"):
        model = sparse_embedding_model(cfg["sparse_rows"])
        return model, torch.optim.SGD(model.parameters(), lr=0.01), sparse_batches(cfg)  # SGD takes sparse grads
    model = small_mlp(cfg.get("hidden", 256))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), batches(cfg)


def train(path, cfg, scratch):
    torch.manual_seed(SEED)
    model, opt, source = model_and_source(cfg)
    loss_fn = nn.CrossEntropyLoss()
    accumulate = cfg.get("accumulate", 1)
    walls = []
    wait, active = cfg.get("wait", WAIT), cfg.get("active", ACTIVE)
    with make_profiler(path, wait, active) as prof:
        for step in range(wait + WARMUP + active):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            for _ in range(accumulate):
                x, y = next(source)
                loss = loss_fn(model(x), y) / accumulate
                loss.backward()
            opt.step()
            if cfg.get("item_print"):
                print(f"step {step} loss {loss.item():.4f}", file=sys.stderr)
            if cfg.get("save_every") and step % cfg["save_every"] == 0:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, os.path.join(scratch, "ckpt.pt"))
            prof.step()
            walls.append(round(time.perf_counter() - t0, 5))
    return walls


# The loader's workers start with their queues full (prefetch_factor batches each), which the
# loop drains in its first steps: 12 steps before the profiler records reach the steady rhythm.
# Nine profiled steps: the analysis takes the first for warm-up, and the eight after it are whole
# periods of the workers' stalls (every second step with two workers, every fourth with four), so
# that their mean is the long run's.
LOADER = {"batch": 16, "wait": 12, "active": 9}
MLP = {"batch": 64, "hidden": 1024}
# Epochs of 3 batches from 2 workers fast enough to keep up (0.5 ms a sample) with a ~5 ms step:
# only an epoch's first fetch can wait.
EPOCHS = dict(LOADER, wait=WAIT, active=ACTIVE, hidden=2048, workers=2, sleep_s=0.0005, epoch_batches=3, open_shards=True)
SPARSE = {"batch": 64, "sparse_rows": 200_000}
# Each trace: the program's settings. A pair differs in one of them.
TRACES = {
    "loader_w0": dict(LOADER, workers=0),
    "loader_w2": dict(LOADER, workers=2),
    "loader_w4": dict(LOADER, workers=4),
    "loader_w2_prefetch4": dict(LOADER, workers=2, prefetch=4),
    "loader_cached": dict(LOADER, workers=0, cached=True),
    "epoch_w2_respawn": dict(EPOCHS, persistent=False),
    "epoch_w2_persistent": dict(EPOCHS, persistent=True),
    "save_every_3rd": dict(SPARSE, save_every=3),
    "save_never": dict(SPARSE),
    "item_print": dict(MLP, item_print=True),
    "no_item_print": dict(MLP),
    "accumulate_4x16": {"batch": 16, "accumulate": 4},
    "batch_64": {"batch": 64},
    "batch_16": {"batch": 16},
}


def record(name, out_dir, scratch):
    raw = os.path.join(scratch, name + ".json")
    walls = train(raw, TRACES[name], scratch)
    dst = os.path.join(out_dir, name + ".pt.trace.json.gz")
    with open(raw, "rb") as fi, gzip.GzipFile(dst, "wb", mtime=0) as fo:
        shutil.copyfileobj(fi, fo)
    print(f"{name}: {os.path.getsize(dst)} bytes, wall per loop step {walls}", flush=True)


def mean_steady_step_ns(binary, trace):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "analyze", "-q", "-j", "1", trace, "--json", f.name], check=True,
                       stdout=subprocess.DEVNULL)
        return json.load(open(f.name))["steady_state_step"]["mean_step_ns"]


def measure(binary, manifest_path):
    """Writes the steady steps stepscope measures, and their ratio, into the manifest."""
    manifest = json.load(open(manifest_path))
    here = os.path.dirname(os.path.abspath(manifest_path))
    fixtures = os.environ.get("STEPSCOPE_FIXTURES_DIR", os.path.join(here, "../../../../../shared/fixtures"))
    for pair in manifest["pairs"]:
        root = {"fixtures": fixtures, "recorded": os.path.dirname(here)}.get(pair.get("root"), here)
        step = {side: mean_steady_step_ns(binary, os.path.join(root, pair[side])) for side in ("before", "after")}
        work = pair.get("samples_per_step", {"before": 1, "after": 1})
        pair["mean_step_ns"] = step
        pair["measured_speedup"] = round(step["before"] / work["before"] / (step["after"] / work["after"]), 3)
        print(f"{pair['name']}: {step['before'] / 1e6:.2f} -> {step['after'] / 1e6:.2f} ms, "
              f"{pair['measured_speedup']}x", flush=True)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main(argv):
    if len(argv) >= 2 and argv[1] == "--measure":
        here = os.path.dirname(os.path.abspath(__file__))
        measure(argv[2], argv[3] if len(argv) > 3 else os.path.join(here, "pairs.json"))
        return
    if len(argv) < 2:
        sys.exit(__doc__)
    torch_modules()
    torch.set_num_threads(1)
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="record_pairs_")
    try:
        for name in argv[2:] or list(TRACES):
            record(name, out_dir, scratch)  # one at a time: the host's two cores are shared
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(torch.__version__, "kineto" if torch.autograd.kineto_available() else "legacy profiler", flush=True)


if __name__ == "__main__":
    main(sys.argv)
