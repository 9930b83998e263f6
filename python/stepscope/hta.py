"""HTA's `TraceAnalysis` API on stepscope's C++ analysis: an HTA notebook runs with one import changed.

    from stepscope.hta import TraceAnalysis          # instead of: from hta.trace_analysis import ...
    analyzer = TraceAnalysis(trace_dir="traces/")
    time_df = analyzer.get_temporal_breakdown(visualize=False)
    idle_df, stats_df = analyzer.get_idle_time_breakdown(show_idle_interval_stats=True)
    cp_graph, ok = analyzer.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)

Methods, parameters, defaults, return types, column names and index are those of Meta's Holistic
Trace Analysis (HTA) at commit f4d0062 (version 0.6.1), and so are the figures: they follow HTA's
definitions, quirks included (whole µs, the last profiler step dropped, the kernel table's "others"
rule), where stepscope's own report (`stepscope.Report`) keeps its own definitions. Timestamps are
HTA's: µs from the set's earliest kept row.

The traces are read once when `TraceAnalysis` is built; each method computes its table in C++ with
the arguments given. `visualize=True` draws HTA's plotly charts when plotly is installed, and
otherwise warns and returns the frames. pandas is needed (as for HTA).
"""
import enum as _enum
import json as _json
import numbers as _numbers
import os as _os
import re as _re
import warnings as _warnings

from . import _stepscope
from ._stepscope import Error

__all__ = ["TraceAnalysis", "TraceDiff", "LabeledTrace", "DeviceType", "TimeSeriesTypes", "CPGraph", "DEFAULT_TRACE_DIR",
           "CUDA_MAX_LAUNCH_QUEUE_PER_STREAM", "NotComputedError"]

DEFAULT_TRACE_DIR = "traces"
CUDA_MAX_LAUNCH_QUEUE_PER_STREAM = 1024


class NotComputedError(Error, NotImplementedError):
    """An HTA method whose figure stepscope does not compute (the message says what is missing)."""


NotComputedError.__module__ = "stepscope.hta"


class TimeSeriesTypes(_enum.Flag):
    """HTA's counter tracks for `generate_trace_with_counters`."""
    QUEUE_LENGTH = _enum.auto()
    MEMCPY_BANDWIDTH = _enum.auto()


class DeviceType(_enum.Enum):
    """HTA's `hta.trace_diff.DeviceType`: which ops TraceDiff compares."""
    CPU = 1
    GPU = 2
    ALL = 3


def _origin_ns(origin_us):
    """An epoch time in µs (a double) as whole ns, without the double's error past 2^53 ns."""
    whole = int(origin_us)
    return whole * 1000 + round((origin_us - whole) * 1000)


def _pd():
    from .frames import _pandas
    return _pandas()


def _us(ns):
    return None if ns is None else ns / 1000.0


def _hta_round(x, decimals):
    from .frames import _hta_round as r
    return r(x, decimals)


def _plotly():
    """plotly.express, or None with a warning: the caller then returns its frames undrawn."""
    try:
        import plotly.express as px
        return px
    except ImportError:
        _warnings.warn("visualize=True: plotly is not installed, so nothing is drawn; the frames are returned "
                       "(install plotly, e.g. `pip install plotly`, to draw HTA's charts)", stacklevel=3)
        return None


def _is_rank(x):
    return isinstance(x, _numbers.Integral) and not isinstance(x, bool)


def _rank_list(ranks, all_ranks, default_first):
    """HTA's `ranks` argument (a rank, or a list of them; numpy integers too): None or [] is rank 0
    (the first rank here when the set has no rank 0) for the methods that default to it, every rank
    for the others."""
    if _is_rank(ranks):
        ranks = [ranks]
    if ranks is None or (hasattr(ranks, "__len__") and len(ranks) == 0):
        if default_first:
            return [0] if 0 in all_ranks else all_ranks[:1]
        return list(all_ranks)
    try:
        ranks = list(ranks)
    except TypeError:
        raise Error(f"ranks {ranks!r}: expected a list of rank numbers") from None
    if not all(_is_rank(r) for r in ranks):
        raise Error(f"ranks {ranks!r}: expected a list of rank numbers")
    ranks = [int(r) for r in ranks]
    missing = [r for r in ranks if r not in all_ranks]
    if missing:
        raise Error(f"ranks {missing}: not in the trace (ranks: {', '.join(map(str, all_ranks))})")
    return ranks


def _trace_paths(trace_files, trace_dir):
    if trace_files:
        if not isinstance(trace_files, dict):
            raise Error("trace_files: expected a dict rank -> trace file")
        paths = []
        for _, f in sorted(trace_files.items()):
            f = _os.fspath(f)
            if not _os.path.isabs(f) and not _os.path.exists(f) and trace_dir:
                f = _os.path.join(_os.fspath(trace_dir), f)
            paths.append(f)
        return paths
    if trace_dir is None:
        raise Error("TraceAnalysis: give trace_dir or trace_files")
    return [_os.fspath(trace_dir)]


class CPGraph:
    """The critical path graph `critical_path_analysis` returns: HTA's `CPGraph` read-only view.

    `summary()` is HTA's Series bound_by -> % of the path; `get_critical_path_breakdown()` the
    path's edges in order; `save(out_dir)` writes the path as JSON and returns the file's path.
    """

    def __init__(self, rank, data, origin_us=0.0):
        self.rank = rank
        self._origin = origin_us
        self._data = data
        self.success = bool(data.get("success"))
        self.error = data.get("error")
        self.annotation = data.get("annotation")
        self.critical_path_length_us = _us(data.get("length_ns"))

    def summary(self):
        pd = _pd()
        shares = ((self._data.get("hta") or {}).get("summary_share")) or {}
        s = pd.Series({k: (float("nan") if v is None else 100.0 * v) for k, v in shares.items()}, dtype=float)
        s.index.name = "bound_by"
        return s

    def get_critical_path_breakdown(self):
        pd = _pd()
        cols = ["event_idx", "name", "duration", "type", "bound_by", "stream", "begin_ts", "end_ts"]
        # Edges without an event (dependencies, launch and sync delays) have no name or stream in HTA.
        rows = [{"event_idx": e["event"] if e["event"] >= 0 else None, "name": e["name"] if e["event"] >= 0 else None,
                 "duration": _us(e["duration_ns"]), "type": e["type"], "bound_by": e["bound_by"],
                 "stream": e["stream"] if e["event"] >= 0 else None,
                 "begin_ts": (e["begin_ns"] - _origin_ns(self._origin)) / 1000.0,
                 "end_ts": (e["end_ns"] - _origin_ns(self._origin)) / 1000.0} for e in self._data.get("path", [])]
        return pd.DataFrame(rows, columns=cols)

    def save(self, out_dir):
        _os.makedirs(out_dir, exist_ok=True)
        path = _os.path.join(out_dir, f"critical_path_rank{self.rank}.json")
        with open(path, "w", encoding="utf-8") as f:
            _json.dump(dict(self._data, rank=self.rank), f)
        return path

    def __repr__(self):
        if not self.success:
            return f"<stepscope.hta.CPGraph rank {self.rank}: failed: {self.error}>"
        return f"<stepscope.hta.CPGraph rank {self.rank}: {self.annotation}, {self.critical_path_length_us:.0f} us>"


class TraceAnalysis:
    """HTA's `hta.trace_analysis.TraceAnalysis`, computed by stepscope."""

    def __init__(self, trace_files=None, trace_dir=DEFAULT_TRACE_DIR, include_last_profiler_step=False):
        from . import _paths
        self.trace_dir = trace_dir
        self.include_last_profiler_step = bool(include_last_profiler_step)
        self._files = _paths(_trace_paths(trace_files, trace_dir))
        from ._interrupt import call_interruptibly
        cancel = _stepscope.CancelToken()
        self._t = call_interruptibly(_stepscope.hta_load, self._files, cancel=cancel, on_interrupt=cancel.cancel)
        self._ranks = sorted(self._t.ranks())
        self._timelines = {}
        self._report = None
        self._origin = None
        self._pids = {}
        self._ops = {}

    # ---- helpers ---------------------------------------------------------------------------------

    def _timeline(self, rank, consecutive_kernel_delay=30, runtime_cutoff=50, launch_delay_cutoff=100,
                  include_memory_events=True, duration_ratio=0.8, num_kernels=10):
        key = (rank, consecutive_kernel_delay, runtime_cutoff, launch_delay_cutoff, include_memory_events,
               duration_ratio, num_kernels)
        if key not in self._timelines:
            self._timelines[key] = _json.loads(self._t.gpu_timeline(
                rank, self.include_last_profiler_step, float(consecutive_kernel_delay), float(runtime_cutoff),
                float(launch_delay_cutoff), bool(include_memory_events), float(duration_ratio), int(num_kernels)))
        return self._timelines[key]

    def _origin_us(self):
        """HTA's time origin (µs): its frames' `ts` start at the set's earliest kept row."""
        if self._origin is None:
            self._origin = self._t.origin_us()
        return self._origin

    def _stream_tracks(self, rank):
        """stream -> (pid, tid) of its GPU rows, and the rank's most common GPU (pid, tid) under None."""
        if rank not in self._pids:
            rows = self._rows(rank)
            rows = rows[rows["stream"] >= 0]
            track = lambda d: (int(d["pid"].mode().iloc[0]), int(d["tid"].mode().iloc[0]))
            tracks = {int(k): track(d) for k, d in rows.groupby("stream")}
            tracks[None] = track(rows) if len(rows) else (None, None)
            self._pids[rank] = tracks
        return self._pids[rank]

    def _ts(self, ns):
        """HTA's ts of a time the analysis gives in ns (already rounded as HTA rounds the trace): µs
        from the origin, in integers first so that epoch times keep their sub-µs part."""
        return (ns - _origin_ns(self._origin_us())) / 1000.0

    def _ops_frame(self, rank):
        """HTA's trace frame of a rank: every kept complete row with its iteration (the
        ProfilerStep a host row starts in; a GPU row takes its launch's; -1 outside any step)."""
        if rank not in self._ops:
            import numpy as np
            df = self._rows(rank, "all")
            host = df["stream"].to_numpy() < 0
            steps = df[host & df["name"].str.match(r"ProfilerStep#\d+$").to_numpy()].sort_values("ts")
            it = np.full(len(df), -1, dtype=np.int64)
            if len(steps):
                starts = steps["ts"].to_numpy()
                ends = starts + steps["dur"].to_numpy()
                numbers = steps["name"].str.slice(len("ProfilerStep#")).astype(int).to_numpy()
                pos = np.searchsorted(starts, df["ts"].to_numpy(), side="right") - 1
                inside = (pos >= 0) & (df["ts"].to_numpy() < ends[np.maximum(pos, 0)])
                it = np.where(inside, numbers[np.maximum(pos, 0)], -1)
                by_corr = {}
                corr = df["correlation"].to_numpy()
                for c, i, h in zip(corr, it, host):
                    if h and c >= 0 and c not in by_corr:
                        by_corr[c] = i
                it = np.where(host, it, [by_corr.get(c, -1) for c in corr])
            df["iteration"] = it
            self._ops[rank] = df
        return self._ops[rank]

    # ---- breakdowns ------------------------------------------------------------------------------

    def get_temporal_breakdown(self, visualize=True):
        pd = _pd()
        cols = ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)",
                "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]
        rows = []
        for r in self._ranks:
            t = self._timeline(r)["hta"]["temporal_breakdown"]
            if not t.get("available"):
                continue
            rows.append({"rank": r, "idle_time(us)": _us(t["idle_time_ns"]), "compute_time(us)": _us(t["compute_time_ns"]),
                         "non_compute_time(us)": _us(t["non_compute_time_ns"]), "kernel_time(us)": _us(t["kernel_time_ns"]),
                         "idle_time_pctg": _hta_round(100.0 * t["idle_time_share"], 2),
                         "compute_time_pctg": _hta_round(100.0 * t["compute_time_share"], 2),
                         "non_compute_time_pctg": _hta_round(100.0 * t["non_compute_time_share"], 2)})
        df = pd.DataFrame(rows, columns=cols)
        if visualize and (px := _plotly()):
            fig = px.bar(df, x="rank", y=["idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"],
                         title="Temporal breakdown across ranks", labels={"rank": "Rank", "value": "Percentage (%)"})
            fig.show()
        return df

    def get_idle_time_breakdown(self, ranks=None, streams=None, visualize=True, visualize_pctg=True,
                                show_idle_interval_stats=False, consecutive_kernel_delay=30):
        pd = _pd()
        ranks = _rank_list(ranks, self._ranks, default_first=True)
        want_streams = None if streams is None else set(streams)
        idle_rows, stat_rows = [], []
        for r in ranks:
            for s in self._timeline(r, consecutive_kernel_delay=consecutive_kernel_delay)["hta"]["idle_time_breakdown"].get("streams", []):
                if want_streams is not None and s["stream"] not in want_streams:
                    continue
                for c in s["categories"]:
                    share = c["idle_time_share"]
                    idle_rows.append({"rank": r, "stream": s["stream"], "idle_category": c["idle_category"],
                                      "idle_time": _us(c["idle_time_ns"]),
                                      "idle_time_ratio": float("nan") if share is None else _hta_round(share, 2)})
                    st = c.get("interval_stats_ns") or {}
                    # HTA rounds the interval statistics to two places.
                    stat_rows.append({"idle_category": c["idle_category"], "rank": r, "stream": s["stream"],
                                      "count": float(st.get("count", 0)),
                                      **{k: _hta_round(_us(st.get(src)), 2) if st.get(src) is not None else float("nan")
                                         for k, src in (("mean", "mean"), ("std", "std"), ("min", "min"), ("25%", "p25"),
                                                        ("50%", "median"), ("75%", "p75"), ("max", "max"))}})
        idle = pd.DataFrame(idle_rows, columns=["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"])
        stats = None
        if show_idle_interval_stats:
            stats = pd.DataFrame(stat_rows, columns=["idle_category", "rank", "stream", "count", "mean", "std", "min",
                                                     "25%", "50%", "75%", "max"])
        if visualize and (px := _plotly()):
            y = "idle_time_ratio" if visualize_pctg else "idle_time"
            for r in ranks:
                d = idle[idle["rank"] == r]
                px.bar(d, x="stream", y=y, color="idle_category", title=f"Idle time breakdown on rank {r} per CUDA stream",
                       barmode="stack").show()
        return idle, stats

    def get_comm_comp_overlap(self, visualize=True):
        pd = _pd()
        rows = []
        for r in self._ranks:
            tl = self._timeline(r)["hta"]
            if not tl["temporal_breakdown"].get("available"):
                continue
            o = tl["comm_comp_overlap"]
            share = o.get("comp_comm_overlap_share")
            rows.append({"rank": r, "comp_comm_overlap_pctg":
                         _hta_round(100.0 * share, 2) if o.get("available") and share is not None else float("nan")})
        df = pd.DataFrame(rows, columns=["rank", "comp_comm_overlap_pctg"]).astype({"comp_comm_overlap_pctg": float})
        if visualize and (px := _plotly()):
            px.bar(df, x="rank", y="comp_comm_overlap_pctg", title="Computation-Communication Overlap",
                   labels={"rank": "Rank", "comp_comm_overlap_pctg": "Computation-Communication Overlap Percentage"}).show()
        return df

    def get_gpu_kernel_breakdown(self, visualize=True, duration_ratio=0.8, num_kernels=10, include_memory_kernels=True,
                                 image_renderer=""):
        pd = _pd()
        sums, order = {}, []
        kernel_rows = []
        for r in self._ranks:
            tl = self._timeline(r, duration_ratio=duration_ratio, num_kernels=num_kernels)
            for t in tl.get("kernel_types") or []:
                if t["kernel_type"] not in sums:
                    order.append(t["kernel_type"])
                sums[t["kernel_type"]] = sums.get(t["kernel_type"], 0) + t["sum_ns"]
            for k in tl["hta"]["kernel_breakdown"].get("top_kernels", []):
                if not include_memory_kernels and k["kernel_type"] == "MEMORY":
                    continue
                kernel_rows.append({"name": k["name"], "sum (us)": _us(k["sum_ns"]), "max (us)": _us(k["max_ns"]),
                                    "min (us)": _us(k["min_ns"]), "stddev": _us(k["stddev_ns"]),
                                    "mean (us)": _us(k["mean_ns"]), "kernel_type": k["kernel_type"], "rank": r})
        total = sum(sums.values())
        type_rows = sorted(({"kernel_type": t, "sum": sums[t] // 1000,
                             "percentage": _hta_round(100.0 * sums[t] / total, 1) if total else float("nan")}
                            for t in order), key=lambda x: -x["sum"])
        types = pd.DataFrame(type_rows, columns=["kernel_type", "sum", "percentage"])
        # HTA's order: by kernel type, then name (ranks in order within a name).
        kernel_rows.sort(key=lambda k: (k["kernel_type"], k["name"], k["rank"]))
        kernels = pd.DataFrame(kernel_rows, columns=["name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)",
                                                     "kernel_type", "rank"])
        if visualize and (px := _plotly()):
            px.pie(types, values="percentage", names="kernel_type", title="Kernel type percentage across all ranks").show(
                renderer=image_renderer or None)
            for kt in kernels["kernel_type"].unique():
                d = kernels[kernels["kernel_type"] == kt]
                px.bar(d, x="rank", y="sum (us)", color="name", title=f"{kt} kernel duration per rank").show(
                    renderer=image_renderer or None)
        return types, kernels

    def get_cuda_kernel_launch_stats(self, ranks=None, runtime_cutoff=50, launch_delay_cutoff=100,
                                     include_memory_events=True, visualize=True):
        pd = _pd()
        out = {}
        for r in _rank_list(ranks, self._ranks, default_first=True):
            corr, cpu, gpu, delay = self._t.launches(r, self.include_last_profiler_step, bool(include_memory_events))
            df = pd.DataFrame({"correlation": corr, "cpu_duration": cpu, "gpu_duration": gpu, "launch_delay": delay},
                              columns=["correlation", "cpu_duration", "gpu_duration", "launch_delay"])
            out[r] = df
            if visualize and (px := _plotly()):
                short = df[(df["cpu_duration"] <= runtime_cutoff) & (df["gpu_duration"] < df["cpu_duration"])]
                px.histogram(short, x="cpu_duration",
                             title=f"Short GPU kernels (gpu op duration < cpu op duration) on rank {r}").show()
                px.histogram(df[df["cpu_duration"] > runtime_cutoff], x="cpu_duration", nbins=300,
                             title=f"Runtime Event Duration Outliers (duration > {runtime_cutoff} us) on rank {r}").show()
                px.histogram(df[df["launch_delay"] > launch_delay_cutoff], x="launch_delay", nbins=300,
                             title=f"Launch Delay Outliers (duration > {launch_delay_cutoff} us) on rank {r}").show()
        return out

    def get_frequent_cuda_kernel_sequences(self, operator_name, output_dir, min_pattern_len=3, rank=0, top_k=5,
                                           visualize=False, compress_other_kernels=True):
        pd = _pd()
        if not isinstance(operator_name, str) or not operator_name:
            raise Error(f"operator_name {operator_name!r}: expected the (part of an) operator name to search")
        rank = _rank_list([rank], self._ranks, default_first=True)[0]
        k = _json.loads(self._t.kernel_sequences(rank, operator_name, int(min_pattern_len)))
        cols = ["pattern", "count", "GPU kernel duration (us)", "CPU op duration (us)"]
        rows = [{"pattern": "|".join(s["pattern"]), "count": s["count"], "GPU kernel duration (us)": _us(s["gpu_time_ns"]),
                 "CPU op duration (us)": _us(s["cpu_time_ns"])} for s in k.get("sequences", [])]
        df = pd.DataFrame(rows, columns=cols)
        if output_dir is not None:
            # HTA writes the trace overlaid with the top_k patterns; we write the patterns themselves.
            _os.makedirs(output_dir, exist_ok=True)
            path = _os.path.join(output_dir, f"frequent_kernel_sequences_rank{rank}.json")
            with open(path, "w", encoding="utf-8") as f:
                _json.dump({"rank": rank, "operator_name": operator_name, "min_pattern_len": min_pattern_len,
                            "note": k.get("note"), "patterns": rows[:max(0, int(top_k))]}, f, indent=1)
        if visualize and (px := _plotly()) and len(df):
            top = df.head(top_k)
            px.bar(top, x="pattern", y="count", title=f"Frequent CUDA kernel sequences of {operator_name} on rank {rank}").show()
        return df

    # ---- counters --------------------------------------------------------------------------------

    def get_queue_length_time_series(self, ranks=None):
        pd = _pd()
        out = {}
        for r in _rank_list(ranks, self._ranks, default_first=True):
            q = _json.loads(self._t.queue_length(r))
            tracks = self._stream_tracks(r)
            rows = []
            for s in q.get("streams", []):
                series = s.get("series") or {}
                pid, tid = tracks.get(s["stream"], tracks[None])
                rows.extend({"ts": self._ts(ts), "pid": pid, "tid": tid, "stream": s["stream"], "queue_length": v}
                            for ts, v in zip(series.get("ts_ns", []), series.get("queue_length", [])))
            if rows:
                out[r] = pd.DataFrame(rows, columns=["ts", "pid", "tid", "stream", "queue_length"])
        return out

    def get_queue_length_summary_from_time_series(self, queue_length_dict):
        pd = _pd()
        parts = []
        for r, df in queue_length_dict.items():
            df = df.copy()
            df["rank"] = r
            parts.append(df[["rank", "stream", "queue_length"]].groupby(["rank", "stream"]).describe())
        return pd.concat(parts) if parts else None

    def get_queue_length_summary(self, ranks=None):
        return self.get_queue_length_summary_from_time_series(self.get_queue_length_time_series(ranks))

    def get_time_spent_blocked_on_full_queue(self, queue_length_dict, max_queue_length=CUDA_MAX_LAUNCH_QUEUE_PER_STREAM):
        pd = _pd()
        result = {}
        for r, ql in queue_length_dict.items():
            span = self._trace_duration_us(r)
            for stream in ql["stream"].unique():
                df = ql.loc[ql["stream"] == stream].copy()
                df["dur"] = df["ts"].shift(-1) - df["ts"]
                df = df.loc[df["queue_length"] >= max_queue_length]
                if df.empty:
                    continue
                dur = df["dur"].sum()
                # As HTA: keyed by rank, so a rank keeps its last stream that filled up.
                result[r] = [stream, dur, dur / span if span else float("nan")]
        df = pd.DataFrame.from_dict(result, orient="index",
                                    columns=["stream", "duration_at_max_queue_length", "relative_duration_at_max_queue_length"])
        return df.reset_index(names="rank")

    def _trace_duration_us(self, rank):
        """HTA's get_trace_duration: the last end minus the first start over the rank's kept rows."""
        rows = self._rows(rank, "all")
        return float((rows["ts"] + rows["dur"]).max() - rows["ts"].min()) if len(rows) else 0.0

    def get_memory_bw_time_series(self, ranks=None):
        pd = _pd()
        out = {}
        for r in _rank_list(ranks, self._ranks, default_first=True):
            m = _json.loads(self._t.memory_bandwidth(r))
            pid = self._stream_tracks(r)[None][0]
            rows = []
            for t in m.get("types", []):
                series = t.get("series") or {}
                rows.extend({"ts": self._ts(ts), "pid": pid, "name": t["name"], "memory_bw_gbps": v}
                            for ts, v in zip(series.get("ts_ns", []), series.get("gbps", [])))
            if rows:
                out[r] = pd.DataFrame(rows, columns=["ts", "pid", "name", "memory_bw_gbps"])
        return out

    def get_memory_bw_summary(self, ranks=None):
        pd = _pd()
        parts = []
        for r, df in self.get_memory_bw_time_series(ranks).items():
            df = df.copy()
            df["rank"] = r
            df = df[df["memory_bw_gbps"] > 0]
            parts.append(df[["rank", "name", "memory_bw_gbps"]].groupby(["rank", "name"]).describe())
        return pd.concat(parts) if parts else None

    def generate_trace_with_counters(self, time_series=None, ranks=None, output_suffix="_with_counters"):
        """Writes, beside each rank's trace, a copy with HTA's counter tracks (queue length per
        stream, memory bandwidth per copy type) added as `ph: "C"` events."""
        import gzip
        # Our TimeSeriesTypes, HTA's own flag (same member names), or a list of either.
        items = time_series if isinstance(time_series, (list, tuple, set)) else [time_series]
        kinds = set()
        for t in items:
            if t is None:
                kinds |= {"QUEUE_LENGTH", "MEMCPY_BANDWIDTH"}
            else:
                kinds |= {n.split(".")[-1].strip().upper() for n in str(getattr(t, "name", None) or t).split("|")}
        unknown = kinds - {"QUEUE_LENGTH", "MEMCPY_BANDWIDTH"}
        if unknown:
            raise Error(f"time_series: {sorted(unknown)}: expected QUEUE_LENGTH and/or MEMCPY_BANDWIDTH")
        ranks = _rank_list(ranks, self._ranks, default_first=True)
        queues = self.get_queue_length_time_series(ranks) if "QUEUE_LENGTH" in kinds else {}
        bws = self.get_memory_bw_time_series(ranks) if "MEMCPY_BANDWIDTH" in kinds else {}
        by_rank = self._rank_files()
        for r in ranks:
            src = by_rank.get(r)
            if src is None:
                raise Error(f"generate_trace_with_counters: cannot tell which file holds rank {r}")
            opener = gzip.open if src.endswith(".gz") else open
            with opener(src, "rt", encoding="utf-8") as f:
                doc = _json.load(f)
            events = doc.setdefault("traceEvents", [])
            # The frames' ts are HTA's (from the origin); the trace's are absolute.
            origin = self._origin_us()
            for _, row in (queues.get(r) if r in queues else _pd().DataFrame()).iterrows():
                events.append({"ph": "C", "cat": "stepscope", "name": "Queue Length", "pid": row["pid"],
                               "tid": int(row["stream"]), "ts": row["ts"] + origin,
                               "args": {f"stream {int(row['stream'])}": row["queue_length"]}})
            for _, row in (bws.get(r) if r in bws else _pd().DataFrame()).iterrows():
                events.append({"ph": "C", "cat": "stepscope", "name": "Memcpy BW", "pid": row["pid"], "tid": 0,
                               "ts": row["ts"] + origin, "args": {row["name"]: row["memory_bw_gbps"]}})
            # HTA's naming: the first ".json" of the file name gets the suffix in front of it.
            dst = src.replace(".json", f"{output_suffix or '_with_counters'}.json", 1)
            with opener(dst, "wt", encoding="utf-8") as f:
                _json.dump(doc, f)

    def _rank_files(self):
        """rank -> the trace file it was read from."""
        return {rank: _os.fsdecode(path) for rank, path in self._t.files()}

    # ---- steps, stragglers, annotations ----------------------------------------------------------

    def get_profiler_steps(self):
        its = set()
        for r in self._ranks:
            its.update(self._timeline(r)["hta"]["load"].get("iterations") or [])
        return sorted(its)

    def get_potential_stragglers(self, profiler_steps=None, num_candidates=2, visualize=False,
                                 straggler_identification_impl=None):
        """HTA's late-start rule (`find_stragglers_with_late_start_comm_kernels`): in each step,
        the ranks whose last long NCCL kernel (of the stream and name whose duration varies most
        across ranks) starts latest. A custom `straggler_identification_impl(df, symbol_table,
        num_candidates, visualize)` gets the rows with their names as text and no symbol table."""
        pd = _pd()
        steps = self.get_profiler_steps() if profiler_steps is None else list(profiler_steps)
        df = pd.concat([self._ops_frame(r).assign(rank=r) for r in self._ranks], ignore_index=True)
        df = df[df["iteration"].isin(steps)].sort_values(["ts", "index"], kind="stable")
        impl = straggler_identification_impl or _late_start_stragglers
        found = impl(df, None, num_candidates, visualize)
        return sorted(int(r) for r in found[found > 0].index)

    def _rows(self, rank, which="gpu", include_last=None):
        pd = _pd()
        include_last = self.include_last_profiler_step if include_last is None else include_last
        df = pd.DataFrame(self._t.rows(rank, include_last, which))
        df["ts"] = (df.pop("ts_ns") - _origin_ns(self._origin_us())) / 1000.0
        df["dur"] = df.pop("dur_ns") / 1000.0
        return df[["index", "ts", "dur", "pid", "tid", "stream", "correlation", "name", "cat"]]

    def get_gpu_kernels_with_user_annotations(self, rank, expand_names=True, shorten_names=True):
        """Every GPU kernel, copy and memset of the rank with the innermost GPU user annotation
        (`gpu_user_annotation`) of its track (pid, tid: the stream's row) that holds its start, in `user_annotation` (None
        outside any). Names are text already; `expand_names` adds HTA's `s_name` and
        `s_user_annotation` columns, shortened (templates and arguments cut) with `shorten_names`.
        None when the rank has no GPU user annotations, as in HTA."""
        import numpy as np
        rank = _rank_list([rank], self._ranks, default_first=True)[0]
        rows = self._rows(rank)
        anno = rows[rows["cat"] == "gpu_user_annotation"]
        if anno.empty:
            return None
        kernels = rows[rows["cat"].isin(["kernel", "Kernel", "gpu_memcpy", "gpu_memset"])].copy()
        kernels = kernels.sort_values(["ts", "index"]).reset_index(drop=True)
        label = np.full(len(kernels), None, dtype=object)
        # Annotations carry no stream argument: they share the (pid, tid) of their stream's row.
        for (pid, tid), a in anno.groupby(["pid", "tid"]):
            sel = np.flatnonzero((kernels["pid"].to_numpy() == pid) & (kernels["tid"].to_numpy() == tid))
            if not len(sel):
                continue
            starts = kernels["ts"].to_numpy()[sel]
            # Outer annotations first, so an inner one (later start, then shorter) overwrites them.
            for _, row in a.sort_values(["ts", "dur"], ascending=[True, False]).iterrows():
                lo, hi = np.searchsorted(starts, [row["ts"], row["ts"] + row["dur"]], side="left")
                label[sel[lo:hi]] = row["name"]
        kernels["user_annotation"] = label
        if expand_names:
            short = _short_name if shorten_names else (lambda n: n)
            kernels["s_name"] = kernels["name"].map(short)
            kernels["s_user_annotation"] = kernels["user_annotation"].map(lambda n: None if n is None else short(n))
        return kernels

    def get_gpu_user_annotation_breakdown(self, use_gpu_annotation=True, visualize=True, duration_ratio=0.8,
                                          num_kernels=1000, allowlist_patterns=None, image_renderer=None):
        """Time per user annotation and rank: name, sum (us), max (us), min (us), stddev, mean (us),
        rank, with the annotations beyond `num_kernels` or past the `duration_ratio` quantile of the
        cumulative sum lumped into "others" (HTA's kernel-table rule). GPU annotations
        (`gpu_user_annotation`) with `use_gpu_annotation`, else the host's `user_annotation` ranges;
        `allowlist_patterns` keeps the names matching one of its regexes. None without annotations."""
        pd = _pd()
        patterns = [_re.compile(p) for p in (allowlist_patterns or [])]
        frames = []
        for r in self._ranks:
            rows = self._rows(r, "gpu" if use_gpu_annotation else "user_annotation")
            if use_gpu_annotation:
                rows = rows[rows["cat"] == "gpu_user_annotation"]
            rows = rows[~rows["name"].str.startswith("ProfilerStep")] if not use_gpu_annotation else rows
            if patterns:
                rows = rows[rows["name"].map(lambda n: any(p.search(n) for p in patterns))]
            if rows.empty:
                continue
            frames.append(_summarize_by_name(rows, r, duration_ratio, num_kernels))
        if not frames:
            return None
        df = pd.concat(frames, ignore_index=True)
        if visualize and (px := _plotly()):
            for r, d in df.groupby("rank"):
                px.pie(d, values="sum (us)", names="name", title=f"User annotation time on rank {r}").show(
                    renderer=image_renderer or None)
                px.bar(d, x="name", y="mean (us)", title=f"Mean user annotation time on rank {r}").show(
                    renderer=image_renderer or None)
        return df

    def get_aten_op_kernels_and_delay(self, ranks=None, sort_by=None):
        raise NotComputedError("get_aten_op_kernels_and_delay: stepscope does not build HTA's per-op kernel and "
                               "delay frame; use stepscope.Report.operators() for per-op GPU time")

    def get_cupti_counter_data_with_operators(self, ranks=None):
        raise NotComputedError("get_cupti_counter_data_with_operators: stepscope does not read CUPTI range-profiler "
                               "counters (cuda_profiler_range events)")

    # ---- critical path ---------------------------------------------------------------------------

    def critical_path_analysis(self, rank, annotation, instance_id, data_load_events=None):
        rank = _rank_list([rank], self._ranks, default_first=True)[0]
        if instance_id is None:
            first = last = 0
        elif isinstance(instance_id, tuple):
            if len(instance_id) != 2:
                raise Error(f"instance_id {instance_id!r}: expected an index or a (start, end) pair")
            first, last = (int(x) for x in instance_id)
        else:
            first = last = int(instance_id)
        if not isinstance(annotation, str):
            raise Error(f"annotation {annotation!r}: expected the name (or part of it) of the annotation")
        zero = _os.environ.get("CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE", "0") not in ("", "0")
        cp = _json.loads(self._t.critical_path(rank, annotation, first, last, list(data_load_events or []),
                                               self.include_last_profiler_step, zero))
        g = CPGraph(rank, cp, self._origin_us())
        return g, g.success

    def overlay_critical_path_analysis(self, rank, critical_path_graph, output_dir, only_show_critical_events=True,
                                       show_all_edges=False):
        """Writes the rank's trace with the path's events marked (`args.critical: 1`) and the path
        as flow arrows; returns the file's path."""
        import gzip
        src = self._rank_files().get(rank)
        if src is None:
            raise Error(f"overlay_critical_path_analysis: cannot tell which file holds rank {rank}")
        opener = gzip.open if src.endswith(".gz") else open
        with opener(src, "rt", encoding="utf-8") as f:
            doc = _json.load(f)
        events = doc.get("traceEvents", [])
        path = critical_path_graph._data.get("path", [])
        on_path = {e["event"] for e in path if e["event"] >= 0}
        kept = []
        for i, e in enumerate(events):
            if i in on_path:
                e = dict(e, args=dict(e.get("args") or {}, critical=1))
            elif only_show_critical_events and e.get("ph") == "X":
                continue
            kept.append(e)
        for n, e in enumerate(path):
            if e["duration_ns"] == 0 and not show_all_edges:
                continue
            kept.append({"ph": "s", "id": n, "name": e["type"], "cat": "critical_path", "ts": _us(e["begin_ns"]),
                         "pid": 0, "tid": 0, "bp": "e"})
            kept.append({"ph": "f", "id": n, "name": e["type"], "cat": "critical_path", "ts": _us(e["end_ns"]),
                         "pid": 0, "tid": 0, "bp": "e"})
        doc["traceEvents"] = kept
        _os.makedirs(output_dir, exist_ok=True)
        name = _os.path.basename(src)
        name = (name[:-8] if name.endswith(".json.gz") else _os.path.splitext(name)[0]) + "_overlaid_critical_path_.json.gz"
        out = _os.path.join(output_dir, name)
        with gzip.open(out, "wt", encoding="utf-8") as f:
            _json.dump(doc, f)
        return out


# ---- TraceDiff ------------------------------------------------------------------------------------

class LabeledTrace:
    """HTA's `LabeledTrace`: a trace set with a label, for TraceDiff. `t` is a
    `stepscope.hta.TraceAnalysis` (HTA's `Trace`)."""

    def __init__(self, label=None, t=None, trace_dir=None):
        if t is not None:
            self.t = t
        elif trace_dir is not None and _os.path.isdir(trace_dir):
            self.t = TraceAnalysis(trace_dir=trace_dir)
        else:
            raise Error("LabeledTrace: give a TraceAnalysis (t) or a trace folder (trace_dir) that exists")
        self.label = label if label else "trace"

    def ranks(self):
        return list(self.t._ranks)

    def iterations(self):
        """Every ProfilerStep number the traces name (HTA reads them from its symbol table, so the
        last step, dropped from the analyses, is listed too)."""
        its = set()
        for r in self.t._ranks:
            names = self._frame(r)["name"]
            its.update(int(n[len("ProfilerStep#"):]) for n in names[names.str.match(r"ProfilerStep#\d+$")].unique())
        return sorted(its)

    def _frame(self, rank):
        return self.t._ops_frame(rank)

    def extract_ops(self, rank=None, iteration=None, device_type=DeviceType.ALL):
        pd = _pd()
        ranks = self.ranks()[:1] if rank is None else ([rank] if isinstance(rank, int) else list(rank))
        for r in ranks:
            if r not in self.ranks():
                raise Error(f"extract_ops: rank {r} is not in trace {self.label} (ranks: {self.ranks()})")
        iterations = self.iterations()[:1] if iteration is None else (
            [iteration] if isinstance(iteration, int) else list(iteration))
        if iteration is None and not iterations:
            raise Error(f"extract_ops: trace {self.label} has no ProfilerStep (iteration)")
        frames = [self._frame(r).assign(rank=r) for r in ranks]
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        df = df[df["iteration"].isin(iterations)]
        if device_type == DeviceType.CPU:
            df = df[df["stream"] < 0]
        elif device_type == DeviceType.GPU:
            df = df[df["stream"] >= 0]
        return df

    def get_ops_summary(self, ops):
        df = ops[["cat", "name", "dur"]].groupby(["cat", "name"])["dur"].agg(["count", "sum"]).reset_index()
        df = df.rename(columns={"count": "counts", "sum": "total_duration"})
        df["short_name"] = df["name"].map(_short_name)
        # HTA's symbol ids: here the position of the text among the summary's distinct values.
        df["cat_id"] = _pd().factorize(df["cat"])[0]
        df["name_id"] = _pd().factorize(df["name"])[0]
        return df[["cat", "name", "short_name", "counts", "total_duration", "cat_id", "name_id"]]


def _labeled(x, label):
    if isinstance(x, LabeledTrace):
        return x
    if isinstance(x, TraceAnalysis):
        return LabeledTrace(label=label, t=x)
    if isinstance(x, (str, _os.PathLike)):
        return LabeledTrace(label=label, trace_dir=_os.fspath(x))
    raise Error(f"expected a LabeledTrace, a TraceAnalysis or a trace folder, got {type(x).__name__}")


class TraceDiff:
    """HTA's `TraceDiff`: op counts and durations of two trace sets side by side."""

    @classmethod
    def compare_traces(cls, control, test, control_rank=None, test_rank=None, control_iteration=None,
                       test_iteration=None, device_type=DeviceType.ALL, use_short_name=False):
        pd = _pd()
        c, t = _labeled(control, "Control"), _labeled(test, "Test")
        if c.label == t.label:
            t.label = f"{t.label}_test"
        col = "short_name" if use_short_name else "name"
        cs = c.get_ops_summary(c.extract_ops(control_rank, control_iteration, device_type)).groupby(col)[
            ["counts", "total_duration"]].sum()
        ts = t.get_ops_summary(t.extract_ops(test_rank, test_iteration, device_type)).groupby(col)[
            ["counts", "total_duration"]].sum()
        comp = pd.concat([cs, ts], axis=1, join="outer", keys=[c.label, t.label]).fillna(0)
        comp.columns = ["_".join(x) for x in comp.columns]
        comp["diff_counts"] = comp[f"{t.label}_counts"] - comp[f"{c.label}_counts"]
        comp["diff_duration"] = comp[f"{t.label}_total_duration"] - comp[f"{c.label}_total_duration"]
        comp["counts_change_categories"] = comp["diff_counts"].map(lambda d: "+" if d > 0 else "-" if d < 0 else "=")
        return comp

    @classmethod
    def ops_diff(cls, control, test, control_rank=None, test_rank=None, control_iteration=None, test_iteration=None,
                 device_type=DeviceType.ALL):
        c, t = _labeled(control, "Control"), _labeled(test, "Test")
        df = cls.compare_traces(c, t, control_rank, test_rank, control_iteration, test_iteration, device_type)
        cc, tc, d = f"{c.label}_counts", f"{t.label}_counts", df["diff_counts"]
        return {"added": df.loc[df[cc].eq(0) & df[tc].gt(0)].index.tolist(),
                "deleted": df.loc[df[cc].gt(0) & df[tc].eq(0)].index.tolist(),
                "increased": df.loc[df[cc].gt(0) & d.gt(0)].index.tolist(),
                "decreased": df.loc[df[tc].gt(0) & d.lt(0)].index.tolist(),
                "unchanged": df.loc[df[tc].gt(0) & d.eq(0)].index.tolist()}

    @classmethod
    def visualize_counts_diff(cls, df, show_image=True, export_image_path=None):
        cls._visualize(df, "_counts", "diff_counts", "Ops Count Comparison", show_image, export_image_path)

    @classmethod
    def visualize_duration_diff(cls, df, show_image=True, export_image_path=None):
        cls._visualize(df, "_total_duration", "diff_duration", "Ops Duration Comparison", show_image,
                       export_image_path)

    @staticmethod
    def _visualize(df, suffix, diff, title, show_image, export_image_path):
        labels = [c[:-len("_total_duration")] for c in df.columns if c.endswith("_total_duration")]
        if len(labels) < 2:
            raise Error("visualize: expected the frame TraceDiff.compare_traces returns")
        try:
            import plotly.graph_objects as go
        except ImportError:
            _warnings.warn("plotly is not installed, so nothing is drawn (install plotly to draw the comparison)",
                           stacklevel=3)
            return
        fig = go.Figure(data=[go.Bar(name=labels[0], x=df.index, y=df[labels[0] + suffix]),
                              go.Bar(name=labels[1], x=df.index, y=df[labels[1] + suffix]),
                              go.Bar(name="Difference", x=df.index, y=df[diff])])
        fig.update_layout(barmode="group", title_text=title)
        if show_image:
            fig.show()
        if export_image_path:
            fig.write_image(export_image_path)


def _late_start_stragglers(df, symbol_table, n_stragglers=2, visualize=False, min_normalized_duration=0.01):
    """HTA's find_stragglers_with_late_start_comm_kernels on our rows (names as text): a Series
    rank -> the number of steps in which the rank is among the n latest starters."""
    pd = _pd()
    iterations = sorted(df["iteration"].unique())
    if not len(df) or not iterations:
        raise Error("get_potential_stragglers: no rows in the profiler steps asked for")
    t_min = df["ts"].min()
    mean_iter = ((df["ts"] + df["dur"]).max() - t_min) / float(len(iterations))
    long_comm = df[(df["stream"] > 0) & (df["iteration"] > 0) & (df["dur"] >= mean_iter * min_normalized_duration)
                   & df["name"].str.startswith("ncclKernel")]
    if long_comm.empty:
        raise Error("get_potential_stragglers: the trace has no NCCL kernels long enough to compare ranks by "
                    "(HTA fails here with 'attempt to get argmax of an empty sequence')")
    last = long_comm.groupby(["rank", "stream", "iteration", "name"], as_index=False).last()
    last["normalized_start_time"] = (last["ts"] - t_min) / mean_iter
    last["duration"] = last["dur"] / mean_iter
    spread = last.groupby(["stream", "iteration", "name"])["duration"].std().groupby(["stream", "name"]).mean()
    if spread.isna().all():
        raise Error("get_potential_stragglers: one rank only: nothing to compare")
    stream, name = spread.idxmax()
    metric = last[(last["stream"] == stream) & (last["name"] == name)][["rank", "iteration", "normalized_start_time"]]
    n = max(1, int(n_stragglers))
    out = pd.Series(0, index=sorted(metric["rank"].unique()), dtype=int)
    for _, group in metric.groupby("iteration"):
        values = sorted(group["normalized_start_time"], reverse=True)
        threshold = values[min(n, len(values)) - 1]
        for r in group.loc[group["normalized_start_time"] >= threshold, "rank"]:
            out[r] += 1
    if visualize and (px := _plotly()):
        px.bar(metric, x="rank", y="normalized_start_time", facet_col="iteration", title="Potential Stragglers").show()
    return out


def _summarize_by_name(rows, rank, duration_ratio, num_kernels):
    """HTA's per-name table (`_aggr_gpu_kernel_time`): per name sum, max, min, mean and std of the
    durations, by sum; with more than `num_kernels` names, those past the `duration_ratio` quantile
    of the cumulative sum or past the first `num_kernels` become "others", and the table is grouped
    again over the per-name sums (so a named row shows its sum as max, min and mean)."""
    g = rows.groupby("name")["dur"].agg(["sum", "max", "min", "mean", "std"]).reset_index()
    g = g.sort_values("sum", ascending=False, ignore_index=True)
    g["std"] = g["std"].fillna(0.0)
    if len(g) > num_kernels:
        cum = g["sum"].cumsum()
        g.loc[cum > cum.quantile(duration_ratio), "name"] = "others"
        g.loc[g.index >= num_kernels, "name"] = "others"
        g = g.groupby("name")["sum"].agg(["sum", "max", "min", "mean", "std"]).reset_index()
        g["std"] = g["std"].fillna(0.0)
    g = g.rename(columns={"sum": "sum (us)", "max": "max (us)", "min": "min (us)", "mean": "mean (us)", "std": "stddev"})
    g["rank"] = rank
    return g[["name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)", "rank"]]


_SHORT = _re.compile(r"[(<].*$")


def _short_name(name):
    """HTA's shortened kernel name: the text before the template or argument list."""
    s = _SHORT.sub("", name).strip()
    return s or name
