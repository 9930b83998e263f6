#!/usr/bin/env python3
"""Records the example trace that `make run` analyses.

A small CPU training loop under torch.profiler: an MLP on synthetic data whose DataLoader
(num_workers=0) spends about four milliseconds per sample in its transform, so the main thread
waits on input for most of each step -- an input-bound job with a known cause.

Usage: python3 examples/record_example.py [OUT.json.gz]   (Debian: apt-get install python3-torch)
"""
import gzip
import os
import shutil
import sys
import tempfile
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

SLEEP_PER_SAMPLE_S = 0.004
BATCH = 16
FEATURES = 256


class SlowDataset(Dataset):
    """Synthetic samples with a deliberately slow per-sample transform."""

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(SLEEP_PER_SAMPLE_S)
        g = torch.Generator().manual_seed(i)
        return torch.randn(FEATURES, generator=g), torch.randint(0, 10, (1,), generator=g).squeeze()


def main(out_path):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(FEATURES, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(SlowDataset(), batch_size=BATCH, num_workers=0)
    tmp = tempfile.mkdtemp()
    raw = os.path.join(tmp, "trace.json")
    sched = schedule(wait=1, warmup=1, active=6, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
        for step, (x, y) in enumerate(loader):
            with record_function("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with record_function("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with record_function("optimizer"):
                opt.step()
            prof.step()
            if step >= 8:
                break
    with open(raw, "rb") as src, gzip.GzipFile(out_path, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/cpu_training_step.pt.trace.json.gz")
