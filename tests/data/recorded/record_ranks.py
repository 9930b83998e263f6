#!/usr/bin/env python3
"""Records what one process and one trace cannot: two DDP ranks with a straggler, and the
monitor logs (nvidia-smi dmon and query, top) of a GPU-bound job.

  ddp_straggler  two ranks (gloo, both on cuda:0) of a DDP bf16 MLP; rank 1 spends 20 ms of
                 unprofiled host work before each forward, so rank 0 waits in every all-reduce.
                 Written as ddp_straggler/rank<r>.pt.trace.json.gz.
  monitor_logs   a GPU-bound bf16 job for ~8 s under `nvidia-smi dmon -s pucvmet -o T`,
                 `nvidia-smi --query-gpu=... --format=csv -lms 500` and `top -b -d 1`.
                 Written as monitor/{dmon,query,top}.log.

Usage: python3 record_ranks.py OUT_DIR [ddp_straggler] [monitor_logs]   (needs CUDA and torch)
"""
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from record import mlp, profile_steps, train_step


def ddp_rank(rank, out_dir, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = DDP(mlp(2048, 4), device_ids=[0])
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")

    def step(i):
        if rank == 1:
            time.sleep(0.02)  # this rank's slow input path, recorded by no op
        train_step(model, opt, x, y, amp=True)

    def leave_group():
        dist.barrier()
        dist.destroy_process_group()

    profile_steps(step, os.path.join(out_dir, "ddp_straggler", f"rank{rank}.pt.trace.json.gz"), before_write=leave_group)


def ddp_straggler(out_dir):
    os.makedirs(os.path.join(out_dir, "ddp_straggler"), exist_ok=True)
    mp.spawn(ddp_rank, args=(out_dir, 29511), nprocs=2, join=True)


QUERY = ("timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,"
         "temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active")


def monitor_logs(out_dir):
    folder = os.path.join(out_dir, "monitor")
    os.makedirs(folder, exist_ok=True)
    logs = {name: open(os.path.join(folder, name + ".log"), "w") for name in ("dmon", "query", "top")}
    monitors = [
        subprocess.Popen(["nvidia-smi", "dmon", "-s", "pucvmet", "-o", "T", "-d", "1", "-c", "8"], stdout=logs["dmon"]),
        subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv", "-lms", "500"], stdout=logs["query"]),
        subprocess.Popen(["top", "-b", "-d", "1", "-n", "8"], stdout=logs["top"]),
    ]
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.time() + 8
    while time.time() < end:  # back-to-back bf16 GEMMs: the GPU busy throughout
        for _ in range(50):
            a = torch.tanh(a @ a)
        torch.cuda.synchronize()
    for m in monitors:
        try:
            m.wait(timeout=3)
        except subprocess.TimeoutExpired:
            m.terminate()
    for f in logs.values():
        f.close()


SCENARIOS = {"ddp_straggler": ddp_straggler, "monitor_logs": monitor_logs}


def main(argv):
    if len(argv) < 2 or not torch.cuda.is_available():
        sys.exit(__doc__)
    failed = []
    for name in argv[2:] or SCENARIOS:
        t0 = time.time()
        try:
            SCENARIOS[name](argv[1])
        except Exception as e:  # one scenario's failure leaves the other
            failed.append(name)
            print(f"{name}: failed: {e!r}", flush=True)
        print(f"{name}: {time.time() - t0:.1f} s", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv)
