#include "model.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "gpus.hpp"
#include "kernels.hpp"
#include "rng.hpp"

namespace stepscope::tracegen {

std::string marker_label(const Params& p, int index);  // a custom marker's name for step `index`

namespace {

constexpr std::string_view kLoaderWorkers =
    "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
constexpr std::string_view kLoaderMain =
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
// An exhausted iterator's last __next__ (it raises StopIteration at once).
constexpr double kExhaustedFetchUs = 30;
// Events hold string_views; the few composed names live here for the whole run (node-based
// set: references stay valid as it grows).
std::string_view intern(std::string s) {
  static std::mutex mu;
  static std::unordered_set<std::string> names;
  const std::lock_guard<std::mutex> lock(mu);
  return *names.insert(std::move(s)).first;
}

class StepRecipe {
 public:
  StepRecipe(const StepContext& ctx, std::vector<Event>& out, Counters& ids)
      : c_(ctx),
        p_(*ctx.p),
        gpu_(p_.platform != Platform::Cpu),
        k_(kernels_for(p_.platform, p_.tensor_cores, gpu_model(p_.gpu_name).major, p_.fp32_aten)),
        fk_(footgun_kernels()),
        b_(p_.platform, out, ids),
        out_(out),
        ids_(ids),
        rng_(p_.seed, static_cast<std::uint64_t>(ctx.rank), static_cast<std::uint64_t>(ctx.index),
             1),
        cs_(compute_stream(p_.platform)),
        ms_(comm_stream(p_.platform)) {
    speed_ = std::max(0.5, 1.0 + p_.jitter * rng_.normal());
    if (ctx.rank == p_.straggler_rank) speed_ *= p_.straggler_factor;
    comm_ = gpu_ && has_collectives(p_);
    backward_thread_ = gpu_ ? kAutogradThread : kMainThread;
    legacy_ = p_.legacy_dialect();
    if (gpu_ && ctx.gpu_free > 0) b_.set_stream_free(cs_, ctx.gpu_free);
    if (gpu_ && p_.copy_stream_blocking) {
      copy_stream_ = kCopyStream;
      b_.serialise_streams(true);
    }
  }

  StepResult run() {
    StepResult r;
    const int number = p_.first_step + c_.index;
    b_.set_now(kMainThread, c_.start);
    // Without step markers the (unwritten) marker still bounds the window: it opens and closes
    // with the first and last host event. A custom marker (a serving iteration, a harness's
    // warmup/measure range) is written under its own name and bounds the window the same way.
    if (p_.custom_marker()) {
      r.profiler_step = b_.open(kMainThread, EvType::UserAnnotation, intern(marker_label(p_, c_.index)));
      out_[r.profiler_step].role = HostRole::Marker;
    } else {
      r.profiler_step = b_.open(kMainThread, EvType::UserAnnotation, "ProfilerStep#");
      out_[r.profiler_step].step_number = number;
    }
    out_[r.profiler_step].step_marker = true;
    if (p_.step_markers) host(kMainThread, 6);
    if (c_.launch_block_until >= 0) b_.block_next_launch_until(c_.launch_block_until);
    if (c_.index == 0 && p_.cold_start_us > 0) b_.delay_next_launch(us_to_ns(p_.cold_start_us));
    if (p_.workload == "decode") {
      decode_iteration();
    } else if (p_.workload == "frontend") {
      frontend_session();
    } else if (p_.workload == "harness") {
      timing_repetition();
    } else if (p_.training) {
      training_step(r, number);
    } else {
      inference_pass();
    }
    if (gpu_ && p_.final_device_sync && c_.index == p_.steps - 1) b_.device_sync(kMainThread, host_ns(4));
    if (p_.step_markers) host(kMainThread, 5);
    b_.close(kMainThread);
    r.host_end = out_[r.profiler_step].end();
    r.window_end = r.host_end;
    if (gpu_) {
      gpu_span(r);
      if (r.gpu_end >= 0) r.window_end = std::max(r.window_end, r.gpu_end);
      // Kineto of 2021 wrote no GPU-side step ranges.
      if (p_.step_markers && !legacy_ && r.gpu_start >= 0) add_gpu_step_annotation(r);
    }
    return r;
  }

 private:
  // ---- timing helpers ----
  ns_t host_ns(double us) { return rng_.vary(us * 1000.0, p_.jitter); }
  void host(int th, double us) { b_.work(th, host_ns(us)); }
  ns_t gpu_ns(double us) { return rng_.vary(us * 1000.0 * speed_, p_.jitter / 2); }
  ns_t launch_ns() { return host_ns(p_.launch_us); }

  void open_op(int th, std::string_view name, double lead_us = 1.0) {
    b_.open(th, EvType::CpuOp, name);
    host(th, lead_us);
  }
  void open_annotation(int th, std::string_view name, double lead_us = 2.0) {
    b_.open(th, EvType::UserAnnotation, name);
    host(th, lead_us);
  }
  void close(int th, double tail_us = 1.0) {
    host(th, tail_us);
    b_.close(th);
    // A result is read back once the outermost op that produced it has returned.
    if (pending_readback_[static_cast<std::size_t>(th)] && !b_.inside_op(th)) {
      pending_readback_[static_cast<std::size_t>(th)] = false;
      readback(th);
    }
  }

  // An aten op that runs one kernel on GPU platforms, or does the work itself on the CPU.
  void kernel_op(int th, std::string_view op, std::string_view inner, const KernelSpec& k,
                 double gpu_us, bool ext_api = false) {
    open_op(th, op, p_.op_us * 0.3);
    if (!inner.empty()) open_op(th, inner, p_.op_us * 0.3);
    const std::int64_t block = allocate(th, kActivationBytes);
    if (gpu_) {
      b_.launch_kernel(th, k, GpuClass::Compute, cs_, gpu_ns(gpu_us), launch_ns(), wait_ep_, ext_api);
    } else {
      b_.work(th, gpu_ns(gpu_us));
    }
    release(th, block, kActivationBytes);
    produced(th);
    if (!inner.empty()) close(th, p_.op_us * 0.2);
    close(th, p_.op_us * 0.2);
  }

  // ---- profiler options and per-op habits ----
  static constexpr std::int64_t kActivationBytes = 262'144;  // one op's output (64 x 256 x 4 bytes)

  // profile_memory: the caching allocator hands out a block (the op's output) ...
  std::int64_t allocate(int th, std::int64_t bytes) {
    if (!p_.profile_memory) return -1;
    const std::int64_t addr = ids_.next_addr;
    ids_.next_addr += bytes;
    ids_.allocated += bytes;
    memory_event(th, addr, bytes);
    return addr;
  }
  // ... and takes it back when the op's temporary dies.
  void release(int th, std::int64_t addr, std::int64_t bytes) {
    if (addr < 0) return;
    ids_.allocated -= bytes;
    memory_event(th, addr, -bytes);
  }
  void memory_event(int th, std::int64_t addr, std::int64_t bytes) {
    Event e;
    e.type = EvType::MemoryInstant;
    e.name = "[memory]";
    e.thread = th;
    e.ts = b_.now(th);
    e.bytes = bytes;
    e.addr = addr;
    e.total_allocated = ids_.allocated;
    e.ev_idx = ids_.ev_idx++;
    out_.push_back(e);
    host(th, 0.3);
  }

  // with_stack: Python frames; those that only wait (an event loop's select, a parked thread, the
  // main thread blocked in run_backward) count as nothing in the partition.
  void py_open(int th, std::string_view name, double lead_us = 0.3, bool waits = false) {
    const std::size_t i = b_.open_frame(th, name);
    auto& stack = py_stack_[static_cast<std::size_t>(th)];
    out_[i].py_id = ids_.py_id++;
    out_[i].py_parent = stack.empty() ? 0 : stack.back();
    if (waits) out_[i].role = HostRole::Marker;
    stack.push_back(out_[i].py_id);
    host(th, lead_us);
  }
  void py_close(int th, double tail_us = 0.2) {
    host(th, tail_us);
    b_.close(th);
    py_stack_[static_cast<std::size_t>(th)].pop_back();
  }
  // An nn.Module call on the Python thread: _wrapped_call_impl > _call_impl > forward > the
  // built-in it calls (the innermost py_frames of them), around `body`.
  template <class Body>
  void module_call(int th, std::string_view forward, std::string_view builtin, Body&& body) {
    if (!p_.with_stack || th != kMainThread) return body();
    const std::array<std::string_view, 4> chain = {"torch/nn/modules/module.py(1751): _wrapped_call_impl",
                                                   "torch/nn/modules/module.py(1762): _call_impl", forward, builtin};
    const int n = std::clamp(p_.py_frames, 1, 4);
    for (int i = 4 - n; i < 4; ++i) py_open(th, chain[static_cast<std::size_t>(i)]);
    body();
    for (int i = 0; i < n; ++i) py_close(th);
  }
  // Plain Python frames (not a module call) around `body`.
  template <class Body>
  void frames(int th, std::initializer_list<std::string_view> names, Body&& body, bool waits = false) {
    if (!p_.with_stack || th != kMainThread) return body();
    for (auto n : names) py_open(th, n, 0.3, waits);
    body();
    for (std::size_t i = 0; i < names.size(); ++i) py_close(th);
  }

  // A debugging habit: every op's result read back on the host (.item()) before the next launch,
  // then some Python (no op recorded) with the GPU queue empty.
  void produced(int th) {
    if (p_.readback_us > 0 && gpu_) pending_readback_[static_cast<std::size_t>(th)] = true;
  }
  void readback(int th) {
    if (p_.readback_us <= 0 || !gpu_) return;
    item(th);
    host(th, p_.readback_us);
  }

  // An op (nested names, outermost first) whose innermost launches several kernels in order.
  void multi_kernel_op(int th, const std::vector<std::string_view>& ops,
                       const std::vector<std::pair<const KernelSpec*, double>>& kernels) {
    for (auto op : ops) open_op(th, op, p_.op_us * 0.3);
    launch_all(th, kernels);
    produced(th);
    for (std::size_t i = 0; i < ops.size(); ++i) close(th, p_.op_us * 0.2);
  }

  void launch_all(int th, const std::vector<std::pair<const KernelSpec*, double>>& kernels) {
    for (const auto& [k, us] : kernels) {
      if (gpu_) {
        b_.launch_kernel(th, *k, GpuClass::Compute, cs_, gpu_ns(us), launch_ns(), wait_ep_);
      } else {
        b_.work(th, gpu_ns(us));
      }
    }
  }

  void training_step(StepResult& r, int number) {
    frames(kMainThread, {"torch/utils/data/dataloader.py(708): __next__"}, [&] { fetch_batch(number); });
    if (p_.cpu_item) cpu_item();
    if (gpu_) copy_batch();
    frames(kMainThread, {"torch/optim/optimizer.py(955): zero_grad"}, [&] { zero_grad(); });
    frames(kMainThread,
           {"torch/nn/modules/module.py(1751): _wrapped_call_impl", "torch/nn/modules/module.py(1762): _call_impl",
            "train.py(41): forward"},
           [&] { forward(); });
    if (p_.mid_sync) mid_step_sync();
    if (p_.item_syncs >= 2) item();  // loss.item() for logging, right after forward
    // loss.backward(): the main thread waits in run_backward while the autograd thread works.
    frames(kMainThread,
           {"torch/_tensor.py(626): backward", "torch/autograd/__init__.py(347): backward",
            "torch/autograd/graph.py(823): _engine_run_backward",
            "<method 'run_backward' of 'torch._C._EngineBase' objects>"},
           [&] { backward(r); }, true);
    if (comm_ && !p_.overlap) allreduce_after_backward(r);
    if (p_.item_syncs >= 3) item();  // the gradient norm read on the host before the step
    frames(kMainThread, {"torch/optim/optimizer.py(485): wrapper", "torch/optim/adamw.py(209): step"},
           [&] { optimizer_step(); });
    if (p_.item_syncs >= 1) loss_item();
    if (p_.ckpt_every > 0 && number % p_.ckpt_every == 0) checkpoint();
  }

  // One forward pass (inference or a first cold call): input to the GPU, the blocks, the output
  // back to the host.
  void inference_pass() {
    for (int i = 0; gpu_ && c_.index == 0 && i < p_.param_moves; ++i) move_module();
    if (gpu_) copy_tensor(static_cast<std::int64_t>(p_.batch_mb * 1e6), p_.pinned ? k_.h2d_pinned : k_.h2d_pageable);
    forward();
    if (gpu_) output_to_host();
  }

  void output_to_host() {
    open_op(kMainThread, "aten::to", 2);
    open_op(kMainThread, "aten::_to_copy", 2);
    open_op(kMainThread, "aten::copy_", 2);
    const auto bytes = static_cast<std::int64_t>(std::max(64.0, p_.batch_mb * 1e6 / 64));
    const ns_t dur = rng_.vary(static_cast<double>(bytes) / 12.0, p_.jitter / 2) + 1'500;
    b_.copy(kMainThread, GpuClass::DtoH, k_.d2h_pageable, bytes, dur, cs_, false, false, host_ns(7));
    b_.sync(kMainThread, cs_, host_ns(3));
    close(kMainThread);
    close(kMainThread);
    close(kMainThread);
  }

  // .item() on a CPU tensor: the same two ops as on a GPU tensor, but no copy and no sync; it is
  // host work, whatever its name.
  void cpu_item() {
    const std::size_t item = b_.open(kMainThread, EvType::CpuOp, "aten::item");
    host(kMainThread, 1.5);
    const std::size_t dense = b_.open(kMainThread, EvType::CpuOp, "aten::_local_scalar_dense");
    host(kMainThread, 2);
    close(kMainThread, 0.5);
    close(kMainThread, 0.5);
    out_[item].role = HostRole::Op;
    out_[dense].role = HostRole::Op;
  }

  // ---- runs that are not a training loop ----

  // One iteration of a serving engine's decode loop (vLLM-style): the scheduler's inputs copied
  // in, the model's kernels (one CUDA graph replay, or launched one by one), greedy sampling, and
  // the sampled token ids copied back while the host waits.
  void decode_iteration() {
    const ServingKernels& s = serving_kernels();
    host(kMainThread, 25);  // scheduling (Python, no ops recorded)
    for (int i = 0; i < 3; ++i) copy_tensor(4096, k_.h2d_pinned);  // token ids, positions, slot mapping
    struct Op {
      std::string_view op;
      const KernelSpec* k;
      double us;
    };
    std::vector<Op> ops = {{"aten::embedding", s.embedding, p_.eltwise_us}};
    const double g = p_.gemm_us;
    for (int l = 0; l < p_.layers; ++l) {
      if (l == 0) {
        ops.push_back({"_C::rms_norm", s.rms_norm, p_.norm_us});
      } else {
        ops.push_back({"_C::fused_add_rms_norm", s.fused_add_rms_norm, p_.norm_us});
      }
      ops.insert(ops.end(), {{"aten::mm", s.gemm, g * 0.75},
                             {"_C::rotary_embedding", s.rotary, p_.eltwise_us * 0.6},
                             {"vllm::unified_attention", s.attention, p_.attn_us},
                             {"aten::mm", s.gemm, g * 0.5},
                             {"_C::fused_add_rms_norm", s.fused_add_rms_norm, p_.norm_us},
                             {"aten::mm", s.gemm, g * 2},
                             {"_C::silu_and_mul", s.act_and_mul, p_.eltwise_us * 1.4},
                             {"aten::mm", s.gemm, g}});
    }
    ops.insert(ops.end(), {{"_C::fused_add_rms_norm", s.fused_add_rms_norm, p_.norm_us}, {"aten::mm", s.gemm, g * 3}});
    b_.set_phase(kMainThread, Stage::Forward);
    if (p_.cuda_graph) {
      std::vector<std::pair<const KernelSpec*, ns_t>> ks;
      for (const Op& o : ops) ks.emplace_back(o.k, gpu_ns(o.us));
      b_.launch_graph(kMainThread, ks, cs_, host_ns(12), rng_.vary(1'000, p_.jitter));
    } else {
      for (const Op& o : ops) kernel_op(kMainThread, o.op, "", *o.k, o.us);
    }
    b_.set_phase(kMainThread, Stage::Other);
    kernel_op(kMainThread, "aten::argmax", "", *s.argmax, 8);
    // The sampled token ids to the host: the copy queues behind the step's kernels, the host waits.
    open_op(kMainThread, "aten::to", 2);
    open_op(kMainThread, "aten::_to_copy", 2);
    open_op(kMainThread, "aten::copy_", 2);
    b_.copy(kMainThread, GpuClass::DtoH, k_.d2h_item, 256, 1'700, cs_, false, false, host_ns(6));
    b_.sync(kMainThread, cs_, host_ns(3));
    close(kMainThread);
    close(kMainThread);
    close(kMainThread);
    host(kMainThread, 30);  // detokenise, update the requests (Python)
  }

  // One repetition of a kernel benchmark: events around one GEMM, then wait for it.
  void timing_repetition() {
    const Api& api = api_for(p_.platform);
    b_.runtime(kMainThread, api.event_record, api.event_record_id, host_ns(4));  // start.record()
    kernel_op(kMainThread, "aten::mm", "", *k_.gemm_fwd, p_.gemm_us, true);
    b_.runtime(kMainThread, api.event_record, api.event_record_id, host_ns(4));  // end.record()
    b_.event_sync(kMainThread, cs_, host_ns(3));                                  // end.synchronize()
    b_.device_sync(kMainThread, host_ns(4));                                      // torch.cuda.synchronize()
    b_.runtime(kMainThread, api.event_elapsed, api.event_elapsed_id, host_ns(2)); // start.elapsed_time(end)
    host(kMainThread, 8);
  }

  // model.cuda() before a one-shot pass: one module's parameters moved by a blocking copy from
  // pageable memory.
  void move_module() {
    open_annotation(kMainThread, "Module._apply", 3);
    open_op(kMainThread, "aten::to", 2);
    open_op(kMainThread, "aten::_to_copy", 2);
    open_op(kMainThread, "aten::copy_", 2);
    const double bytes = p_.param_move_mb * 1e6;
    const ns_t dur = rng_.vary(bytes / p_.h2d_gbps, p_.jitter / 2) + 1'500;
    b_.copy(kMainThread, GpuClass::HtoD, k_.h2d_pageable, static_cast<std::int64_t>(bytes), dur, cs_, true, true,
            host_ns(7), true);
    close(kMainThread);
    close(kMainThread);
    close(kMainThread);
    close(kMainThread, 4);
  }

  // A Python-only API server (uvicorn + FastAPI) for the whole session: the event loop waits in
  // select and handles requests (tokenising them), worker threads stay parked in a queue. No op,
  // no runtime call, no GPU work.
  void frontend_session() {
    const ns_t t0 = c_.start;
    const ns_t end = t0 + us_to_ns(p_.session_s * 1e6);
    static constexpr std::string_view kWorker[] = {
        "/usr/lib/python3.11/threading.py(1002): _bootstrap", "/usr/lib/python3.11/threading.py(1045): _bootstrap_inner",
        "/usr/lib/python3.11/threading.py(982): run", "/usr/lib/python3.11/concurrent/futures/thread.py(81): _worker",
        "/usr/lib/python3.11/queue.py(154): get", "/usr/lib/python3.11/threading.py(320): wait",
        "<method 'acquire' of '_thread.lock' objects>"};
    for (int w = 0; w < p_.worker_threads; ++w) {
      const int th = kAutogradThread + 1 + w;
      b_.set_now(th, t0 + host_ns(3.0 + w));
      for (auto f : kWorker) py_open(th, f, 0.5, true);
      b_.set_now(th, end - us_to_ns(40) + host_ns(3.0 + w));
      for (std::size_t i = 0; i < std::size(kWorker); ++i) py_close(th, 0.5);
    }
    static constexpr std::string_view kLoop[] = {
        "/opt/venv/lib/python3.11/site-packages/uvicorn/server.py(66): run",
        "/usr/lib/python3.11/asyncio/runners.py(118): run",
        "/usr/lib/python3.11/asyncio/base_events.py(640): run_until_complete",
        "/usr/lib/python3.11/asyncio/base_events.py(607): run_forever"};
    const int th = kMainThread;
    for (auto f : kLoop) py_open(th, f, 0.5, true);
    const ns_t interval = (end - t0 - us_to_ns(200)) / std::max(1, p_.requests);
    for (int r = 0; r < p_.requests; ++r) {
      py_open(th, "/usr/lib/python3.11/asyncio/base_events.py(1871): _run_once", 0.5, true);
      py_open(th, "/usr/lib/python3.11/selectors.py(451): select", 0.5, true);
      // Blocked in epoll until the next request arrives.
      b_.set_now(th, std::max(b_.now(th), t0 + (r + 1) * interval - rng_.vary(interval / 3.0, 0.3)));
      py_close(th, 1);
      handle_request(th);
      py_close(th, 0.5);
    }
    b_.set_now(th, std::max(b_.now(th), end - us_to_ns(20)));
    for (std::size_t i = 0; i < std::size(kLoop); ++i) py_close(th, 0.5);
  }

  void handle_request(int th) {
    static constexpr std::string_view kChain[] = {
        "/usr/lib/python3.11/asyncio/events.py(80): _run",
        "/opt/venv/lib/python3.11/site-packages/uvicorn/protocols/http/httptools_impl.py(409): run_asgi",
        "/opt/venv/lib/python3.11/site-packages/uvicorn/middleware/proxy_headers.py(60): __call__",
        "/opt/venv/lib/python3.11/site-packages/fastapi/applications.py(1054): __call__",
        "/opt/venv/lib/python3.11/site-packages/starlette/routing.py(715): __call__",
        "/opt/venv/lib/python3.11/site-packages/fastapi/routing.py(301): app",
        "/srv/app/server/api.py(88): generate"};
    for (auto f : kChain) py_open(th, f, 3);
    py_open(th, "/srv/app/server/tokenize.py(31): encode", 2);
    py_open(th, "/opt/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py(2600): encode", 6);
    py_open(th, "<built-in method encode of tokenizers.Tokenizer object at 0x7f2b3c1d8e70>", 1);
    host(th, 900);
    py_close(th, 1);
    py_close(th, 4);
    py_close(th, 2);
    for (auto [f, us] : {std::pair<std::string_view, double>{"/opt/venv/lib/python3.11/site-packages/pydantic/main.py(212): __init__", 40},
                         {"/usr/lib/python3.11/asyncio/queues.py(136): put_nowait", 8},
                         {"/usr/lib/python3.11/json/__init__.py(231): dumps", 30}}) {
      py_open(th, f, 1);
      host(th, us);
      py_close(th, 1);
    }
    for (std::size_t i = 0; i < std::size(kChain); ++i) py_close(th, 2);
  }

  // ---- step phases ----
  void fetch_batch(int number) {
    double wait = p_.fetch_us;
    if (p_.stall_every > 0 && number % p_.stall_every == 0) wait = p_.stall_us;
    const bool epoch_start = p_.epoch_steps > 0 && number % p_.epoch_steps == 0;
    if (epoch_start) wait = p_.epoch_stall_us;
    const bool workers = p_.num_workers > 0;
    // The ended epoch's iterator is asked once more and raises StopIteration: a short fetch of
    // its own before the new iterator's first.
    if (epoch_start) {
      open_annotation(kMainThread, workers ? kLoaderWorkers : kLoaderMain, 3);
      host(kMainThread, kExhaustedFetchUs);
      close(kMainThread, 2);
    }
    open_annotation(kMainThread, workers ? kLoaderWorkers : kLoaderMain, 3);
    if (workers) {
      host(kMainThread, wait);
    } else {
      // Single-process loading: Python transforms (no ops recorded), then the collate.
      host(kMainThread, wait * 0.9);
      for (int i = 0; i < 2; ++i) {
        open_op(kMainThread, "aten::stack", 2);
        open_op(kMainThread, "aten::cat", 2);
        host(kMainThread, wait * 0.05);
        close(kMainThread);
        close(kMainThread);
      }
    }
    close(kMainThread, 2);
  }

  void copy_batch() {
    const double bytes = p_.batch_mb * 1e6;
    // A side stream for the batch, when the job has one; else the compute stream.
    const int stream = copy_stream_ >= 0 ? copy_stream_ : cs_;
    copy_tensor(static_cast<std::int64_t>(bytes), p_.pinned ? k_.h2d_pinned : k_.h2d_pageable, stream);
    copy_tensor(static_cast<std::int64_t>(std::max(64.0, bytes / 1024)),
                p_.pinned ? k_.h2d_pinned : k_.h2d_pageable, stream);
  }

  void copy_tensor(std::int64_t bytes, std::string_view name, int stream = -1) {
    frames(kMainThread, {"<built-in method to of Tensor object at 0x7f5e4c1a2e90>"},
           [&] { copy_tensor_ops(bytes, name, stream < 0 ? cs_ : stream); });
  }

  void copy_tensor_ops(std::int64_t bytes, std::string_view name, int stream) {
    open_op(kMainThread, "aten::to", 2);
    open_op(kMainThread, "aten::_to_copy", 2);
    open_op(kMainThread, "aten::empty_strided", 2);
    close(kMainThread);
    open_op(kMainThread, "aten::copy_", 2);
    const ns_t dur = rng_.vary(static_cast<double>(bytes) / p_.h2d_gbps, p_.jitter / 2) + 1'500;
    const bool pageable = !p_.pinned;
    b_.copy(kMainThread, GpuClass::HtoD, name, bytes, dur, stream, false, pageable, host_ns(7), p_.blocking_copy);
    close(kMainThread);
    close(kMainThread);
    close(kMainThread);
  }

  void zero_grad() {
    open_annotation(kMainThread, legacy_ ? "Optimizer.zero_grad#Adam.zero_grad" : "Optimizer.zero_grad#AdamW.zero_grad",
                    10);
    const double bytes = p_.grad_mb * 1e6 / std::max(1, p_.zero_grad_memsets);
    for (int i = 0; gpu_ && i < p_.zero_grad_memsets; ++i) {
      open_op(kMainThread, "aten::zero_", 2);
      open_op(kMainThread, "aten::fill_", 2);
      b_.memset(kMainThread, static_cast<std::int64_t>(bytes),
                rng_.vary(bytes / 1500.0 + 1'500, p_.jitter / 2), cs_, launch_ns());
      close(kMainThread);
      close(kMainThread);
    }
    close(kMainThread, 10);
  }

  void forward() {
    // Without stage annotations nothing on the host names the forward pass: it is the phase.
    const bool annotate = p_.stage_annotations;
    const bool ddp = annotate && p_.ranks > 1;
    if (annotate) {
      // The range marks the forward stage whatever its name ("## forward ##", an NVTX "forward").
      out_[b_.open(kMainThread, EvType::UserAnnotation, p_.forward_range)].stage = Stage::Forward;
      host(kMainThread, 4);
    } else {
      b_.set_phase(kMainThread, Stage::Forward);
    }
    if (ddp) open_annotation(kMainThread, "DistributedDataParallel.forward", 20);
    flows_.assign(static_cast<std::size_t>(p_.layers) * 2, -1);
    const bool eager = p_.eager_after > 0 && c_.index >= p_.eager_after;
    const bool compiled = (p_.recompile_every > 0 || p_.eager_after > 0) && !eager;
    if (compiled) compiled_region_enter();
    for (int l = 0; l < p_.layers; ++l) {
      if (p_.fp8_moe) {
        moe_forward_layer(l);
      } else {
        frames(kMainThread,
               {"torch/nn/modules/module.py(1751): _wrapped_call_impl",
                "torch/nn/modules/module.py(1762): _call_impl", "model.py(24): forward"},
               [&] { forward_layer(l); });
      }
    }
    if (compiled) close(kMainThread, 2);
    if (p_.training) {
      frames(kMainThread, {"torch/nn/functional.py(3494): cross_entropy",
                           "<built-in method cross_entropy_loss of PyCapsule object at 0x7f5e5c2b3e10>"},
             [&] {
               open_op(kMainThread, "aten::cross_entropy_loss", 3);
               kernel_op(kMainThread, "aten::log_softmax", "aten::_log_softmax", *k_.softmax_fwd,
                         p_.eltwise_us * 2);
               kernel_op(kMainThread, "aten::nll_loss_nd", "aten::nll_loss_forward", *k_.nll_fwd, 4);
               close(kMainThread, 2);
             });
    }
    if (ddp) close(kMainThread, 4);
    if (annotate) {
      close(kMainThread, 2);
    } else {
      b_.set_phase(kMainThread, Stage::Other);
    }
  }

  // After the fallback the pointwise chains the compiled graph fused run as separate kernels.
  int eager_extra() const { return p_.eager_after > 0 && c_.index >= p_.eager_after ? 4 : 0; }

  // torch.compile: the frame's cache lookup, and a (re)compilation on the first step and every
  // `recompile_every` steps (a new shape fails the guards). The region's name carries
  // frame/recompile ids the way dynamo writes them.
  void compiled_region_enter() {
    const int number = p_.first_step + c_.index;
    const int every = p_.recompile_every;
    const bool compile = c_.index == 0 || (every > 0 && number % every == 0);
    const int recompiles = every > 0 ? number / every - p_.first_step / every : 0;
    open_annotation(kMainThread, intern("Torch-Compiled Region: 0/" + std::to_string(recompiles)), 2);
    open_annotation(kMainThread, "TorchDynamo Cache Lookup", 3);
    close(kMainThread, 1);
    if (compile) {
      open_annotation(kMainThread, "_compile.compile_inner (dynamo_timed)", 20);
      host(kMainThread, p_.compile_us * 0.3);
      open_annotation(kMainThread, "compile_fx.<locals>.fw_compiler_base (dynamo_timed)", 10);
      host(kMainThread, p_.compile_us * 0.7);
      close(kMainThread, 5);
      close(kMainThread, 5);
    }
  }

  // A forward op that autograd records (training only: no graph, no flow, under inference).
  void mark_autograd(std::size_t op, int slot) {
    if (!p_.training) return;
    out_[op].seq = ids_.seq++;
    out_[op].fwd_tid = 0;
    out_[op].flow_out = flows_[static_cast<std::size_t>(slot)] = ids_.flow++;
  }

  void linear(int th, int slot) {
    const std::size_t op = b_.open(th, EvType::CpuOp, "aten::linear");
    mark_autograd(op, slot);
    host(th, p_.op_us * 0.2);
    open_op(th, "aten::t", 1);
    close(th, 1);
    kernel_op(th, "aten::addmm", "", *k_.gemm_fwd, p_.gemm_us, true);
    close(th, 1);
  }

  void forward_layer(int l) {
    const int th = kMainThread;
    module_call(th, "torch/nn/modules/linear.py(125): forward", "<built-in function linear>",
                [&] { linear(th, 2 * l); });
    for (int i = 0; i < p_.convs; ++i) conv_forward(th);
    module_call(th, "torch/nn/modules/normalization.py(217): forward", "<built-in function layer_norm>", [&] {
      kernel_op(th, "aten::layer_norm", "aten::native_layer_norm", *k_.norm_fwd, p_.norm_us);
    });
    if (gpu_ && p_.triton_pointwise) {
      triton_gelu_op(th);
    } else {
      module_call(th, "torch/nn/modules/activation.py(734): forward", "<built-in function gelu>",
                  [&] { kernel_op(th, "aten::gelu", "", *k_.gelu_fwd, p_.eltwise_us); });
    }
    if (p_.unfused_attention) attention_forward(th);
    module_call(th, "torch/nn/modules/linear.py(125): forward", "<built-in function linear>",
                [&] { linear(th, 2 * l + 1); });
    frames(th, {"<built-in method add of Tensor object at 0x7f5e4c1a2b30>"},
           [&] { kernel_op(th, "aten::add", "", *k_.add, p_.eltwise_us); });
    for (int i = 0; i < p_.extra_eltwise + eager_extra(); ++i)
      kernel_op(th, "aten::mul", "", *k_.mul, p_.eltwise_us);
    for (int i = 0; i < p_.tiny_ops; ++i) kernel_op(th, "aten::mul", "", *k_.tiny, p_.tiny_us);
  }

  // cuDNN convolution; in NCHW under AMP cuDNN converts to NHWC and back around the kernel; with
  // cudnn.benchmark and a new shape it first times several algorithms.
  void conv_forward(int th) {
    static constexpr std::string_view kOps[] = {"aten::conv2d", "aten::convolution", "aten::_convolution",
                                                "aten::cudnn_convolution"};
    for (auto op : kOps) open_op(th, op, p_.op_us * 0.3);
    std::vector<std::pair<const KernelSpec*, double>> ks;
    for (int i = 0; i < p_.autotune_trials; ++i)
      ks.emplace_back(fk_.conv_trials[static_cast<std::size_t>(i) % fk_.conv_trials.size()], p_.conv_us * 1.5);
    launch_all(th, ks);
    // cudnnFind waits for each timed candidate before choosing.
    if (gpu_ && p_.autotune_trials > 0) b_.sync(th, cs_, host_ns(3));
    ks.clear();
    if (p_.nchw_transposes) ks.emplace_back(fk_.nchw_to_nhwc, p_.transpose_us);
    ks.emplace_back(fk_.conv_fwd, p_.conv_us);
    if (p_.nchw_transposes) ks.emplace_back(fk_.nhwc_to_nchw, p_.transpose_us);
    launch_all(th, ks);
    for (std::size_t i = 0; i < std::size(kOps); ++i) close(th, p_.op_us * 0.2);
  }

  void conv_backward(int th) {
    std::vector<std::pair<const KernelSpec*, double>> ks;
    if (p_.nchw_transposes) ks.emplace_back(fk_.nchw_to_nhwc, p_.transpose_us);
    ks.emplace_back(fk_.conv_dgrad, p_.conv_us);
    ks.emplace_back(fk_.conv_wgrad, p_.conv_us);
    if (p_.nchw_transposes) ks.emplace_back(fk_.nhwc_to_nchw, p_.transpose_us);
    if (legacy_) {
      // 2021: the node by its cuDNN name, no evaluate_function wrapper.
      const std::size_t ev = b_.open(th, EvType::CpuOp, "CudnnConvolutionBackward");
      out_[ev].seq = ids_.seq++;
      out_[ev].fwd_tid = 1;
      multi_kernel_op(th, {"aten::cudnn_convolution_backward"}, ks);
      close(th, 2);
      accumulate_grad(th);
      return;
    }
    const std::size_t ev =
        b_.open(th, EvType::CpuOp, "autograd::engine::evaluate_function: ConvolutionBackward0");
    out_[ev].seq = ids_.seq++;
    out_[ev].fwd_tid = 1;
    host(th, 1.5);
    multi_kernel_op(th, {"ConvolutionBackward0", "aten::convolution_backward"}, ks);
    if (p_.anomaly) anomaly_check(th);
    close(th, 2);
    accumulate_grad(th);
  }

  // Scores materialised: q @ k^T, softmax, @ v (what SDPA's math path or a hand-written
  // attention runs).
  void attention_forward(int th) {
    multi_kernel_op(th, {"aten::matmul", "aten::bmm"}, {{fk_.bmm, p_.attn_gemm_us}});
    multi_kernel_op(th, {"aten::softmax", "aten::_softmax"}, {{fk_.softmax_fwd, p_.softmax_us}});
    multi_kernel_op(th, {"aten::matmul", "aten::bmm"}, {{fk_.bmm, p_.attn_gemm_us}});
  }

  void attention_backward(int th) {
    evaluate(th, "BmmBackward0", "aten::bmm", *fk_.bmm, p_.attn_gemm_us * 2, -1);
    evaluate(th, "SoftmaxBackward0", "aten::_softmax_backward_data", *fk_.softmax_bwd, p_.softmax_us, -1);
    evaluate(th, "BmmBackward0", "aten::bmm", *fk_.bmm, p_.attn_gemm_us * 2, -1);
  }

  // Anomaly mode checks every backward node's outputs for NaN and reads the answer on the host.
  void anomaly_check(int th) {
    kernel_op(th, "aten::isnan", "", *fk_.isnan, p_.eltwise_us * 0.5);
    kernel_op(th, "aten::any", "", *fk_.any, 6);
    item(th);
  }

  // loss.item() then host-side logging: drains the GPU queue mid-step. Without the read
  // (mid_sync_read false, the value logged from the device later) the logging overlaps the GPU.
  void mid_step_sync() {
    if (p_.mid_sync_read) item();
    b_.work(kMainThread, host_ns(p_.sync_gap_us));
  }

  void item(int th = kMainThread) {
    frames(th, {"<built-in method item of Tensor object at 0x7f5e4c1a2f70>"}, [&] { item_ops(th); });
  }

  void item_ops(int th) {
    open_op(th, "aten::item", 2);
    open_op(th, "aten::_local_scalar_dense", 2);
    if (gpu_) {
      const bool rocm = p_.platform == Platform::Rocm;
      b_.copy(th, GpuClass::DtoH, k_.d2h_item, 4, 1'800, cs_, rocm, false, host_ns(6));
      if (!rocm) b_.sync(th, cs_, host_ns(3));
    }
    close(th, 2);
    close(th, 2);
  }

  void backward(StepResult& r) {
    const int th = backward_thread_;
    if (th != kMainThread) b_.set_now(th, b_.now(kMainThread) + host_ns(25));
    if (!p_.stage_annotations) b_.set_phase(th, Stage::Backward);
    evaluate(th, "NllLossBackward0", "aten::nll_loss_backward", *k_.nll_bwd, 4, -1);
    evaluate(th, "LogSoftmaxBackward0", "aten::_log_softmax_backward_data", *k_.softmax_bwd,
             p_.eltwise_us * 2, -1);
    const int per_bucket = std::max(1, (p_.layers + p_.buckets - 1) / std::max(1, p_.buckets));
    int bucket = 0;
    for (int l = p_.layers - 1; l >= 0; --l) {
      if (p_.fp8_moe) {
        moe_backward_layer(th, l);
      } else {
        backward_layer(th, l);
      }
      const bool boundary = (p_.layers - l) % per_bucket == 0 || l == 0;
      if (comm_ && p_.overlap && boundary) allreduce(th, bucket++, r);
    }
    b_.set_phase(th, Stage::Other);
    if (th != kMainThread) {
      // loss.backward() returns on the main thread once the engine is done.
      b_.set_now(kMainThread, std::max(b_.now(kMainThread), b_.now(th)) + host_ns(15));
    }
  }

  void evaluate(int th, std::string_view fn, std::string_view op, const KernelSpec& k, double us,
                std::int64_t flow_in) {
    if (legacy_) {
      // 2021: the node itself (no "0" suffix), no evaluate_function wrapper.
      const std::size_t ev = b_.open(th, EvType::CpuOp, legacy_node(fn));
      out_[ev].flow_in = flow_in;
      out_[ev].seq = ids_.seq++;
      out_[ev].fwd_tid = 1;
      host(th, 1);
      kernel_op(th, op, "", k, us);
      close(th, 1);
      return;
    }
    const std::size_t ev =
        b_.open(th, EvType::CpuOp, intern("autograd::engine::evaluate_function: " + std::string(fn)));
    out_[ev].flow_in = flow_in;
    out_[ev].seq = ids_.seq++;
    out_[ev].fwd_tid = 1;
    host(th, 1.5);
    open_op(th, fn, 1);
    kernel_op(th, op, "", k, us);
    close(th, 1);
    if (p_.anomaly) anomaly_check(th);
    close(th, 2);
  }

  static std::string_view legacy_node(std::string_view fn) {
    if (!fn.empty() && fn.back() == '0') fn.remove_suffix(1);
    return intern(std::string(fn));
  }

  void accumulate_grad(int th) {
    if (legacy_) {
      open_op(th, "torch::autograd::AccumulateGrad", 3);
      open_op(th, "aten::detach", 2);
      close(th, 1);
      close(th, 2);
      return;
    }
    b_.open(th, EvType::CpuOp, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
    host(th, 2);
    open_op(th, "torch::autograd::AccumulateGrad", 3);
    open_op(th, "aten::detach", 2);
    close(th, 1);
    close(th, 2);
    close(th, 1);
  }

  void addmm_backward(int th, int slot) {
    const double half = p_.gemm_us * p_.bwd_factor / 2;
    if (legacy_ && slot % 2 == 1) {
      // 2021: the second linear of a block (no bias) as a bare MmBackward node.
      const std::size_t ev = b_.open(th, EvType::CpuOp, "MmBackward");
      out_[ev].flow_in = flows_[static_cast<std::size_t>(slot)];
      out_[ev].seq = ids_.seq++;
      out_[ev].fwd_tid = 1;
      host(th, 1.5);
      kernel_op(th, "aten::mm", "", *k_.gemm_dgrad, half, true);
      kernel_op(th, "aten::mm", "", *k_.gemm_wgrad, half, true);
      close(th, 2);
      accumulate_grad(th);
      return;
    }
    const std::size_t ev =
        b_.open(th, EvType::CpuOp, "autograd::engine::evaluate_function: AddmmBackward0");
    out_[ev].flow_in = flows_[static_cast<std::size_t>(slot)];
    out_[ev].seq = ids_.seq++;
    out_[ev].fwd_tid = 1;
    host(th, 1.5);
    open_op(th, "AddmmBackward0", 2);
    kernel_op(th, "aten::mm", "", *k_.gemm_dgrad, half, true);
    kernel_op(th, "aten::mm", "", *k_.gemm_wgrad, half, true);
    close(th, 1);
    if (p_.anomaly) anomaly_check(th);
    close(th, 2);
    accumulate_grad(th);
  }

  void backward_layer(int th, int l) {
    for (int i = 0; i < p_.tiny_ops; ++i)
      evaluate(th, "MulBackward0", "aten::mul", *k_.tiny, p_.tiny_us, -1);
    for (int i = 0; i < p_.extra_eltwise + eager_extra(); ++i)
      evaluate(th, "MulBackward0", "aten::mul", *k_.mul, p_.eltwise_us * 2, -1);
    b_.open(th, EvType::CpuOp, legacy_ ? "AddBackward" : "autograd::engine::evaluate_function: AddBackward0");
    host(th, 4);
    close(th, 1);
    addmm_backward(th, 2 * l + 1);
    if (p_.unfused_attention) attention_backward(th);
    evaluate(th, "GeluBackward0", "aten::gelu_backward", *k_.gelu_bwd, p_.eltwise_us * 1.5, -1);
    layer_norm_backward(th);
    for (int i = 0; i < p_.convs; ++i) conv_backward(th);
    addmm_backward(th, 2 * l);
  }

  void layer_norm_backward(int th) {
    const std::size_t ev = b_.open(
        th, EvType::CpuOp,
        legacy_ ? "NativeLayerNormBackward" : "autograd::engine::evaluate_function: NativeLayerNormBackward0");
    out_[ev].seq = ids_.seq++;
    out_[ev].fwd_tid = 1;
    host(th, 1.5);
    if (!legacy_) open_op(th, "NativeLayerNormBackward0", 1);
    open_op(th, "aten::native_layer_norm_backward", p_.op_us * 0.3);
    if (gpu_) {
      b_.launch_kernel(th, *k_.norm_bwd_input, GpuClass::Compute, cs_, gpu_ns(p_.norm_us * 1.4),
                       launch_ns(), wait_ep_);
      b_.launch_kernel(th, *k_.norm_bwd_gamma, GpuClass::Compute, cs_, gpu_ns(p_.norm_us * 0.8),
                       launch_ns(), wait_ep_);
    } else {
      b_.work(th, gpu_ns(p_.norm_us * 2.2));
    }
    produced(th);
    close(th, p_.op_us * 0.2);
    if (!legacy_) close(th, 1);
    if (p_.anomaly) anomaly_check(th);
    close(th, 2);
    accumulate_grad(th);
  }

  // One DDP bucket: record_param_comms + nccl:all_reduce, the kernel on the NCCL stream after
  // the gradients it reduces are ready on the compute stream.
  void allreduce(int th, int bucket, StepResult& r) {
    const auto nelems = static_cast<std::int64_t>(p_.grad_mb * 1e6 / 4 / std::max(1, p_.buckets));
    const std::size_t rpc = b_.open(th, EvType::CpuOp, "record_param_comms");
    out_[rpc].comm_nelems = nelems;
    host(th, 6);
    open_annotation(th, "nccl:all_reduce", 4);
    const ns_t grads_ready = b_.stream_free(cs_);
    const ns_t dur = allreduce_duration(p_, c_.index, bucket);
    const bool legacy = p_.platform == Platform::Cuda && legacy_nccl(p_.nccl_version);
    const KernelSpec& spec = legacy ? legacy_nccl_allreduce() : *k_.allreduce;
    const std::size_t k =
        b_.launch_kernel(th, spec, GpuClass::Comm, ms_, dur, host_ns(9), grads_ready);
    if (!legacy) out_[k].comm_nelems = nelems;  // older Kineto put no collective args here
    const Event& rt = out_[static_cast<std::size_t>(out_[k].partner)];
    const ns_t arrival = std::max(rt.end() - rt.dur / 5, grads_ready);
    r.arrivals.push_back(arrival);
    if (c_.collective_end) agree_on_collective_end(k, bucket, arrival);
    close(th, 3);
    close(th, 3);
  }

  // Every rank's kernel ends when the last rank has arrived plus the transfer time.
  void agree_on_collective_end(std::size_t k, int bucket, ns_t arrival) {
    const auto& ends = *c_.collective_end;
    if (static_cast<std::size_t>(bucket) >= ends.size())
      throw std::logic_error("tracegen: collective schedule has too few buckets");
    const ns_t prev = bucket > 0 ? ends[static_cast<std::size_t>(bucket - 1)] : 0;
    Event& e = out_[k];
    e.ts = std::max(arrival, prev);
    e.dur = ends[static_cast<std::size_t>(bucket)] - e.ts;
    if (e.dur <= 0) throw std::logic_error("tracegen: collective ends before it starts");
    b_.set_stream_free(ms_, e.end());
  }

  void allreduce_after_backward(StepResult& r) {
    for (int b = 0; b < p_.buckets; ++b) allreduce(kMainThread, b, r);
  }

  void optimizer_step() {
    ns_t not_before = 0;
    if (comm_) {
      // The optimizer's stream waits for the last all-reduce.
      const Api& api = api_for(p_.platform);
      b_.runtime(kMainThread, api.wait_event, api.wait_event_id, host_ns(4));
      not_before = b_.stream_free(ms_);
    }
    not_before = std::max(not_before, wait_ep_);
    open_annotation(kMainThread, legacy_ ? "Optimizer.step#Adam.step" : "Optimizer.step#AdamW.step", 30);
    if (p_.opt_params > 0) {
      per_parameter_adamw(not_before);
      close(kMainThread, 8);
      return;
    }
    for (int i = 0; i < p_.opt_kernels; ++i) {
      frames(kMainThread, {"torch/optim/adamw.py(834): _fused_adamw",
                           "<built-in method _fused_adamw_ of PyCapsule object at 0x7f5e5c2b4d50>"},
             [&] {
               // 2021's Adam(foreach=True) ran multi-tensor kernels from _foreach ops.
               open_op(kMainThread, legacy_ ? "aten::_foreach_addcdiv_" : "aten::_fused_adamw_", p_.op_us * 0.5);
               if (gpu_) {
                 b_.launch_kernel(kMainThread, *k_.adam, GpuClass::Compute, cs_, gpu_ns(p_.opt_us),
                                  launch_ns(), not_before);
               } else {
                 b_.work(kMainThread, gpu_ns(p_.opt_us));
               }
               produced(kMainThread);
               close(kMainThread, p_.op_us * 0.3);
             });
    }
    close(kMainThread, 8);
  }

  // AdamW(foreach=False, fused=False): one small kernel per op per parameter.
  void per_parameter_adamw(ns_t not_before) {
    static constexpr std::string_view kOps[] = {"aten::lerp_", "aten::mul_", "aten::addcmul_", "aten::sqrt",
                                                "aten::addcdiv_"};
    const std::array<const KernelSpec*, 5> ks = {fk_.adam_steps[0], k_.mul, fk_.adam_steps[1], fk_.adam_steps[2],
                                                 fk_.adam_steps[3]};
    for (int param = 0; param < p_.opt_params; ++param)
      for (std::size_t i = 0; i < ks.size(); ++i) {
        open_op(kMainThread, kOps[i], p_.op_us * 0.3);
        if (gpu_) {
          b_.launch_kernel(kMainThread, *ks[i], GpuClass::Compute, cs_, gpu_ns(p_.opt_param_us), launch_ns(),
                           not_before);
        } else {
          b_.work(kMainThread, gpu_ns(p_.opt_param_us));
        }
        produced(kMainThread);
        close(kMainThread, p_.op_us * 0.2);
      }
  }

  void loss_item() { item(); }

  // torch.save of the weights: copy them to host memory, then serialise (no ops recorded). The
  // copies are the save's cost: side work, not a copy stage of the step.
  void checkpoint() {
    open_annotation(kMainThread, "checkpoint", 20);
    if (gpu_ && p_.ckpt_mb > 0) {
      constexpr int kChunks = 4;
      const double bytes = p_.ckpt_mb * 1e6 / kChunks;
      for (int i = 0; i < kChunks; ++i) {
        open_op(kMainThread, "aten::to", 2);
        open_op(kMainThread, "aten::_to_copy", 2);
        open_op(kMainThread, "aten::copy_", 2);
        const ns_t dur = rng_.vary(bytes / 12.0, p_.jitter / 2);
        const std::size_t g = b_.copy(kMainThread, GpuClass::DtoH, k_.d2h_pageable,
                                      static_cast<std::int64_t>(bytes), dur, cs_, true, true, host_ns(8));
        out_[g].side_work = true;
        close(kMainThread);
        close(kMainThread);
        close(kMainThread);
      }
    }
    host(kMainThread, p_.ckpt_us);
    close(kMainThread, 10);
  }

  // First to last GPU activity of the step.
  void gpu_span(StepResult& r) const {
    for (const Event& e : out_) {
      if (!e.on_gpu()) continue;
      r.gpu_start = r.gpu_start < 0 ? e.ts : std::min(r.gpu_start, e.ts);
      r.gpu_end = std::max(r.gpu_end, e.end());
    }
  }

  // The ProfilerStep range as the GPU sees it: first to last activity of the step.
  void add_gpu_step_annotation(const StepResult& r) {
    const Event& step = out_[r.profiler_step];
    Event g;
    g.type = EvType::GpuAnnotation;
    g.name = step.name;
    g.step_number = step.step_number;
    g.thread = cs_;
    g.ts = r.gpu_start;
    g.dur = r.gpu_end - r.gpu_start;
    g.ext_id = step.ext_id;
    g.role = HostRole::Marker;
    out_.push_back(g);
  }

  // GELU compiled by Inductor: a Triton kernel, launched through the driver API.
  void triton_gelu_op(int th) {
    open_op(th, "triton_poi_fused_gelu_0", p_.op_us * 0.3);
    b_.launch_driver_kernel(th, triton_gelu(), cs_, gpu_ns(p_.eltwise_us), launch_ns());
    close(th, p_.op_us * 0.2);
  }

  // ---- fp8 MoE block with expert parallelism (DeepEP) ----
  using KernelList = std::vector<std::pair<const KernelSpec*, double>>;

  // DeepEP kernels run on their own stream once the compute stream has produced their input, and
  // the compute stream waits for them: no overlap with compute.
  void ep_launch(int th, const KernelList& ks) {
    const Api& api = api_for(p_.platform);
    b_.runtime(th, api.event_record, api.event_record_id, host_ns(2));
    for (const auto& [k, us] : ks)
      b_.launch_kernel(th, *k, GpuClass::Comm, es_, gpu_ns(us), launch_ns(), std::max(wait_ep_, b_.stream_free(cs_)));
    b_.runtime(th, api.wait_event, api.wait_event_id, host_ns(2));
    wait_ep_ = b_.stream_free(es_);
  }

  void ep_op(int th, std::string_view op, const KernelList& ks) {
    if (p_.ep_nccl) return nccl_all_to_all(th, ks);
    open_op(th, op, p_.op_us * 0.5);
    if (gpu_) ep_launch(th, ks);
    close(th, p_.op_us * 0.3);
  }

  // The same exchange through torch.distributed.all_to_all_single: c10d::alltoall_base_ >
  // record_param_comms > nccl:all_to_all, one SendRecv kernel as long as the EP kernels together.
  void nccl_all_to_all(int th, const KernelList& ks) {
    double us = 0;
    for (const auto& k : ks) us += k.second;
    open_op(th, "c10d::alltoall_base_", p_.op_us * 0.3);
    b_.open(th, EvType::CpuOp, "record_param_comms");
    host(th, 4);
    open_annotation(th, "nccl:all_to_all", 3);
    if (gpu_) ep_launch(th, {{&legacy_nccl_sendrecv(), us}});
    close(th, 2);
    close(th, 2);
    close(th, p_.op_us * 0.2);
  }

  // torch._scaled_mm on fp8 operands: one CUTLASS kernel.
  void fp8_linear(int th, int slot, double us) {
    const std::size_t op = b_.open(th, EvType::CpuOp, "aten::_scaled_mm");
    mark_autograd(op, slot);
    host(th, p_.op_us * 0.3);
    launch_all(th, {{moe_kernels().fp8_gemm, us}});
    close(th, p_.op_us * 0.2);
  }

  void moe_forward_layer(int l) {
    const int th = kMainThread;
    const MoeKernels& m = moe_kernels();
    kernel_op(th, "aten::layer_norm", "aten::native_layer_norm", *k_.norm_fwd, p_.norm_us);
    fp8_linear(th, 2 * l, p_.gemm_us);
    // The fp8 activations transposed for the next GEMM's layout: elementwise, not a GEMM.
    multi_kernel_op(th, {"aten::contiguous", "aten::clone", "aten::copy_"}, {{m.fp8_transpose, p_.eltwise_us}});
    fp8_linear(th, 2 * l + 1, p_.gemm_us * 0.5);
    kernel_op(th, "aten::add", "", *k_.add, p_.eltwise_us);
    kernel_op(th, "aten::layer_norm", "aten::native_layer_norm", *k_.norm_fwd, p_.norm_us);
    multi_kernel_op(th, {"aten::linear", "aten::mm"}, {{m.router_gemm, p_.gemm_us * 0.1}});
    kernel_op(th, "aten::softmax", "aten::_softmax", *fk_.softmax_fwd, p_.eltwise_us * 0.5);
    kernel_op(th, "aten::topk", "", *m.topk, p_.eltwise_us * 0.5);
    ep_op(th, "deep_ep::Buffer::dispatch", {{m.notify_dispatch, p_.ep_us * 0.06}, {m.dispatch, p_.ep_us}});
    kernel_op(th, "deep_gemm::m_grouped_gemm_fp8_fp8_bf16_nt_contiguous", "", *m.grouped_gemm, p_.expert_gemm_us);
    kernel_op(th, "aten::silu", "", *m.silu, p_.eltwise_us);
    kernel_op(th, "deep_gemm::m_grouped_gemm_fp8_fp8_bf16_nt_contiguous", "", *m.grouped_gemm, p_.expert_gemm_us);
    ep_op(th, "deep_ep::Buffer::combine", {{m.combine, p_.ep_us}});
    kernel_op(th, "aten::add", "", *k_.add, p_.eltwise_us);
  }

  // One backward node: evaluate_function wrapper, the node, its op and kernels.
  void moe_node(int th, std::string_view fn, std::string_view op, const KernelList& ks, bool ep = false,
                std::int64_t flow_in = -1) {
    const std::size_t ev =
        b_.open(th, EvType::CpuOp, intern("autograd::engine::evaluate_function: " + std::string(fn)));
    out_[ev].flow_in = flow_in;
    out_[ev].seq = ids_.seq++;
    out_[ev].fwd_tid = 1;
    host(th, 1.5);
    open_op(th, fn, 1);
    if (ep) {
      ep_op(th, op, ks);
    } else {
      multi_kernel_op(th, {op}, ks);
    }
    close(th, 1);
    close(th, 2);
  }

  void moe_backward_layer(int th, int l) {
    const MoeKernels& m = moe_kernels();
    const double e = p_.expert_gemm_us, g = p_.gemm_us;
    // combine's gradient travels back the way dispatch went, and the other way round.
    moe_node(th, "EPCombineBackward", "deep_ep::Buffer::dispatch", {{m.notify_dispatch, p_.ep_us * 0.06}, {m.dispatch, p_.ep_us}},
             true);
    moe_node(th, "GroupedGemmBackward", "deep_gemm::m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
             {{m.grouped_gemm, e}, {m.grouped_gemm, e}});
    moe_node(th, "SiluBackward0", "aten::silu_backward", {{m.silu, p_.eltwise_us * 1.5}});
    moe_node(th, "GroupedGemmBackward", "deep_gemm::m_grouped_gemm_fp8_fp8_bf16_nt_contiguous",
             {{m.grouped_gemm, e}, {m.grouped_gemm, e}});
    moe_node(th, "EPDispatchBackward", "deep_ep::Buffer::combine", {{m.combine, p_.ep_us}}, true);
    moe_node(th, "MmBackward0", "aten::mm", {{m.router_gemm, g * 0.1}, {m.router_gemm, g * 0.1}});
    layer_norm_backward(th);
    moe_node(th, "ScaledMmBackward0", "aten::_scaled_mm", {{m.fp8_transpose, p_.eltwise_us}, {m.fp8_gemm, g * 0.5}, {m.fp8_gemm, g * 0.5}},
             false, flows_[static_cast<std::size_t>(2 * l + 1)]);
    moe_node(th, "ScaledMmBackward0", "aten::_scaled_mm", {{m.fp8_transpose, p_.eltwise_us}, {m.fp8_gemm, g}, {m.fp8_gemm, g}},
             false, flows_[static_cast<std::size_t>(2 * l)]);
    layer_norm_backward(th);
  }

  const StepContext& c_;
  const Params& p_;
  bool gpu_;
  const KernelSet& k_;
  const FootgunKernels& fk_;
  StepBuilder b_;
  std::vector<Event>& out_;
  Counters& ids_;
  Rng rng_;
  int cs_, ms_;
  double speed_ = 1.0;
  bool comm_ = false;
  int backward_thread_ = kMainThread;
  std::vector<std::int64_t> flows_;
  bool legacy_ = false;
  int es_ = 20;       // DeepEP's communication stream
  ns_t wait_ep_ = 0;  // compute kernels start after the last EP kernel
  static constexpr int kCopyStream = 24;  // a side stream for the batch copy
  int copy_stream_ = -1;
  std::array<std::vector<std::int64_t>, kMaxThreads> py_stack_;  // open Python frames' ids, per thread
  std::array<bool, kMaxThreads> pending_readback_{};             // an op produced a result to read back
};

}  // namespace

std::string marker_label(const Params& p, int index) {
  return index < p.warmup_steps ? "warmup" : p.step_marker;
}

std::string step_marker_name(const Params& p, int index) {
  if (!p.step_markers) return {};
  if (p.custom_marker()) return marker_label(p, index);
  return "ProfilerStep#" + std::to_string(p.first_step + index);
}

int compute_stream(Platform p) { return p == Platform::Rocm ? 0 : 7; }
int comm_stream(Platform p) { return p == Platform::Rocm ? 4 : 14; }

bool has_collectives(const Params& p) { return p.ranks > 1 && p.buckets > 0; }

ns_t allreduce_duration(const Params& p, int index, int bucket) {
  // Ring all-reduce moves 2(n-1)/n of the buffer through the slowest link; same on every rank.
  Rng rng(p.seed, 0x636f6d6dULL, static_cast<std::uint64_t>(index),
          static_cast<std::uint64_t>(bucket));
  const double n = std::max(2, p.ranks);
  const double bytes = p.grad_mb * 1e6 / std::max(1, p.buckets);
  const double ns = bytes * 2.0 * (n - 1) / n / p.busbw_gbps + 25'000;
  return rng.vary(ns, p.jitter / 2);
}

namespace {

// Kineto of 2021 wrote whole microseconds. Rounding both ends of every interval is monotone: every
// order and containment among the step's intervals survives, so the partition stays exact.
ns_t to_whole_us(ns_t t) { return t < 0 ? t : (t + 500) / 1000 * 1000; }

void round_to_whole_us(std::vector<Event>& events, StepResult& r) {
  for (Event& e : events) {
    const ns_t a = to_whole_us(e.ts), b = to_whole_us(e.end());
    e.ts = a;
    e.dur = b - a;
    e.ext_ts = to_whole_us(e.ext_ts);
  }
  r.host_end = to_whole_us(r.host_end);
  r.window_end = to_whole_us(r.window_end);
  r.gpu_start = to_whole_us(r.gpu_start);
  r.gpu_end = to_whole_us(r.gpu_end);
  for (ns_t& a : r.arrivals) a = to_whole_us(a);
}

}  // namespace

StepResult build_step(const StepContext& ctx, std::vector<Event>& out, Counters& ids) {
  out.clear();
  out.reserve(4096);
  StepRecipe recipe(ctx, out, ids);
  StepResult r = recipe.run();
  if (ctx.p->legacy_dialect()) round_to_whole_us(out, r);
  return r;
}

}  // namespace stepscope::tracegen
