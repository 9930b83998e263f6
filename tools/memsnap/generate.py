#!/usr/bin/env python3
"""Synthetic PyTorch CUDA memory snapshots with known answers, for stepscope's memory tests.

Writes what `torch.cuda.memory._dump_snapshot()` writes (a pickle of plain dicts and lists:
`segments` with their `blocks`, `device_traces` of allocator actions with stack `frames`,
`allocator_settings`, `external_annotations`), from a small model of PyTorch's caching
allocator (2 MiB segments for requests up to 1 MiB, 20 MiB or rounded segments for larger
ones, best-fit blocks that split and coalesce, cached segments released and the request
retried before an out-of-memory). No torch needed: plain `pickle`.

Beside the snapshot, PATH.truth.json holds the answers: the peak's allocated and reserved
bytes split by class (parameters, gradients, optimizer_state, activations, temporaries,
unknown), each step's peak, and for an OOM the request, the free bytes cached in segments and
the largest free block.

Scenarios:
  training       parameters, an input batch per step (unknown to stepscope: no phase in its
                 frames), per-layer activations freed in backward, temporaries, gradients kept
                 from the first backward, Adam's state from the first step.
  fragmentation  many 3 MiB blocks in 20 MiB segments, every other one freed, then a 24 MiB
                 request that fits in no block although the cached free bytes exceed it.
  exhaustion     training whose activations outgrow the device: a plain out-of-memory.

Usage: generate.py --scenario training --out x.pickle [--steps 3 --layers 4 --hidden 1024
                   --batch 8 --capacity-mib 4096 --hold-outputs --expandable]
"""
import argparse
import json
import pickle

MiB = 1 << 20
SMALL = 1 << 20          # requests up to this go to the small pool
SMALL_SEGMENT = 2 * MiB
LARGE_SEGMENT = 20 * MiB
MIN_LARGE_ALLOC = 10 * MiB
ROUND = 2 * MiB
CLASSES = ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "unknown"]


def frame(filename, name, line=0):
    return {"name": name, "filename": filename, "line": line}


ALLOC_CPP = [
    frame("??", "torch::unwind::unwind()"),
    frame("??", "torch::CapturedTraceback::gather(bool, bool, bool)"),
    frame("memory_snapshot.cpp", "torch::cuda::(anonymous namespace)::gather_with_cpp()"),
    frame("CUDACachingAllocator.cpp",
          "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    frame("", "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"),
    frame("??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
]
FREE_CPP = [
    frame("??", "torch::unwind::unwind()"),
    frame("CUDACachingAllocator.cpp",
          "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::Block*)"),
    frame("??", "c10::TensorImpl::~TensorImpl()"),
]
PY_MAIN = [frame("/home/user/train.py", "main", 88), frame("/home/user/train.py", "<module>", 120)]
AUTOGRAD_THREAD = [
    frame("??", "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
    frame("??", "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
    frame("??", "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
    frame("??", "__clone"),
]
TORCH = "/usr/lib/python3/dist-packages/torch"


def stacks():
    """The stacks of each kind of allocation, built once so the pickle shares them as PyTorch's does."""
    linear_init = [frame(f"{TORCH}/nn/modules/linear.py", "__init__", 106),
                   frame("/home/user/model.py", "__init__", 21)] + PY_MAIN
    to_device = [frame(f"{TORCH}/nn/modules/module.py", "_apply", 780),
                 frame(f"{TORCH}/nn/modules/module.py", "to", 1152)] + PY_MAIN
    batch = [frame("/home/user/train.py", "get_batch", 40), frame("/home/user/train.py", "train_step", 61)] + PY_MAIN
    fwd = [frame(f"{TORCH}/nn/modules/linear.py", "forward", 117),
           frame(f"{TORCH}/nn/modules/module.py", "_call_impl", 1527),
           frame(f"{TORCH}/nn/modules/module.py", "_wrapped_call_impl", 1518),
           frame("/home/user/model.py", "forward", 30),
           frame(f"{TORCH}/nn/modules/module.py", "_call_impl", 1527),
           frame("/home/user/train.py", "train_step", 63)] + PY_MAIN
    act = [frame(f"{TORCH}/nn/functional.py", "gelu", 1500)] + fwd[1:]
    scratch = [frame(f"{TORCH}/nn/modules/linear.py", "forward", 118)] + fwd[1:]
    loss = [frame(f"{TORCH}/nn/functional.py", "cross_entropy", 3053),
            frame("/home/user/train.py", "train_step", 64)] + PY_MAIN
    bwd_engine = [frame("??", "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
                  frame("", "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)")] + AUTOGRAD_THREAD
    accumulate = [frame("??", "torch::autograd::AccumulateGrad::accumulateGrad(at::Tensor const&, at::Tensor&, at::Tensor const&)"),
                  frame("??", "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)")] + AUTOGRAD_THREAD
    make_grads = [frame(f"{TORCH}/autograd/__init__.py", "_make_grads", 88),
                  frame(f"{TORCH}/autograd/__init__.py", "backward", 251),
                  frame(f"{TORCH}/_tensor.py", "backward", 492),
                  frame("/home/user/train.py", "train_step", 65)] + PY_MAIN
    init_group = [frame(f"{TORCH}/optim/adam.py", "_init_group", 102),
                  frame(f"{TORCH}/optim/adam.py", "step", 157),
                  frame(f"{TORCH}/optim/optimizer.py", "wrapper", 373),
                  frame("/home/user/train.py", "train_step", 66)] + PY_MAIN
    adam_tmp = [frame(f"{TORCH}/optim/adam.py", "_multi_tensor_adam", 520),
                frame(f"{TORCH}/optim/adam.py", "adam", 307),
                frame(f"{TORCH}/optim/adam.py", "step", 166),
                frame(f"{TORCH}/optim/optimizer.py", "wrapper", 373),
                frame("/home/user/train.py", "train_step", 66)] + PY_MAIN
    frag = [frame("/home/user/fragment.py", "allocate_many", 12)] + PY_MAIN
    big = [frame(f"{TORCH}/nn/modules/linear.py", "forward", 117),
           frame(f"{TORCH}/nn/modules/module.py", "_call_impl", 1527),
           frame("/home/user/fragment.py", "big_layer", 30)] + PY_MAIN
    free_fwd = FREE_CPP + fwd[1:]
    free_bwd = FREE_CPP + AUTOGRAD_THREAD
    free_py = FREE_CPP + PY_MAIN
    return {k: (ALLOC_CPP + v) for k, v in dict(
        linear_init=linear_init, to_device=to_device, batch=batch, fwd=fwd, act=act, loss=loss,
        scratch=scratch, bwd_engine=bwd_engine, accumulate=accumulate, make_grads=make_grads, init_group=init_group,
        adam_tmp=adam_tmp, frag=frag, big=big).items()} | {"free_fwd": free_fwd, "free_bwd": free_bwd, "free_py": free_py}


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def segment_size(n):
    if n <= SMALL:
        return SMALL_SEGMENT
    if n < MIN_LARGE_ALLOC:
        return LARGE_SEGMENT
    return (n + ROUND - 1) // ROUND * ROUND


class OutOfMemory(Exception):
    pass


class Allocator:
    """PyTorch's caching allocator in miniature, one device, one stream."""

    def __init__(self, capacity, expandable=False):
        self.capacity = capacity
        self.expandable = expandable
        self.segments = []      # {address, size, small, blocks: [[addr, size, requested, klass, stack] or free]}
        self.next_addr = 0x7F0000000000
        self.trace = []
        self.time = 1_700_000_000_000_000
        self.live = {}          # addr -> (requested, klass, step)
        self.by_class = dict.fromkeys(CLASSES, 0)
        self.allocated = 0
        self.reserved = 0
        self.peak = None        # (allocated, reserved, by_class) at the first maximum
        self.step = 0
        self.step_peaks = {}
        self.oom = None

    def record(self, action, addr, size, frames, key="addr"):
        self.time += 7
        self.trace.append({"action": action, key: addr, "size": size, "stream": 0, "time_us": self.time, "frames": frames})

    def _find_block(self, small, size):
        best = None
        for seg in self.segments:
            if seg["small"] != small:
                continue
            for i, b in enumerate(seg["blocks"]):
                if b["klass"] is None and b["size"] >= size and (best is None or b["size"] < best[2]["size"]):
                    best = (seg, i, b)
        return best

    def _new_segment(self, small, size, frames):
        seg_size = segment_size(size)
        if self.reserved + seg_size > self.capacity:
            return None
        addr = self.next_addr
        self.next_addr += seg_size + 64 * MiB
        seg = {"address": addr, "size": seg_size, "small": small,
               "blocks": [{"addr": addr, "size": seg_size, "requested": 0, "klass": None, "stack": []}]}
        self.segments.append(seg)
        self.reserved += seg_size
        self.record("segment_alloc", addr, seg_size, frames)
        return (seg, 0, seg["blocks"][0])

    def _release_cached(self, frames):
        for seg in list(self.segments):
            if all(b["klass"] is None for b in seg["blocks"]):
                self.record("segment_free", seg["address"], seg["size"], frames)
                self.segments.remove(seg)
                self.reserved -= seg["size"]

    def largest_free(self, small=None):
        sizes = [b["size"] for s in self.segments if small is None or s["small"] == small
                 for b in s["blocks"] if b["klass"] is None]
        return max(sizes, default=0)

    def alloc(self, requested, klass, frames):
        size = round_size(requested)
        small = size <= SMALL
        found = self._find_block(small, size) or self._new_segment(small, size, frames)
        if found is None:
            self._release_cached(frames)
            found = self._find_block(small, size) or self._new_segment(small, size, frames)
        if found is None:
            device_free = self.capacity - self.reserved
            self.oom = {"requested": requested, "allocated": self.allocated, "reserved": self.reserved,
                        "cached_free": self.reserved - sum(
                            b["size"] for s in self.segments for b in s["blocks"] if b["klass"] is not None),
                        "largest_free_block": self.largest_free(small), "device_free": device_free,
                        "by_class": dict(self.by_class),
                        "cause": "fragmentation" if self.reserved - self.allocated >= requested else "exhaustion"}
            self.record("oom", device_free, requested, frames, key="device_free")
            raise OutOfMemory()
        seg, i, b = found
        remaining = b["size"] - size
        if (small and remaining >= 512) or (not small and remaining > SMALL):
            seg["blocks"].insert(i + 1, {"addr": b["addr"] + size, "size": remaining, "requested": 0, "klass": None, "stack": []})
            b["size"] = size
        b.update(requested=requested, klass=klass, stack=frames)
        self.live[b["addr"]] = (requested, klass)
        self.allocated += requested
        self.by_class[klass] += requested
        self.record("alloc", b["addr"], requested, frames)
        if self.peak is None or self.allocated > self.peak["allocated_bytes"]:
            self.peak = {"allocated_bytes": self.allocated, "reserved_bytes": self.reserved, "by_class": dict(self.by_class)}
        if self.step and self.allocated > self.step_peaks.get(self.step, {"allocated_bytes": -1})["allocated_bytes"]:
            self.step_peaks[self.step] = {"allocated_bytes": self.allocated, "by_class": dict(self.by_class)}
        return b["addr"]

    def free(self, addr, frames):
        requested, klass = self.live.pop(addr)
        self.allocated -= requested
        self.by_class[klass] -= requested
        self.record("free_requested", addr, requested, frames)
        self.record("free_completed", addr, requested, frames)
        for seg in self.segments:
            for i, b in enumerate(seg["blocks"]):
                if b["addr"] == addr:
                    b.update(klass=None, requested=0, stack=[])
                    self._coalesce(seg)
                    return

    @staticmethod
    def _coalesce(seg):
        out = []
        for b in seg["blocks"]:
            if out and out[-1]["klass"] is None and b["klass"] is None:
                out[-1]["size"] += b["size"]
            else:
                out.append(b)
        seg["blocks"] = out

    def snapshot(self, expandable):
        segments = []
        for s in sorted(self.segments, key=lambda s: s["address"]):
            blocks = [{"address": b["addr"], "size": b["size"], "requested_size": b["requested"],
                       "state": "inactive" if b["klass"] is None else "active_allocated", "frames": b["stack"]}
                      for b in s["blocks"]]
            allocated = sum(b["size"] for b in s["blocks"] if b["klass"] is not None)
            segments.append({"device": 0, "address": s["address"], "total_size": s["size"], "allocated_size": allocated,
                             "active_size": allocated,
                             "requested_size": sum(b["requested"] for b in s["blocks"] if b["klass"] is not None),
                             "stream": 0, "segment_type": "small" if s["small"] else "large",
                             "segment_pool_id": (0, 0), "is_expandable": expandable, "frames": [], "blocks": blocks})
        settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if expandable else "",
                    "max_split_size": -1, "garbage_collection_threshold": 0.0, "expandable_segments": expandable,
                    "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                    "pinned_use_cuda_host_register": False,
                    "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
        return {"segments": segments, "device_traces": [self.trace], "allocator_settings": settings,
                "external_annotations": []}


def training(a, args, st, ooms_ok=False):
    h, b = args.hidden, args.batch
    weight, bias = h * h * 4, h * 4
    params = []
    for layer in range(args.layers):
        params.append(a.alloc(weight, "parameters", st["linear_init"]))
        params.append(a.alloc(bias, "parameters", st["linear_init"]))
    grads = None
    states = None
    held = []
    for step in range(1, args.steps + 1):
        a.step = step
        batch = a.alloc(b * h * 4, "unknown", st["batch"])
        acts = []
        for layer in range(args.layers):
            tmp = a.alloc(b * h * 4 * 2, "temporaries", st["scratch"])       # a scratch buffer of the GEMM's epilogue
            acts.append(a.alloc(b * h * 4 * args.act_factor, "activations", st["fwd"]))  # saved for backward
            acts.append(a.alloc(b * h * 4 * args.act_factor, "activations", st["act"]))
            a.free(tmp, st["free_fwd"])
        logits = a.alloc(b * h * 4, "activations", st["loss"])
        for old in held:                       # the previous step's outputs, let go only now
            a.free(old, st["free_py"])
        held = [logits] if args.hold_outputs else []
        seed = a.alloc(512, "temporaries", st["make_grads"])
        new_grads = []
        for layer in reversed(range(args.layers)):
            gin = a.alloc(b * h * 4, "temporaries", st["bwd_engine"])
            if grads is None:
                new_grads.append(a.alloc(weight, "gradients", st["accumulate"]))
                new_grads.append(a.alloc(bias, "gradients", st["accumulate"]))
            a.free(acts.pop(), st["free_bwd"])
            a.free(acts.pop(), st["free_bwd"])
            a.free(gin, st["free_bwd"])
        a.free(seed, st["free_bwd"])
        if not args.hold_outputs:
            a.free(logits, st["free_py"])
        if grads is None:
            grads = new_grads
        if states is None:
            states = [a.alloc(size, "optimizer_state", st["init_group"])
                      for size in (weight, bias) * args.layers for _ in range(2)]
        tmps = [a.alloc(weight, "temporaries", st["adam_tmp"]) for _ in range(2)]
        for t in tmps:
            a.free(t, st["free_py"])
        a.free(batch, st["free_py"])


def fragmentation(a, args, st):
    blocks = [a.alloc(3 * MiB, "unknown", st["frag"]) for _ in range(args.fragments)]
    for addr in blocks[::2]:
        a.free(addr, st["free_py"])
    a.step = 0
    a.alloc(24 * MiB, "activations", st["big"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", choices=["training", "fragmentation", "exhaustion"], default="training")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--act-factor", type=int, default=4)
    p.add_argument("--fragments", type=int, default=36)
    p.add_argument("--capacity-mib", type=int, default=16384)
    p.add_argument("--hold-outputs", action="store_true", help="keep each step's logits until the next forward ends")
    p.add_argument("--expandable", action="store_true", help="record expandable_segments:True in the settings")
    p.add_argument("--protocol", type=int, default=4)
    args = p.parse_args()
    if args.scenario == "exhaustion" and args.capacity_mib == 16384:
        args.capacity_mib, args.batch = 128, 1024
    if args.scenario == "fragmentation" and args.capacity_mib == 16384:
        args.capacity_mib = 120
    a = Allocator(args.capacity_mib * MiB, args.expandable)
    st = stacks()
    try:
        if args.scenario == "fragmentation":
            fragmentation(a, args, st)
        else:
            training(a, args, st)
    except OutOfMemory:
        pass
    with open(args.out, "wb") as f:
        pickle.dump(a.snapshot(args.expandable), f, protocol=args.protocol)
    truth = {"scenario": args.scenario, "peak": a.peak, "steps": a.step_peaks, "oom": a.oom,
             "final": {"allocated_bytes": a.allocated, "reserved_bytes": a.reserved},
             "parameters_bytes": sum(v[0] for v in a.live.values() if v[1] == "parameters"),
             "expandable_segments": args.expandable, "entries": len(a.trace)}
    with open(args.out + ".truth.json", "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
