"""pandas DataFrames of a stepscope report, for notebooks.

`stepscope.analyze_report(paths, ...)` analyses like `stepscope.analyze` and returns a `Report`:
the same JSON document, readable as a dict, with methods that turn its tables into DataFrames.
Methods that give a table Meta's Holistic Trace Analysis (HTA) also gives carry HTA's
`TraceAnalysis` method names and return what HTA returns (a frame, a tuple of frames, or a dict of
frames per rank); the others are stepscope's own.

Units, the same in every frame: times and durations in microseconds, in columns ending `_us`
(timestamps are absolute, as in the trace), as HTA's frames have them; bytes in `_bytes` columns,
bandwidth in `_gbps`; shares are fractions 0..1. HTA's own percentage columns keep HTA's names and
its 0..100 scale, rounded as HTA rounds them (`*_pctg`, `percentage`, `idle_time_ratio`). The JSON
document underneath has every duration in nanoseconds (`_ns`) and every share as a fraction
(docs/json.md); these frames convert. Frames of per-rank tables have a `rank`
column; the time series come as a dict rank -> frame, as in HTA.

pandas is imported on the first call that builds a frame, not by `import stepscope`.

The examples run on HTA's `sampled_world128` traces (TRACE, a folder): two ranks of a 128-rank job,
too few to name a straggler:

>>> import stepscope
>>> report = stepscope.analyze_report(TRACE)
>>> report["verdict"]["bound"]
'host/launch-bound'
>>> report.get_temporal_breakdown()["rank"].tolist()
[0, 1]
"""
from collections.abc import Mapping as _Mapping
import json as _json
import numbers as _numbers

__all__ = ["Report", "analyze_report"]

# The partition's categories in the order the docs list them (the JSON's keys come sorted).
_CATEGORIES = (
    "compute_forward", "compute_backward", "compute_optimizer", "compute_other",
    "grad_sync_exposed", "h2d_copy", "d2h_copy", "memset",
    "batch_wait", "sync_stall", "launch_overhead", "host_compute", "side_work", "idle",
)

_OPERATOR_GROUPINGS = ("name", "name_and_shape", "module")
_CRITICAL_PATH_GROUPINGS = {"kind": "by_kind", "bound_by": "by_bound_by", "type": "by_edge_type"}
_STATS = ("count", "mean", "std", "min", "p25", "median", "p75", "p95", "max", "sum")


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("stepscope's DataFrames need pandas: install it with "
                          "`apt-get install python3-pandas` (Debian) or `pip install pandas`") from e
    return pandas


def _frame(rows, columns, attrs=None):
    """A frame with `columns` first, then any key the rows hold that `columns` does not name:
    keys the C++ report gains later still reach the user instead of being dropped."""
    pd = _pandas()
    extra = []
    for row in rows:
        extra.extend(k for k in row if k not in columns and k not in extra)
    df = pd.DataFrame(rows, columns=list(columns) + extra)
    if attrs:
        df.attrs.update(attrs)
    return df


def _us(ns):
    return None if ns is None else ns / 1000.0


def _in_us(row):
    """A JSON row with its `_ns` keys as `_us` columns (the frames' unit), other keys as they are."""
    return {(k[:-3] + "_us" if k.endswith("_ns") else k): (_us(v) if k.endswith("_ns") else v) for k, v in row.items()}


def _hta_round(x, decimals):
    """numpy.around, as HTA's pandas rounding does it: scale, round half to even, unscale."""
    if x is None or x != x:
        return float("nan")
    scale = 10.0 ** decimals
    return round(x * scale) / scale


def _hta_percent(share, decimals):
    """HTA's percentage of a share of the JSON (a fraction), rounded as HTA rounds it. HTA computes
    100 * (part / whole) and the share is part / whole, so the figure is HTA's bit for bit."""
    return float("nan") if share is None else _hta_round(100.0 * share, decimals)


def _stats(stats, suffix="", scale=1.0):
    """A summary object of the JSON (count, mean, ... sum) as columns; count has no unit. `scale`
    converts the values (1e-3: ns to µs)."""
    def value(k):
        v = stats.get(k)
        return v if k == "count" or v is None else v * scale
    return {(k if k == "count" else k + suffix): value(k) for k in _STATS}


def _stat_columns(suffix=""):
    return [k if k == "count" else k + suffix for k in _STATS]


def _wanted(ranks):
    if ranks is None:
        return None
    if isinstance(ranks, _numbers.Integral) and not isinstance(ranks, bool):
        return {int(ranks)}
    return {int(r) for r in ranks}


class Report(_Mapping):
    """The `stepscope analyze --json` document, read like a dict, with DataFrames of its tables.

    `Report(d)` wraps a dict from `stepscope.analyze`; `Report.from_json(path)` reads a file that
    `stepscope analyze --json FILE` wrote; `report.raw` is the dict itself. Indexing, `in`,
    `keys()`, `get()` and `==` (with a dict or another Report) work as on the dict.
    """

    def __init__(self, data):
        if isinstance(data, Report):
            data = data.raw
        if not isinstance(data, dict) or "ranks" not in data:
            raise TypeError("Report: expected the dict stepscope.analyze returns")
        self._data = data

    @classmethod
    def from_json(cls, path):
        """A report from the JSON file `stepscope analyze --json FILE` wrote."""
        from ._stepscope import Error
        try:
            with open(path, encoding="utf-8") as f:
                data = _json.load(f)
        except (OSError, TypeError) as e:
            raise Error(f"{path}: cannot read the report: {getattr(e, 'strerror', None) or e}") from None
        except ValueError as e:  # bad JSON or bad UTF-8
            raise Error(f"{path}: not a stepscope JSON report: {e}") from None
        if not isinstance(data, dict) or "ranks" not in data:
            raise Error(f"{path}: not a stepscope JSON report (no 'ranks')")
        return cls(data)

    @property
    def raw(self):
        """The report as the plain dict `stepscope.analyze` returns (not a copy)."""
        return self._data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        verdict = self._data.get("verdict") or {}
        ranks = len(self._data["ranks"])
        bound = verdict.get("bound", "no verdict")
        return f"<stepscope.Report {self._data.get('schema', '?')}: {ranks} rank{'s' * (ranks != 1)}, {bound}>"

    def _ranks(self, ranks=None):
        wanted = _wanted(ranks)
        return [r for r in self._data["ranks"] if wanted is None or r["rank"] in wanted]

    @staticmethod
    def _hta(rank, key):
        return ((rank.get("gpu_timeline") or {}).get("hta") or {}).get(key) or {}

    @staticmethod
    def _drilldown(rank, key):
        return (rank.get("drilldown") or {}).get(key) or {}

    # ---- HTA's tables --------------------------------------------------------------------------

    def get_temporal_breakdown(self):
        """HTA's temporal breakdown: one row per rank with GPU activity.

        Columns: rank, idle_time_us, compute_time_us, non_compute_time_us, kernel_time_us (the
        span from the first GPU row's start to the last one's end, HTA's `kernel_time`), and
        idle/compute/non_compute_time_pctg (0..100, rounded to two places as HTA rounds them).
        Ranks without GPU rows are left out (HTA raises on them).

        >>> t = report.get_temporal_breakdown()
        >>> t[["rank", "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]]
           rank  idle_time_pctg  compute_time_pctg  non_compute_time_pctg
        0     0           53.56              17.71                  28.74
        1     1           54.72              22.57                  22.72
        """
        cols = ["rank", "idle_time_us", "compute_time_us", "non_compute_time_us", "kernel_time_us",
                "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]
        rows = []
        for rank in self._ranks():
            t = self._hta(rank, "temporal_breakdown")
            if t.get("available"):
                row = {"rank": rank["rank"]}
                row.update({k: _us(t.get(k[:-3] + "_ns")) for k in cols if k.endswith("_us")})
                row.update({k: _hta_percent(t.get(k[:-5] + "_share"), 2) for k in cols if k.endswith("_pctg")})
                rows.append(row)
        return _frame(rows, cols)

    def get_idle_time_breakdown(self, ranks=None, streams=None, show_idle_interval_stats=False):
        """HTA's idle time breakdown per rank and stream: a tuple (idle_time_df, interval_stats_df).

        idle_time_df: rank, stream, idle_category (host_wait, kernel_wait, other), idle_time_us,
        idle_time_ratio (of the stream's idle time, rounded to two places as HTA does). As in
        HTA, the second item is None unless `show_idle_interval_stats`; then it holds the gaps'
        statistics per category: rank, stream, idle_category, count, mean_us, std_us, min_us,
        p25_us, median_us, p75_us, p95_us, max_us, sum_us. `ranks` and `streams` keep only those.

        >>> idle, stats = report.get_idle_time_breakdown(ranks=[0], streams=[7])
        >>> idle[["stream", "idle_category", "idle_time_ratio"]]
           stream idle_category  idle_time_ratio
        0       7     host_wait             0.45
        1       7   kernel_wait             0.00
        2       7         other             0.55
        >>> stats is None
        True
        """
        wanted_streams = _wanted(streams)
        idle_cols = ["rank", "stream", "idle_category", "idle_time_us", "idle_time_ratio"]
        stat_cols = ["rank", "stream", "idle_category"] + _stat_columns("_us")
        idle_rows, stat_rows = [], []
        for rank in self._ranks(ranks):
            for s in self._hta(rank, "idle_time_breakdown").get("streams", []):
                if wanted_streams is not None and s["stream"] not in wanted_streams:
                    continue
                for c in s["categories"]:
                    key = {"rank": rank["rank"], "stream": s["stream"], "idle_category": c["idle_category"]}
                    idle_rows.append(dict(key, idle_time_us=_us(c["idle_time_ns"]),
                                          idle_time_ratio=_hta_round(c["idle_time_share"], 2)))
                    stat_rows.append(dict(key, **_stats(c.get("interval_stats_ns") or {}, "_us", 1e-3)))
        idle = _frame(idle_rows, idle_cols)
        return idle, (_frame(stat_rows, stat_cols) if show_idle_interval_stats else None)

    def get_comm_comp_overlap(self):
        """HTA's computation-communication overlap: rank, comp_comm_overlap_pctg (0..100, HTA's
        rounding; NaN where the rank has no communication, as in HTA), overlap_us,
        communication_us.

        >>> report.get_comm_comp_overlap()[["rank", "comp_comm_overlap_pctg"]]
           rank  comp_comm_overlap_pctg
        0     0                   11.81
        1     1                   20.05
        """
        rows = []
        for rank in self._ranks():
            o = self._hta(rank, "comm_comp_overlap")
            if not o:
                continue
            rows.append({"rank": rank["rank"],
                         "comp_comm_overlap_pctg": _hta_percent(o.get("comp_comm_overlap_share"), 2)
                         if o.get("available") else float("nan"),
                         "overlap_us": _us(o.get("overlap_ns")), "communication_us": _us(o.get("communication_ns"))})
        df = _frame(rows, ["rank", "comp_comm_overlap_pctg", "overlap_us", "communication_us"])
        return df.astype({"comp_comm_overlap_pctg": float}) if rows else df

    def get_gpu_kernel_breakdown(self):
        """HTA's kernel breakdown: a tuple (kernel_type_df, kernel_df), as HTA returns it.

        kernel_type_df, summed over ranks as HTA does: kernel_type (COMPUTATION, COMMUNICATION,
        MEMORY or an overlap of them, e.g. "COMPUTATION overlapping COMMUNICATION"), sum_us,
        percentage (of all busy time, 0..100, one decimal as HTA rounds it).

        kernel_df, per rank and type, the top kernels with the rest lumped into "others":
        rank, kernel_type, name, sum_us, max_us, min_us, stddev_us, mean_us (HTA's columns, which
        after its regrouping are statistics of per-name sums), and the true per-launch figures
        beside them: count (launches), names (names lumped into the row), launch_max_us,
        launch_min_us, launch_mean_us; class (stepscope's kernel class), others.

        >>> types, kernels = report.get_gpu_kernel_breakdown()
        >>> types[["kernel_type", "percentage"]].head(3)
                                     kernel_type  percentage
        0                          COMMUNICATION        55.5
        1                            COMPUTATION        33.6
        2  COMPUTATION overlapping COMMUNICATION        10.3
        >>> sorted(kernels["kernel_type"].unique())
        ['COMMUNICATION', 'COMPUTATION', 'MEMORY']
        """
        type_cols = ["kernel_type", "sum_us", "percentage"]
        types = [{"kernel_type": t.get("kernel_type"), "sum_us": _us(t.get("sum_ns")),
                  "percentage": _hta_percent(t.get("share"), 1)}
                 for t in self._data.get("hta_kernel_types_all_ranks") or []]
        kernel_cols = ["rank", "kernel_type", "name", "sum_us", "max_us", "min_us", "stddev_us", "mean_us",
                       "count", "names", "launch_max_us", "launch_min_us", "launch_mean_us", "class", "others"]
        rows = []
        for rank in self._ranks():
            for k in self._hta(rank, "kernel_breakdown").get("top_kernels", []):
                rows.append(dict(_in_us(k), rank=rank["rank"]))
        return _frame(types, type_cols), _frame(rows, kernel_cols)

    def get_queue_length_summary(self, ranks=None):
        """HTA's queue length summary: per rank and stream, the launches waiting to start.

        Columns: rank, stream, count, mean, std, min, p25, median, p75, p95, max, sum (pandas
        `describe()` over the series' change points, as HTA computes it), time_at_max_queue_us
        (time spent with the queue full, at 1024 launches or more).

        >>> q = report.get_queue_length_summary(ranks=0)
        >>> q[["stream", "count", "max"]]
           stream  count   max
        0       7   1052  76.0
        1      23    126   4.0
        2      25     16   8.0
        3      84      8   1.0
        4     203      2   1.0
        """
        cols = ["rank", "stream"] + _stat_columns() + ["time_at_max_queue_us"]
        rows = []
        for rank in self._ranks(ranks):
            for s in self._drilldown(rank, "queue_length").get("streams", []):
                rows.append(dict({"rank": rank["rank"], "stream": s["stream"]}, **_stats(s.get("summary") or {}),
                                 time_at_max_queue_us=_us(s.get("time_at_max_queue_ns"))))
        return _frame(rows, cols)

    def get_queue_length_time_series(self, ranks=None):
        """HTA's queue length time series: a dict rank -> frame with ts_us, stream, queue_length.

        One row per change of a stream's queue, in time order per stream. Series longer than
        20,000 points are thinned evenly by the analysis (the summary uses every point).

        >>> series = report.get_queue_length_time_series()
        >>> sorted(series), list(series[0].columns)
        ([0, 1], ['ts_us', 'stream', 'queue_length'])
        """
        out = {}
        for rank in self._ranks(ranks):
            rows = []
            for s in self._drilldown(rank, "queue_length").get("streams", []):
                series = s.get("series") or {}
                rows.extend({"ts_us": _us(ts), "stream": s["stream"], "queue_length": v}
                            for ts, v in zip(series.get("ts_ns", []), series.get("queue_length", [])))
            out[rank["rank"]] = _frame(rows, ["ts_us", "stream", "queue_length"])
        return out

    def get_memory_bw_summary(self, ranks=None):
        """HTA's memory bandwidth summary: per rank and copy type (`Memcpy HtoD`, `Memset`, ...).

        Columns: rank, name, count, mean_gbps, std_gbps, min_gbps, p25_gbps, median_gbps,
        p75_gbps, p95_gbps, max_gbps, sum_gbps: `describe()` over the series' points above 0,
        as HTA computes it.

        >>> bw = report.get_memory_bw_summary()
        >>> sorted(bw["name"].unique())
        ['Memcpy DtoD', 'Memcpy DtoH', 'Memcpy HtoD', 'Memset']
        """
        cols = ["rank", "name"] + _stat_columns("_gbps")
        rows = []
        for rank in self._ranks(ranks):
            for t in self._drilldown(rank, "memory_bandwidth").get("types", []):
                rows.append(dict({"rank": rank["rank"], "name": t["name"]}, **_stats(t.get("summary_gbps") or {}, "_gbps")))
        return _frame(rows, cols)

    def get_memory_bw_time_series(self, ranks=None):
        """HTA's memory bandwidth time series: a dict rank -> frame with ts_us, name, memory_bw_gbps.

        The summed bandwidth of the copies of each type in flight, one row per change. Series
        longer than 20,000 points are thinned evenly by the analysis.

        >>> series = report.get_memory_bw_time_series(ranks=[1])
        >>> list(series), list(series[1].columns)
        ([1], ['ts_us', 'name', 'memory_bw_gbps'])
        """
        out = {}
        for rank in self._ranks(ranks):
            rows = []
            for t in self._drilldown(rank, "memory_bandwidth").get("types", []):
                series = t.get("series") or {}
                rows.extend({"ts_us": _us(ts), "name": t["name"], "memory_bw_gbps": v}
                            for ts, v in zip(series.get("ts_ns", []), series.get("gbps", [])))
            out[rank["rank"]] = _frame(rows, ["ts_us", "name", "memory_bw_gbps"])
        return out

    def get_frequent_cuda_kernel_sequences(self, ranks=None):
        """HTA's frequent CUDA kernel sequences: fusion candidates under one op per rank.

        The analysis picks the op (the aten op with the most qualifying instances) unless told.
        Columns: rank, op, pattern (the op and the GPU records one instance launched, joined by
        "|" as in HTA), length (records in the pattern), count (instances with this exact
        sequence), gpu_time_us, cpu_time_us (HTA's GPU kernel and CPU op durations).

        >>> seq = report.get_frequent_cuda_kernel_sequences(ranks=0)
        >>> seq.loc[0, ["op", "count", "length"]].tolist()
        ['aten::binary_cross_entropy_with_logits', 2, 3]
        """
        cols = ["rank", "op", "pattern", "length", "count", "gpu_time_us", "cpu_time_us"]
        rows = []
        for rank in self._ranks(ranks):
            k = self._drilldown(rank, "kernel_sequences")
            for s in k.get("sequences", []):
                rows.append({"rank": rank["rank"], "op": k.get("op"), "pattern": "|".join(s["pattern"]),
                             "length": len(s["pattern"]) - 1, "count": s["count"],
                             "gpu_time_us": _us(s["gpu_time_ns"]), "cpu_time_us": _us(s["cpu_time_ns"])})
        return _frame(rows, cols)

    def get_critical_path_breakdown(self, ranks=None):
        """HTA's critical path breakdown: the path's edges in path order, per rank.

        The path is that of the middle kept ProfilerStep (or the whole trace without steps).
        Columns: rank, order (0-based position on the path), begin_us, end_us, duration_us,
        kind (stepscope's split: compute, communication, copy, launch, host, sync, input, idle,
        none), bound_by (HTA's), type (HTA's edge type), event (the trace event's id; -1 for
        none), stream (-1 on the host), name. Ranks where the path could not be built are left
        out; `critical_path_summary` says why.

        >>> path = report.get_critical_path_breakdown(ranks=0)
        >>> round(path["duration_us"].sum() * 1000) == report["ranks"][0]["drilldown"]["critical_path"]["length_ns"]
        True
        """
        cols = ["rank", "order", "begin_us", "end_us", "duration_us", "kind", "bound_by", "type",
                "event", "stream", "name"]
        rows = []
        for rank in self._ranks(ranks):
            cp = self._drilldown(rank, "critical_path")
            if cp.get("success"):
                rows.extend(dict(_in_us(e), rank=rank["rank"], order=i) for i, e in enumerate(cp.get("path", [])))
        return _frame(rows, cols)

    # ---- stepscope's own tables ----------------------------------------------------------------

    def critical_path_summary(self, by="kind", ranks=None):
        """The critical path's length per rank, split by `by`: "kind" (stepscope's split),
        "bound_by" (HTA's `get_critical_path_breakdown` summary) or "type" (HTA's edge types).

        Columns: rank, annotation (the step the path is of), the grouping column, duration_us,
        edges, share (of the path's length, 0..1), error (why the path is missing; one row
        per such rank, with the other columns empty).

        >>> s = report.critical_path_summary(ranks=0).set_index("kind")
        >>> s.loc["host", "share"] > 0.9
        True
        """
        if by not in _CRITICAL_PATH_GROUPINGS:
            raise ValueError(f"critical_path_summary: by={by!r}: expected one of {sorted(_CRITICAL_PATH_GROUPINGS)}")
        cols = ["rank", "annotation", by, "duration_us", "edges", "share", "error"]
        rows = []
        for rank in self._ranks(ranks):
            cp = self._drilldown(rank, "critical_path")
            if not cp:
                continue
            if not cp.get("success"):
                rows.append({"rank": rank["rank"], "error": cp.get("error", "")})
                continue
            groups = cp.get("by_kind") if by == "kind" else (cp.get("hta") or {}).get(_CRITICAL_PATH_GROUPINGS[by])
            length = cp.get("length_ns") or 0
            for name, g in (groups or {}).items():
                share = g.get("share")
                if share is None:
                    share = g["duration_ns"] / length if length > 0 else float("nan")
                rows.append({"rank": rank["rank"], "annotation": cp.get("annotation"), by: name,
                             "duration_us": _us(g["duration_ns"]), "edges": g["edges"], "share": share, "error": None})
        return _frame(rows, cols)

    def step_partition(self):
        """Every step of every rank, split into the partition's categories.

        One row per rank and step: rank, step (its number), name, warmup (left out of the
        steady-state figures), warmup_reason, start_us, end_us, duration_us, then one column per
        category, `<category>_us` (compute_forward_us ... idle_us). The categories of a row sum
        to its duration_us.

        >>> p = report.step_partition()
        >>> p[["rank", "step", "warmup"]].values.tolist()
        [[0, 551, False], [0, 552, False], [1, 551, False], [1, 552, False]]
        >>> cats = [c for c in p.columns if c.endswith("_us") and c not in ("start_us", "end_us", "duration_us")]
        >>> bool(((p[cats].sum(axis=1) - p["duration_us"]).abs() < 1e-3).all())
        True
        """
        steps = [(rank["rank"], s) for rank in self._ranks() for s in (rank.get("partition") or {}).get("steps", [])]
        seen = {c for _, s in steps for c in s.get("categories_ns", {})}
        cats = [c for c in _CATEGORIES if c in seen] + sorted(seen.difference(_CATEGORIES))
        if not steps:
            cats = list(_CATEGORIES)
        cols = ["rank", "step", "name", "warmup", "warmup_reason", "start_us", "end_us", "duration_us"]
        rows = []
        for rank, s in steps:
            row = {"rank": rank, "step": s["number"], "name": s["name"], "warmup": s["warmup"],
                   "warmup_reason": s["warmup_reason"], "start_us": _us(s["start_ns"]), "end_us": _us(s["end_ns"]),
                   "duration_us": _us(s["duration_ns"])}
            row.update({c + "_us": _us(s["categories_ns"].get(c, 0)) for c in cats})
            rows.append(row)
        return _frame(rows, cols + [c + "_us" for c in cats])

    def operators(self, grouping="name", ranks=None):
        """The operator view: host ops grouped by "name", "name_and_shape" or "module".

        Columns: rank, name, input_dims (name_and_shape) or module (module), calls,
        host_total_us, host_self_us, gpu_total_us, gpu_self_us, kernels, kernels_per_call,
        step_share, gpu_share (0..1), stage, on_critical_path; sorted by host self time per rank.
        A rank whose trace has no module ranges has no "module" rows.

        >>> ops = report.operators(ranks=0)
        >>> len(ops) == len(report["ranks"][0]["drilldown"]["operators"][0]["rows"])
        True
        """
        if grouping not in _OPERATOR_GROUPINGS:
            raise ValueError(f"operators: grouping={grouping!r}: expected one of {list(_OPERATOR_GROUPINGS)}")
        extra = {"name_and_shape": ["input_dims"], "module": ["module"]}.get(grouping, [])
        cols = ["rank", "name"] + extra + ["calls", "host_total_us", "host_self_us", "gpu_total_us", "gpu_self_us",
                                           "kernels", "kernels_per_call", "step_share", "gpu_share", "stage",
                                           "on_critical_path"]
        rows = []
        for rank in self._ranks(ranks):
            for view in (rank.get("drilldown") or {}).get("operators", []):
                if view.get("grouping") == grouping:
                    rows.extend(dict(_in_us(r), rank=rank["rank"]) for r in view["rows"])
        return _frame(rows, cols)

    def kernels(self, ranks=None):
        """The kernel view: one row per rank and GPU record name (kernels, copies, memsets).

        Columns: rank, name, kind, class, engine, dtype, calls, total_us, mean_us, min_us,
        max_us, share (of the rank's GPU time, 0..1), launching_op, achieved_occupancy (0..1,
        time-weighted), registers_per_thread, shared_memory_bytes. Unlike
        `get_gpu_kernel_breakdown`, every record counts (HTA drops the last profiler step).

        >>> k = report.kernels(ranks=1)
        >>> bool(abs(k["share"].sum() - 1) < 1e-9)
        True
        """
        cols = ["rank", "name", "kind", "class", "engine", "dtype", "calls", "total_us", "mean_us", "min_us",
                "max_us", "share", "launching_op", "achieved_occupancy", "registers_per_thread",
                "shared_memory_bytes"]
        rows = []
        for rank in self._ranks(ranks):
            rows.extend(dict(_in_us(r), rank=rank["rank"]) for r in self._drilldown(rank, "kernels").get("rows", []))
        return _frame(rows, cols)

    def rank_comparison(self):
        """The ranks side by side over their steady-state steps: rank, step_us, compute_us,
        grad_sync_exposed_us, straggler (the rank the others wait for).

        `attrs` holds the job's figures: slowdown ("rank-local", "global", or "not_judged" when
        too few of the job's ranks are in view: `withheld` says why, `world_size` is the job's
        size), straggler (a rank or None), straggler_compute_excess (0..1), median_wait_us, balanced_saving_us,
        mean_collective_skew_us, and of the clock alignment: clock_method, clock_residual_us
        (median), arrival_skew_mean_us, last_arrival_rank (or None), last_arrival_share (0..1).
        Columns clock_offset_us and arrival_wait_us are each rank's clock offset from the first
        rank's and its summed wait for the last rank to reach a collective (NaN when not aligned).

        >>> rc = report.rank_comparison()
        >>> rc[["rank", "straggler"]].values.tolist(), rc.attrs["slowdown"], rc.attrs["world_size"]
        ([[0, False], [1, False]], 'not_judged', 128)
        """
        rc = self._data.get("rank_comparison") or {}
        straggler = rc.get("straggler")
        clocks = rc.get("clock_alignment") or {}
        by_rank = {c["rank"]: c for c in clocks.get("ranks", []) if c.get("aligned")}
        nan = float("nan")
        rows = [{"rank": r["rank"], "step_us": _us(r["step_ns"]), "compute_us": _us(r["compute_ns"]),
                 "grad_sync_exposed_us": _us(r["grad_sync_exposed_ns"]), "straggler": r["rank"] == straggler,
                 "clock_offset_us": _us(by_rank[r["rank"]]["offset_ns"]) if r["rank"] in by_rank else nan,
                 "arrival_wait_us": _us(by_rank[r["rank"]]["arrival_wait_ns"]) if r["rank"] in by_rank else nan}
                for r in rc.get("rows", [])]
        attrs = {"slowdown": rc.get("slowdown"), "straggler": straggler, "world_size": rc.get("world_size"),
                 "withheld": rc.get("withheld", ""),
                 "straggler_compute_excess": rc.get("straggler_compute_excess"),
                 "median_wait_us": _us(rc.get("median_wait_ns")),
                 "balanced_saving_us": _us(rc.get("balanced_saving_ns")),
                 "mean_collective_skew_us": _us(rc.get("mean_collective_skew_ns")),
                 "clock_method": clocks.get("method"),
                 "clock_residual_us": _us(clocks.get("residual_p50_ns")),
                 "arrival_skew_mean_us": _us(clocks.get("arrival_skew_mean_ns")),
                 "last_arrival_rank": clocks.get("last_rank"),
                 "last_arrival_share": clocks.get("last_share")}
        return _frame(rows, ["rank", "step_us", "compute_us", "grad_sync_exposed_us", "straggler",
                             "clock_offset_us", "arrival_wait_us"], attrs)

    def levers(self):
        """The lever catalogue, in the report's order (applicable levers first, by expected value).

        Columns: id, title, applies, speedup_bound (the Amdahl bound step / (step - removable)),
        removable_us, target_us (the time the lever acts on), step_us, critical_path_share (0..1;
        NaN where the path is unknown), risk, targets, knob, basis, numerics_warning,
        comparability_warning.

        >>> lv = report.levers()
        >>> lv.loc[0, ["id", "applies"]].tolist()
        ['micro_batch', True]
        >>> bool((lv["speedup_bound"] >= 1).all())
        True
        """
        cols = ["id", "title", "applies", "speedup_bound", "removable_us", "target_us", "step_us",
                "critical_path_share", "risk", "targets", "knob", "basis", "numerics_warning", "comparability_warning"]
        rows = []
        for lever in self._data.get("levers") or []:
            rows.append(_in_us(lever))
        df = _frame(rows, cols)
        return df.astype({"critical_path_share": float}) if rows else df

    def memory_timeline(self, ranks=None):
        """Allocated and reserved memory over time, from the trace's `[memory]` events
        (`profile_memory=True`): rank, device_type (Kineto's: 0 CPU, 1 CUDA), device_id, ts_us,
        allocated_bytes, reserved_bytes. Empty when the trace has no memory events.

        >>> list(report.memory_timeline().columns)
        ['rank', 'device_type', 'device_id', 'ts_us', 'allocated_bytes', 'reserved_bytes']
        """
        cols = ["rank", "device_type", "device_id", "ts_us", "allocated_bytes", "reserved_bytes"]
        rows = []
        for rank in self._ranks(ranks):
            for d in self._drilldown(rank, "memory").get("devices", []):
                series = d.get("series") or {}
                rows.extend({"rank": rank["rank"], "device_type": d["device_type"], "device_id": d["device_id"],
                             "ts_us": _us(ts), "allocated_bytes": a, "reserved_bytes": r}
                            for ts, a, r in zip(series.get("ts_ns", []), series.get("allocated_bytes", []),
                                                series.get("reserved_bytes", [])))
        return _frame(rows, cols)

    def _memory_devices(self):
        for snap in self._data.get("memory_snapshots") or []:
            for device in snap.get("devices", []):
                yield snap, device

    def memory_peak_breakdown(self):
        """The peak of each memory snapshot's device split by class (`stepscope analyze x.pickle`):
        path, device, class (parameters, gradients, optimizer_state, activations, temporaries,
        unknown), bytes, share (0..1 of the peak's allocated bytes), peak_allocated_bytes,
        peak_reserved_bytes, step. Empty when no snapshot was analysed.
        """
        cols = ["path", "device", "class", "bytes", "share", "peak_allocated_bytes", "peak_reserved_bytes", "step"]
        rows = []
        for snap, d in self._memory_devices():
            peak = d["peak"]
            allocated = peak["allocated_bytes"]
            for name, value in peak["by_class"].items():
                rows.append({"path": snap["path"], "device": d["device"], "class": name, "bytes": value,
                             "share": value / allocated if allocated else 0.0, "peak_allocated_bytes": allocated,
                             "peak_reserved_bytes": peak["reserved_bytes"], "step": peak["step"]})
        return _frame(rows, cols)

    def memory_snapshot_timeline(self):
        """Memory over a snapshot's trace, by class (thinned to at most 400 points, the peak kept):
        path, device, entry (index in the device's trace), time_us (NaN before PyTorch 2.1),
        allocated_bytes, reserved_bytes, then one column of bytes per class. Empty when no
        snapshot was analysed. `memory_timeline()` is the trace's `[memory]` events instead.
        """
        classes = ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "unknown"]
        cols = ["path", "device", "entry", "time_us", "allocated_bytes", "reserved_bytes"] + classes
        rows = []
        for snap, d in self._memory_devices():
            for point in d.get("timeline", []):
                row = {"path": snap["path"], "device": d["device"], "entry": point["entry"], "time_us": _us(point["time_ns"]),
                       "allocated_bytes": point["allocated_bytes"], "reserved_bytes": point["reserved_bytes"]}
                row.update({c: point["by_class"].get(c, 0) for c in classes})
                rows.append(row)
        return _frame(rows, cols)


def analyze_report(paths, **options):
    """`stepscope.analyze(paths, **options)` as a `Report`: the same document, with DataFrames.

    Takes what `analyze` takes (jobs, stages, step_range, model).

    >>> report = analyze_report(TRACE, jobs=2)
    >>> len(report["ranks"])
    2
    """
    from . import analyze
    return Report(analyze(paths, **options))
