#!/usr/bin/env python3
"""Records small GPU training traces whose bottleneck is known by construction.

Each scenario is a few-second PyTorch job on one CUDA device, profiled with torch.profiler
(CPU + CUDA activities, shapes recorded) over a fixed schedule after a warm-up outside the
profiler, so cold start-up (cuBLAS handles, allocator growth) is not in the window. The trace is
written gzipped with mtime 0 as <scenario>.pt.trace.json.gz.

  input_bound     the DataLoader's per-sample transform sleeps; the GPU step is short
  sync_each_layer a NaN check (`bool(tensor)`) after every layer and `loss.item()` each step
  sync_serialised the same check on 4096-wide layers whose GEMMs take about as long as their dispatch
  sync_then_host_work  loss.item() each step, then 4 ms of op-free host work while the GPU idles
  checkpoint_every_2nd  torch.save of model and optimizer state every second step
  pageable_copy   a 256 MB pageable host tensor copied to the device every step, little compute
  launch_bound    a deep stack of tiny layers: thousands of microsecond kernels per step
  fp32_no_amp     large fp32 GEMMs with TF32 off and no autocast: GPU-bound at fp32 rate
  bf16_gpu_bound  the same GEMMs under bf16 autocast: the healthy control
  conv_fp32_no_amp  a stack of 3x3 convolutions in fp32 with TF32 off: GPU-bound at fp32 rate
  sdpa_bf16       transformer encoder layers (scaled dot-product attention) under bf16 autocast
  compiled_bf16   the bf16 MLP under torch.compile: fused Triton kernels, already compiled
  d2h_each_step   the full output copied to pageable host memory every step (metrics on the host)
  fp8_gemm        forward GEMMs in float8 (torch._scaled_mm), backward in bf16: GPU-bound, already low precision
  cuda_graph_step launch_bound's model with its whole step captured in one CUDA graph
  elementwise_fp32  twenty scale-shift-GELU layers over a wide fp32 activation: memory traffic, no GEMM
  empty_cache_each_step  torch.cuda.empty_cache() after every step: cudaFree and cudaMalloc each step
  loader_workers  input_bound's slow transform behind two DataLoader worker processes
  gpu_job_cpu_activity_only  bf16_gpu_bound's job profiled with the CPU activity alone: no GPU records
  inference_bf16  four transformer encoder layers under inference_mode and bf16 autocast: no backward
  pinned_prefetch pinned batches copied one step ahead on a side stream: the healthy copy
  cold_start      no warm-up, profiled from the process's first CUDA work (handles, autotuning, allocator)
  cudnn_retune    cudnn.benchmark on and the image size changing at two profiled steps: cuDNN re-times
  compile_recompile  torch.compile(dynamic=False) and a larger batch at one profiled step: a recompile
  zero_grad_foreach  zero_grad(set_to_none=False) on 64 parameters: one foreach kernel zeroes them all
  anomaly_mode    torch.autograd.set_detect_anomaly(True) left on
  unfused_attention  self-attention written out (scores materialised, softmax, matmul) in bf16
  activation_checkpoint  checkpointed blocks of a model that fits many times over: recompute only
  fp16_grad_scaler  fp16 autocast with a GradScaler, which reads found_inf back each step
  epoch_respawn   four batches an epoch from two non-persistent workers: fresh workers every 4th step
  zero_grad_per_param  SGD(foreach=False) and zero_grad(set_to_none=False): a fill kernel per gradient
  compiled_cuda_graphs  launch_bound's model under torch.compile(mode="reduce-overhead")

Usage: python3 record.py OUT_DIR [SCENARIO ...]   (needs a CUDA device and torch)
"""
import gzip
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.utils.checkpoint
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

WAIT, WARMUP, ACTIVE = 1, 2, 4


def mlp(width, depth, dtype=torch.float32):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).cuda().to(dtype)


def train_step(model, opt, x, y, amp):
    with record_function("forward"):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.mse_loss(model(x).float(), y)
    with record_function("backward"):
        opt.zero_grad(set_to_none=True)
        loss.backward()
    with record_function("optimizer"):
        opt.step()
    return loss


def training_job(model, shape, amp, fused=True, foreach=None):
    """Steps of `model` with AdamW on one fixed random batch: inputs and targets of `shape`."""
    opt = torch.optim.AdamW(model.parameters(), fused=fused, foreach=foreach)
    x, y = torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda")

    def step(i):
        train_step(model, opt, x, y, amp=amp)
    return step


class SlowSamples(Dataset):
    """Samples whose transform sleeps, as a heavy CPU augmentation would."""

    def __init__(self, width, sleep_s):
        self.width, self.sleep_s = width, sleep_s

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        time.sleep(self.sleep_s)
        return torch.randn(self.width), torch.randn(self.width)


def input_bound():
    model = mlp(1024, 4)
    opt = torch.optim.AdamW(model.parameters())
    batches = iter(DataLoader(SlowSamples(1024, 0.0015), batch_size=32, num_workers=0, pin_memory=True))

    def step(i):
        x, y = next(batches)
        train_step(model, opt, x.cuda(non_blocking=True), y.cuda(non_blocking=True), amp=True)
    return step


class CheckedMlp(nn.Module):
    """An MLP that checks every activation for NaN on the host: one device sync per layer."""

    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, h):
        for layer in self.layers:
            h = torch.relu(layer(h))
            if torch.isnan(h).any():
                raise FloatingPointError("NaN in activations")
        return h


def checked_mlp_job(width, depth, batch, fused):
    model = CheckedMlp(width, depth).cuda()
    opt = torch.optim.AdamW(model.parameters(), fused=fused)
    x, y = torch.randn(batch, width, device="cuda"), torch.randn(batch, width, device="cuda")

    def step(i):
        loss = train_step(model, opt, x, y, amp=True)
        print(f"step {i} loss {loss.item():.4f}", file=sys.stderr)
    return step


def sync_each_layer():
    return checked_mlp_job(512, 24, 256, fused=None)


def sync_serialised():
    # Each layer's GEMM (~0.1 ms) is about as long as the host's dispatch of the next, meant to
    # make the per-layer sync stop either side from overlapping the other.
    return checked_mlp_job(4096, 16, 2048, fused=True)


def sync_then_host_work():
    # loss.item() each step, then 4 ms of host work that records no op (metrics in plain
    # Python): the GPU, drained by the read, idles through it. Without the read the host work
    # would overlap the next step's GEMMs.
    model = mlp(4096, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")

    def step(i):
        loss = train_step(model, opt, x, y, amp=True)
        value = loss.item()
        time.sleep(0.004)
        print(f"step {i} loss {value:.4f}", file=sys.stderr)
    return step


def checkpoint_every_2nd():
    model = mlp(4096, 2)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(1024, 4096, device="cuda"), torch.randn(1024, 4096, device="cuda")
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")

    def step(i):
        train_step(model, opt, x, y, amp=True)
        if i % 2 == 0:
            with record_function("checkpoint"):
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    return step


def pageable_copy():
    model = mlp(1024, 2)
    opt = torch.optim.AdamW(model.parameters())
    host_batch = torch.randn(65536, 1024)  # 256 MB of pageable host memory
    y = torch.randn(1024, 1024, device="cuda")

    def step(i):
        big = host_batch.to("cuda")
        train_step(model, opt, big[:1024], y, amp=True)
    return step


def tiny_layers():
    return nn.Sequential(*[m for _ in range(16) for m in (nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU())]).cuda()


def launch_bound():
    model = tiny_layers()
    return training_job(model, (32, 64), amp=False, fused=None, foreach=False)


def gemm_job(amp):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return training_job(mlp(8192, 4), (8192, 8192), amp=amp, fused=None)


def conv_fp32_no_amp():
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    layers = []
    for _ in range(6):
        layers += [nn.Conv2d(128, 128, 3, padding=1), nn.ReLU()]
    model = nn.Sequential(*layers).cuda()
    return training_job(model, (64, 128, 64, 64), amp=False)


def sdpa_bf16():
    layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
    model = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).cuda()
    return training_job(model, (16, 1024, 1024), amp=True)


def compiled_bf16():
    model = torch.compile(mlp(4096, 4))
    return training_job(model, (8192, 4096), amp=True)


def d2h_each_step():
    # The whole output (256 MB of fp32) read back to pageable host memory every step, as a job
    # computing its metrics on the host would; the model's own GPU work is a few ms.
    model = mlp(4096, 2)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(16384, 4096, device="cuda"), torch.randn(16384, 4096, device="cuda")

    def step(i):
        train_step(model, opt, x, y, amp=True)
        with torch.no_grad():
            out = model(x).float().cpu()
        print(f"step {i} mean {out.mean().item():.4f}", file=sys.stderr)
    return step


class ScaledFp8Linear(torch.autograd.Function):
    """y = x w^T with both operands cast to float8 (e4m3, per-tensor scale 1) for the forward
    GEMM, as fp8 training recipes do; the backward GEMMs stay in bf16."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        one = torch.ones((), device=x.device)
        xq, wq = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        return torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w, grad.t() @ x


def fp8_gemm():
    weights = [nn.Parameter(torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) * 0.01)
               for _ in range(4)]
    opt = torch.optim.AdamW(weights, fused=True)
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def step(i):
        with record_function("forward"):
            h = x
            for w in weights:
                h = torch.relu(ScaledFp8Linear.apply(h, w))
            loss = nn.functional.mse_loss(h.float(), y.float())
        with record_function("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with record_function("optimizer"):
            opt.step()
    return step


def cuda_graph_step():
    # launch_bound's model with its whole step (forward, backward, optimizer) captured once in a
    # CUDA graph and replayed: one launch per step where launch_bound pays ~700.
    model = tiny_layers()
    opt = torch.optim.AdamW(model.parameters(), foreach=False, capturable=True)
    static_x, static_y = torch.randn(32, 64, device="cuda"), torch.randn(32, 64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step(model, opt, static_x, static_y, amp=False)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        nn.functional.mse_loss(model(static_x), static_y).backward()
        opt.step()
    x, y = torch.randn(32, 64, device="cuda"), torch.randn(32, 64, device="cuda")

    def step(i):
        static_x.copy_(x)
        static_y.copy_(y)
        with record_function("graph_replay"):
            graph.replay()
    return step


class ElementwiseChain(nn.Module):
    """Twenty scale-shift-GELU layers over a wide activation: no GEMM, all memory traffic."""

    def __init__(self, width, depth):
        super().__init__()
        self.scale = nn.ParameterList(nn.Parameter(torch.ones(width)) for _ in range(depth))
        self.shift = nn.ParameterList(nn.Parameter(torch.zeros(width)) for _ in range(depth))

    def forward(self, h):
        for a, b in zip(self.scale, self.shift):
            h = nn.functional.gelu(h * a + b)
        return h


def elementwise_fp32():
    model = ElementwiseChain(4096, 20).cuda()
    return training_job(model, (8192, 4096), amp=False)


def empty_cache_each_step():
    # torch.cuda.empty_cache() after every step hands the allocator's blocks back to the driver,
    # so each step pays cudaFree and then cudaMalloc again, both of which synchronise.
    model = mlp(4096, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")

    def step(i):
        train_step(model, opt, x, y, amp=True)
        torch.cuda.empty_cache()
    return step


def loader_workers():
    # Two worker processes, each transform sleeping 3 ms: a batch every ~48 ms, where the GPU
    # needs under a millisecond of it.
    model = mlp(1024, 4)
    opt = torch.optim.AdamW(model.parameters())
    loader = DataLoader(SlowSamples(1024, 0.003), batch_size=32, num_workers=2, pin_memory=True,
                        persistent_workers=True, prefetch_factor=2)
    batches = iter(loader)

    def step(i):
        x, y = next(batches)
        train_step(model, opt, x.cuda(non_blocking=True), y.cuda(non_blocking=True), amp=True)
    return step


def gpu_job_cpu_activity_only():
    # A GPU-bound job profiled with ProfilerActivity.CPU alone: the trace has the ops but no
    # runtime calls or kernels, as when CUPTI's records are lost or never asked for.
    return gemm_job(amp=True)


def inference_bf16():
    layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
    model = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).cuda().eval()
    x = torch.randn(32, 1024, 1024, device="cuda")

    def step(i):
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            with record_function("forward"):
                model(x)
    return step


def pinned_prefetch():
    # The healthy copy: pinned batches copied with non_blocking on a side stream one step ahead,
    # under GEMMs that take several times as long.
    model = mlp(4096, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    host = [torch.randn(8192, 4096).pin_memory() for _ in range(2)]
    y = torch.randn(8192, 4096, device="cuda")
    copy_stream = torch.cuda.Stream()
    pending = {}

    def prefetch(i):
        with torch.cuda.stream(copy_stream):
            pending[i] = host[i % 2].to("cuda", non_blocking=True)

    def step(i):
        if i not in pending:
            prefetch(i)
        torch.cuda.current_stream().wait_stream(copy_stream)
        x = pending.pop(i)
        x.record_stream(torch.cuda.current_stream())
        prefetch(i + 1)
        train_step(model, opt, x, y, amp=True)
    return step


def cold_start():
    # No warm-up and the profiler on from the first step: cuBLAS and cuDNN handles, the caching
    # allocator's growth, AdamW's state and cuDNN's autotuning all land in the profiled steps.
    torch.backends.cudnn.benchmark = True
    model = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(64 * 32 * 32, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(256, 64, 32, 32, device="cuda"), torch.randn(256, 1024, device="cuda")

    def step(i):
        train_step(model, opt, x, y, amp=True)
    return step


def conv_net(channels, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers).cuda()


def cudnn_retune():
    # cudnn.benchmark on, and the image size changes at two profiled steps: each new shape makes
    # cuDNN time its algorithms again inside the steady state.
    torch.backends.cudnn.benchmark = True
    model = conv_net(64, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    sizes = {4: 72, 6: 80}

    def step(i):
        side = sizes.get(i, 64)
        x = torch.randn(32, 64, side, side, device="cuda")
        train_step(model, opt, x, torch.randn_like(x), amp=True)
    return step


def compile_recompile():
    # torch.compile with static shapes; the batch grows at one profiled step, which compiles the
    # model again after the steady state began.
    model = torch.compile(mlp(2048, 4), dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), fused=True)

    def step(i):
        batch = 6144 if i == 5 else 4096
        x = torch.randn(batch, 2048, device="cuda")
        train_step(model, opt, x, torch.randn_like(x), amp=True)
    return step


def zero_grad_keeping_grads(model, opt):
    """fp32 steps that zero the gradients in place (zero_grad(set_to_none=False))."""
    x, y = torch.randn(256, 512, device="cuda"), torch.randn(256, 512, device="cuda")

    def step(i):
        with record_function("forward"):
            loss = nn.functional.mse_loss(model(x), y)
        with record_function("backward"):
            opt.zero_grad(set_to_none=False)
            loss.backward()
        with record_function("optimizer"):
            opt.step()
    return step


def zero_grad_foreach():
    # zero_grad(set_to_none=False) on 64 parameters. PyTorch 2.x zeroes them all with one foreach
    # kernel: the old per-gradient memset is gone, and so must be the finding.
    model = mlp(512, 32)
    return zero_grad_keeping_grads(model, torch.optim.AdamW(model.parameters(), fused=True))


def zero_grad_per_param():
    # An optimizer on the per-parameter path (foreach=False) zeroes each gradient with its own
    # kernel when zero_grad keeps them (set_to_none=False), and updates each one alone.
    model = mlp(512, 32)
    return zero_grad_keeping_grads(model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=False))


def compiled_cuda_graphs():
    # launch_bound's model under torch.compile(mode="reduce-overhead"): Inductor's kernels replayed
    # from CUDA graphs, the optimizer step left eager.
    model = torch.compile(tiny_layers(), mode="reduce-overhead")
    return training_job(model, (32, 64), amp=False)


def anomaly_mode():
    # torch.autograd.set_detect_anomaly(True) left on: every backward node checks its output for
    # NaN and reads the answer back.
    model = mlp(1024, 8)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    x, y = torch.randn(512, 1024, device="cuda"), torch.randn(512, 1024, device="cuda")

    def step(i):
        with torch.autograd.set_detect_anomaly(True):
            train_step(model, opt, x, y, amp=True)
    return step


class ManualAttention(nn.Module):
    """Self-attention written out: the seq x seq scores are materialised, softmaxed, multiplied."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)

    def forward(self, h):
        b, n, w = h.shape
        q, k, v = self.qkv(h).view(b, n, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(w // self.heads)
        mixed = torch.softmax(scores, dim=-1) @ v
        return self.out(mixed.transpose(1, 2).reshape(b, n, w))


def unfused_attention():
    model = nn.Sequential(*[ManualAttention(1024, 16) for _ in range(4)]).cuda()
    return training_job(model, (8, 2048, 1024), amp=True)


class CheckpointedMlp(nn.Module):
    """Blocks of two wide layers, each block recomputed in backward (activation checkpointing)."""

    def __init__(self, width, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
                                    for _ in range(blocks))

    def forward(self, h):
        for block in self.blocks:
            h = torch.utils.checkpoint.checkpoint(block, h, use_reentrant=False)
        return h


def activation_checkpoint():
    # Checkpointing a model that fits many times over in the GPU's memory: pure recompute cost.
    model = CheckpointedMlp(4096, 4).cuda()
    return training_job(model, (8192, 4096), amp=True)


def fp16_grad_scaler():
    # fp16 autocast with a GradScaler: scaler.step reads found_inf back every step.
    model = mlp(4096, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    scaler = torch.amp.GradScaler("cuda")
    x, y = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")

    def step(i):
        with record_function("forward"):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = nn.functional.mse_loss(model(x).float(), y)
        with record_function("backward"):
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
        with record_function("optimizer"):
            scaler.step(opt)
            scaler.update()
    return step


class FewSamples(SlowSamples):
    def __len__(self):
        return 128


def epoch_respawn():
    # Four batches an epoch and workers that are not persistent: every fourth step starts an
    # epoch and waits for two fresh worker processes.
    model = mlp(1024, 4)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    loader = DataLoader(FewSamples(1024, 0.0), batch_size=32, num_workers=2, pin_memory=True)
    batches = iter(loader)

    def step(i):
        nonlocal batches
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        train_step(model, opt, x.cuda(non_blocking=True), y.cuda(non_blocking=True), amp=True)
    return step


SCENARIOS = {
    "input_bound": input_bound,
    "sync_each_layer": sync_each_layer,
    "sync_serialised": sync_serialised,
    "sync_then_host_work": sync_then_host_work,
    "checkpoint_every_2nd": checkpoint_every_2nd,
    "pageable_copy": pageable_copy,
    "launch_bound": launch_bound,
    "fp32_no_amp": lambda: gemm_job(amp=False),
    "bf16_gpu_bound": lambda: gemm_job(amp=True),
    "conv_fp32_no_amp": conv_fp32_no_amp,
    "sdpa_bf16": sdpa_bf16,
    "compiled_bf16": compiled_bf16,
    "d2h_each_step": d2h_each_step,
    "fp8_gemm": fp8_gemm,
    "cuda_graph_step": cuda_graph_step,
    "elementwise_fp32": elementwise_fp32,
    "empty_cache_each_step": empty_cache_each_step,
    "loader_workers": loader_workers,
    "gpu_job_cpu_activity_only": gpu_job_cpu_activity_only,
    "inference_bf16": inference_bf16,
    "pinned_prefetch": pinned_prefetch,
    "cold_start": cold_start,
    "cudnn_retune": cudnn_retune,
    "compile_recompile": compile_recompile,
    "zero_grad_foreach": zero_grad_foreach,
    "zero_grad_per_param": zero_grad_per_param,
    "compiled_cuda_graphs": compiled_cuda_graphs,
    "anomaly_mode": anomaly_mode,
    "unfused_attention": unfused_attention,
    "activation_checkpoint": activation_checkpoint,
    "fp16_grad_scaler": fp16_grad_scaler,
    "epoch_respawn": epoch_respawn,
}

# Scenarios recorded another way than the rest: (warm-up steps, (wait, warmup, active), activities).
# cold_start must also be the first CUDA work of its process, so main() runs it in a fresh one.
CPU_AND_CUDA = (ProfilerActivity.CPU, ProfilerActivity.CUDA)
RECORDING = {
    "cold_start": (0, (0, 0, 5), CPU_AND_CUDA),
    "gpu_job_cpu_activity_only": (3, (WAIT, WARMUP, ACTIVE), (ProfilerActivity.CPU,)),
    "epoch_respawn": (4, (WAIT, WARMUP, 16), CPU_AND_CUDA),
}
FRESH_PROCESS = {"cold_start"}


def profile_steps(step, out, warm_up=3, phases=(WAIT, WARMUP, ACTIVE), activities=CPU_AND_CUDA, before_write=None):
    """Runs `warm_up` steps unprofiled, then the profiler's schedule, and writes the trace gzipped
    (mtime 0) to `out`; `before_write` runs once the profiler has stopped."""
    for i in range(warm_up):  # outside the profiler: handles, autotuning, allocator growth
        step(-1 - i)
    torch.cuda.synchronize()
    tmp = tempfile.mkdtemp()
    raw = os.path.join(tmp, "trace.json")
    wait, warmup, active = phases
    with profile(activities=list(activities), record_shapes=True,
                 schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
        for i in range(wait + warmup + active):
            step(i)
            prof.step()
    torch.cuda.synchronize()
    if before_write:
        before_write()
    with open(raw, "rb") as src, gzip.GzipFile(out, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)


def record(name, out_dir):
    warm_up, phases, activities = RECORDING.get(name, (3, (WAIT, WARMUP, ACTIVE), CPU_AND_CUDA))
    if name in FRESH_PROCESS and torch.cuda.is_initialized():
        raise RuntimeError(f"{name} must be the first CUDA work of its process")
    torch.manual_seed(0)
    out = os.path.join(out_dir, f"{name}.pt.trace.json.gz")
    profile_steps(SCENARIOS[name](), out, warm_up, phases, activities)
    print(f"{name}: {os.path.getsize(out)} bytes", flush=True)


def main(argv):
    if len(argv) < 2 or not torch.cuda.is_available():
        sys.exit(__doc__)
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    names = argv[2:] or list(SCENARIOS)
    for name in names:
        t0 = time.time()
        try:
            if name in FRESH_PROCESS and len(names) > 1:
                subprocess.run([sys.executable, __file__, out_dir, name], check=True)
            else:
                record(name, out_dir)
        except Exception as e:  # one scenario's failure (no Triton, ...) leaves the others
            failed.append(name)
            print(f"{name}: failed: {e!r}", flush=True)
        print(f"  {time.time() - t0:.1f} s", flush=True)
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv)
