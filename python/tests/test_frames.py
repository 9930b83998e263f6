"""stepscope.Report's DataFrames: built from real traces, checked against the JSON they come from,
against facts that hold whatever the numbers (shares sum to 1, categories to the step), and
against HTA's own answers where the oracles are there."""
import doctest
import json
import math
import textwrap

import pytest

import stepscope
import stepscope.frames
from conftest import run_python

pd = pytest.importorskip("pandas")

SINGLE = "hta/df_index_resolver/df_index_resolver.json.gz"  # 1 rank (rank 1), memory events, NCCL
TWO = "hta/sampled_world128"                                  # 2 of 128 ranks: no straggler named
EIGHT = "param/dlrm_8rank/kineto"                             # 8 ranks, one step each
WHOLE = "hta/critical_path/alexnet"                           # HTA keeps every step: nothing dropped
FIXTURES = [SINGLE, TWO, EIGHT, WHOLE]


@pytest.fixture(scope="module")
def reports(fixtures):
    return {name: stepscope.analyze_report(str(fixtures / name)) for name in FIXTURES}


@pytest.fixture(params=FIXTURES)
def report(request, reports):
    return reports[request.param]


def oracle(fixtures, kind, name):
    path = fixtures.parent / "oracles" / kind / name
    if not path.is_file():
        pytest.skip(f"no HTA oracle at {path}")
    return json.loads(path.read_text())["results"]


def all_frames(r):
    types, kernels = r.get_gpu_kernel_breakdown()
    idle, stats = r.get_idle_time_breakdown(show_idle_interval_stats=True)
    frames = {
        "temporal": r.get_temporal_breakdown(), "idle": idle, "idle_stats": stats, "kernel_types": types,
        "kernel_df": kernels, "overlap": r.get_comm_comp_overlap(), "queue": r.get_queue_length_summary(),
        "bw": r.get_memory_bw_summary(), "sequences": r.get_frequent_cuda_kernel_sequences(),
        "path": r.get_critical_path_breakdown(), "path_summary": r.critical_path_summary(),
        "partition": r.step_partition(), "operators": r.operators(), "kernels": r.kernels(),
        "ranks": r.rank_comparison(), "levers": r.levers(), "memory": r.memory_timeline(),
    }
    for rank, df in r.get_queue_length_time_series().items():
        frames[f"queue_series_{rank}"] = df
    for rank, df in r.get_memory_bw_time_series().items():
        frames[f"bw_series_{rank}"] = df
    return frames


# ---- the Report object and pandas as an optional dependency -----------------------------------

def test_import_does_not_import_pandas():
    p = run_python(textwrap.dedent("""
        import sys
        import stepscope
        report = stepscope.Report({"ranks": []})
        assert "pandas" not in sys.modules, "import stepscope imported pandas"
        print("ok")
    """))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"


def test_missing_pandas_is_a_clear_import_error():
    p = run_python(textwrap.dedent("""
        import sys
        sys.modules["pandas"] = None   # as if pandas were not installed
        import stepscope
        report = stepscope.Report({"ranks": [], "levers": []})
        try:
            report.levers()
        except ImportError as e:
            print(e)
        else:
            raise SystemExit("no ImportError")
    """))
    assert p.returncode == 0, p.stderr
    assert "python3-pandas" in p.stdout and "pip install pandas" in p.stdout


def test_report_reads_like_the_dict(fixtures, reports, tmp_path):
    r = reports[SINGLE]
    plain = stepscope.analyze(str(fixtures / SINGLE))
    assert isinstance(r.raw, dict) and r.raw == plain
    assert r == plain and dict(r) == plain
    assert r["verdict"] == plain["verdict"] and r.get("levers") == plain["levers"]
    assert set(r) == set(plain) and len(r) == len(plain) and "rank_comparison" in r
    again = stepscope.Report(r)
    assert again is not r and again.raw is r.raw
    assert "1 rank" in repr(r)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(plain))
    assert stepscope.Report.from_json(path) == plain
    with pytest.raises(TypeError):
        stepscope.Report([1, 2])


def test_analyze_report_takes_analyze_options(fixtures):
    path = str(fixtures / "cpu/f_instrumented_stages.pt.trace.json.gz")
    r = stepscope.analyze_report(path, step_range="forward", jobs=1)
    assert r == stepscope.analyze(path, step_range="forward")
    assert set(r.step_partition()["name"]) == {"forward"}
    with pytest.raises(stepscope.Error):
        stepscope.analyze_report(path, jobs=-1)


def test_one_unit_everywhere(report):
    for name, df in all_frames(report).items():
        assert df is not None, name
        assert "rank" in df.columns or name.startswith(("queue_series", "bw_series", "kernel_types", "levers")), name
        assert not [c for c in df.columns if c.endswith("_ns")], f"{name}: a column in ns"
        for c in df.columns:
            if c == "share" or c.endswith("_share"):
                v = df[c].dropna()
                assert ((v >= 0) & (v <= 1 + 1e-9)).all(), f"{name}.{c} outside 0..1"


# ---- HTA's tables ---------------------------------------------------------------------------

def test_temporal_breakdown(report):
    t = report.get_temporal_breakdown()
    hta = {r["rank"]: r["gpu_timeline"]["hta"]["temporal_breakdown"] for r in report["ranks"]}
    assert t["rank"].tolist() == [k for k, v in hta.items() if v["available"]]
    pct = t["idle_time_pctg"] + t["compute_time_pctg"] + t["non_compute_time_pctg"]
    assert (pct - 100).abs().max() <= 0.015 + 1e-9  # three values rounded to 0.01
    parts = t["idle_time_us"] + t["compute_time_us"] + t["non_compute_time_us"]
    assert (parts - t["kernel_time_us"]).abs().max() < 1e-6
    # The JSON's ns and fractions, in the frame's µs and HTA's rounded percentages.
    for row in t.to_dict("records"):
        j = hta[row["rank"]]
        for col, value in row.items():
            if col.endswith("_us"):
                assert value * 1000 == pytest.approx(j[col[:-3] + "_ns"]), col
            elif col.endswith("_pctg"):
                assert value == round(100 * j[col[:-5] + "_share"], 2), col


def test_temporal_breakdown_one_row_per_rank(reports):
    assert reports[EIGHT].get_temporal_breakdown()["rank"].tolist() == list(range(8))
    assert reports[TWO].get_temporal_breakdown()["rank"].tolist() == [0, 1]


def test_temporal_breakdown_leaves_out_ranks_without_gpu(fixtures):
    r = stepscope.analyze_report(str(fixtures / "hta/cpu_only"))
    t = r.get_temporal_breakdown()
    assert t.empty and "idle_time_pctg" in t.columns


def test_idle_time_breakdown(report):
    idle, none = report.get_idle_time_breakdown()
    assert none is None
    idle, stats = report.get_idle_time_breakdown(show_idle_interval_stats=True)
    keys = ["rank", "stream", "idle_category"]
    assert idle[keys].values.tolist() == stats[keys].values.tolist()
    assert set(idle["idle_category"]) <= {"host_wait", "kernel_wait", "other"}
    # Ratios are within a stream, each rounded to 0.01 (a stream that never idles has none).
    by_stream = idle.groupby(["rank", "stream"])
    ratio = by_stream["idle_time_ratio"].sum()[by_stream["idle_time_us"].sum() > 0]
    assert len(ratio) > 0 and (ratio - 1).abs().max() <= 0.015 + 1e-9
    # The gaps' statistics add up to the idle time.
    assert (stats["sum_us"] - idle["idle_time_us"]).abs().max() < 1e-6
    for rank in report["ranks"]:
        totals = rank["gpu_timeline"]["hta"]["idle_time_breakdown"]["total_ns"]
        mine = idle[idle["rank"] == rank["rank"]].groupby("idle_category")["idle_time_us"].sum()
        for category, ns in totals.items():
            assert math.isclose(mine.get(category, 0.0), ns / 1000, rel_tol=1e-12, abs_tol=1e-6), category


def test_idle_time_breakdown_filters(reports):
    r = reports[TWO]
    idle, _ = r.get_idle_time_breakdown(ranks=1, streams=[7, 23])
    assert set(idle["rank"]) == {1} and set(idle["stream"]) == {7, 23}
    everything, _ = r.get_idle_time_breakdown()
    assert len(everything) > len(idle)


def test_kernel_breakdown(report):
    types, kernels = report.get_gpu_kernel_breakdown()
    assert list(types.columns) == ["kernel_type", "sum_us", "percentage"]
    assert abs(types["percentage"].sum() - 100) <= 0.05 * len(types) + 1e-9  # each rounded to 0.1
    assert types["sum_us"].tolist() == [t["sum_ns"] / 1000 for t in report["hta_kernel_types_all_ranks"]]
    # The types split the GPU's busy time (span minus idle); only stream-bound sync rows, which
    # are GPU rows but of no kernel type, can make the busy time longer.
    temporal = report.get_temporal_breakdown()
    busy = (temporal["kernel_time_us"] - temporal["idle_time_us"]).sum()
    assert types["sum_us"].sum() <= busy + 1e-6
    assert set(kernels["kernel_type"]) <= {"COMPUTATION", "COMMUNICATION", "MEMORY"}
    assert kernels["name"].str.len().min() > 0


@pytest.mark.parametrize("name", [SINGLE, TWO])
def test_kernel_types_cover_the_busy_time(reports, name):
    r = reports[name]
    temporal = r.get_temporal_breakdown()
    types, _ = r.get_gpu_kernel_breakdown()
    assert types["sum_us"].sum() == pytest.approx((temporal["kernel_time_us"] - temporal["idle_time_us"]).sum())


def test_kernel_df_against_the_kernel_view(report):
    """Per name, HTA's kernel table holds the kernel view's calls and time; fewer of them when HTA
    dropped the last profiler step."""
    _, kernels = report.get_gpu_kernel_breakdown()
    view = report.kernels()
    for rank in report["ranks"]:
        named = kernels[(kernels["rank"] == rank["rank"]) & ~kernels["others"].astype(bool)]
        mine = view[view["rank"] == rank["rank"]].set_index("name")
        assert len(named) > 0
        dropped = rank["gpu_timeline"]["hta"]["load"]["last_step_dropped"]
        for row in named.to_dict("records"):
            k = mine.loc[row["name"]]
            if dropped:
                assert row["count"] <= k["calls"] and row["sum_us"] <= k["total_us"] + 1e-6
            else:
                assert row["count"] == k["calls"] and row["sum_us"] == pytest.approx(k["total_us"])


def test_hta_tables_match_hta(fixtures, reports):
    """df_index_resolver, as HTA 0.6.1 itself answered it."""
    hta = oracle(fixtures, "hta", "hta__df_index_resolver__df_index_resolver.json")
    r = reports[SINGLE]
    [t] = r.get_temporal_breakdown().to_dict("records")
    [h] = hta["get_temporal_breakdown"]
    assert t["rank"] == h["rank"]
    for col in ("idle_time", "compute_time", "non_compute_time", "kernel_time"):
        assert t[f"{col}_us"] == h[f"{col}(us)"]
        if col != "kernel_time":
            assert t[f"{col}_pctg"] == h[f"{col}_pctg"]
    idle, _ = r.get_idle_time_breakdown()
    expected = [[b["rank"], b["stream"], b["idle_category"], b["idle_time"], b["idle_time_ratio"]]
                for b in hta["get_idle_time_breakdown"]["breakdown"]]
    assert sorted(idle.values.tolist()) == sorted(expected)
    types, kernels = r.get_gpu_kernel_breakdown()
    # HTA also lists overlap states that never occur (0 µs); the report leaves them out.
    expected = {k["kernel_type"]: (k["sum"], k["percentage"])
                for k in hta["get_gpu_kernel_breakdown"]["kernel_type_breakdown"] if k["sum"] > 0}
    assert {k: (s, p) for k, s, p in types.values.tolist()} == expected
    expected = sorted((k["rank"], k["kernel_type"], k["name"], k["sum (us)"]) for k in hta["get_gpu_kernel_breakdown"]["top_kernels"])
    assert sorted(kernels[["rank", "kernel_type", "name", "sum_us"]].itertuples(index=False, name=None)) == expected
    [o] = r.get_comm_comp_overlap().to_dict("records")
    assert o["comp_comm_overlap_pctg"] == hta["get_comm_comp_overlap"][0]["comp_comm_overlap_pctg"]


def test_queue_length(report):
    summary = report.get_queue_length_summary()
    series = report.get_queue_length_time_series()
    assert sorted(series) == [r["rank"] for r in report["ranks"]]
    for rank in report["ranks"]:
        streams = rank["drilldown"]["queue_length"]["streams"]
        mine = summary[summary["rank"] == rank["rank"]]
        assert mine["stream"].tolist() == [s["stream"] for s in streams]
        ts = series[rank["rank"]]
        assert list(ts.columns) == ["ts_us", "stream", "queue_length"]
        assert len(ts) == sum(len(s["series"]["ts_ns"]) for s in streams)
        assert (ts["queue_length"] >= 0).all()
        for stream, rows in ts.groupby("stream"):
            assert rows["ts_us"].is_monotonic_increasing
            s = mine[mine["stream"] == stream].iloc[0]
            # The summary is over every change point; the series is thinned past 2,000 points,
            # each kept point the peak of its run, so the largest stays.
            assert rows["queue_length"].max() == s["max"]
            if s["count"] == len(rows):
                assert rows["queue_length"].max() == s["max"]
                assert rows["queue_length"].mean() == pytest.approx(s["mean"])


def test_memory_bandwidth(report):
    summary = report.get_memory_bw_summary()
    series = report.get_memory_bw_time_series()
    for rank, ts in series.items():
        assert list(ts.columns) == ["ts_us", "name", "memory_bw_gbps"]
        mine = summary[summary["rank"] == rank].set_index("name")
        assert sorted(mine.index) == sorted(ts["name"].unique())
        for name, rows in ts.groupby("name"):
            positive = rows["memory_bw_gbps"][rows["memory_bw_gbps"] > 0]
            s = mine.loc[name]
            assert positive.max() == pytest.approx(s["max_gbps"])  # thinning keeps each run's peak
            if len(rows) < 2000:  # not thinned: the summary is over these very points
                assert len(positive) == s["count"]
                assert positive.sum() == pytest.approx(s["sum_gbps"])


def test_deeper_analyses_match_hta(fixtures, reports):
    hta = oracle(fixtures, "hta-deep", "hta__df_index_resolver__df_index_resolver.json")
    r = reports[SINGLE]
    q = r.get_queue_length_summary().set_index(["rank", "stream"])
    for h in hta["queue_length"]["summary"]:
        mine = q.loc[(h["rank"], h["stream"])]
        assert (mine["count"], mine["min"], mine["max"], mine["median"]) == (h["count"], h["min"], h["max"], h["50%"])
        assert mine["mean"] == pytest.approx(h["mean"], rel=1e-2)  # HTA's unstable tie order
    bw = r.get_memory_bw_summary().set_index(["rank", "name"])
    for h in hta["memory_bw"]["summary"]:
        mine = bw.loc[(h["rank"], h["name"])]
        assert mine["count"] == h["count"]
        assert mine["max_gbps"] == pytest.approx(h["max"]) and mine["mean_gbps"] == pytest.approx(h["mean"])


def test_kernel_sequences(report):
    seq = report.get_frequent_cuda_kernel_sequences()
    for rank in report["ranks"]:
        k = rank["drilldown"]["kernel_sequences"]
        mine = seq[seq["rank"] == rank["rank"]]
        assert len(mine) == len(k["sequences"])
        for row, s in zip(mine.to_dict("records"), k["sequences"]):
            assert row["pattern"].split("|") == s["pattern"] and row["pattern"].startswith(k["op"])
            assert row["length"] == len(s["pattern"]) - 1 >= k["min_pattern_len"]
            assert (row["count"], row["gpu_time_us"] * 1000, row["cpu_time_us"] * 1000) == \
                pytest.approx((s["count"], s["gpu_time_ns"], s["cpu_time_ns"]))
        assert mine["count"].is_monotonic_decreasing


def test_critical_path(report):
    path = report.get_critical_path_breakdown()
    by_kind = report.critical_path_summary()
    for rank in report["ranks"]:
        cp = rank["drilldown"]["critical_path"]
        edges = path[path["rank"] == rank["rank"]]
        if not cp["success"]:
            assert edges.empty
            continue
        assert edges["order"].tolist() == list(range(len(cp["path"])))
        assert edges["duration_us"].sum() * 1000 == pytest.approx(cp["length_ns"])
        assert edges["name"].tolist() == [e["name"] for e in cp["path"]]
        kinds = by_kind[by_kind["rank"] == rank["rank"]].set_index("kind")
        assert kinds["share"].sum() == pytest.approx(1)
        assert kinds["edges"].sum() == len(edges)
        per_kind = edges.groupby("kind")["duration_us"].sum()
        for kind, us in per_kind.items():
            assert kinds.loc[kind, "duration_us"] == pytest.approx(us)
        for by in ("bound_by", "type"):
            s = report.critical_path_summary(by=by, ranks=rank["rank"])
            assert s["duration_us"].sum() * 1000 == pytest.approx(cp["length_ns"])
            assert s["share"].sum() == pytest.approx(1)
            assert s.set_index(by)["duration_us"].to_dict() == pytest.approx(edges.groupby(by)["duration_us"].sum().reindex(s[by]).fillna(0).to_dict())
        shares = cp["hta"]["summary_share"]
        for row in report.critical_path_summary(by="bound_by", ranks=rank["rank"]).to_dict("records"):
            assert row["share"] == pytest.approx(shares[row["bound_by"]])


def test_critical_path_failure_is_a_row(fixtures):
    r = stepscope.analyze_report(str(fixtures / "hta/cupti_profiler"))
    assert r.get_critical_path_breakdown().empty
    [row] = r.critical_path_summary().to_dict("records")
    assert row["error"] == r["ranks"][0]["drilldown"]["critical_path"]["error"] != ""
    with pytest.raises(ValueError):
        r.critical_path_summary(by="stage")


# ---- stepscope's own tables -----------------------------------------------------------------

def test_step_partition(report):
    p = report.step_partition()
    steps = [(r["rank"], s) for r in report["ranks"] for s in r["partition"]["steps"]]
    assert len(p) == len(steps)
    cats = [c for c in p.columns if c.endswith("_us") and c not in ("start_us", "end_us", "duration_us")]
    assert len(cats) == 14 and "grad_sync_exposed_us" in cats
    for row, (rank, s) in zip(p.to_dict("records"), steps):
        assert (row["rank"], row["step"], row["name"], row["warmup"]) == (rank, s["number"], s["name"], s["warmup"])
        # Back in whole ns, the categories sum to the step exactly.
        assert sum(round(row[c] * 1000) for c in cats) == round(row["duration_us"] * 1000) == s["duration_ns"]
        assert row["duration_us"] == pytest.approx(row["end_us"] - row["start_us"], abs=0.5)
        for c in cats:
            assert row[c] * 1000 == pytest.approx(s["categories_ns"][c[:-3]], abs=1e-6)


def test_step_partition_steady_mean(reports):
    """The steady steps' mean per category is the JSON's steady-state mean."""
    r = reports[SINGLE]
    p = r.step_partition()
    steady = p[~p["warmup"]]
    mean = r["ranks"][0]["partition"]["steady_mean_categories_ns"]
    for c, ns in mean.items():
        assert steady[c + "_us"].mean() * 1000 == pytest.approx(ns)
    assert steady["duration_us"].mean() * 1000 == pytest.approx(r["ranks"][0]["partition"]["steady_mean_step_ns"])


def test_operators(report):
    for rank in report["ranks"]:
        for view in rank["drilldown"]["operators"]:
            df = report.operators(view["grouping"], ranks=rank["rank"])
            assert len(df) == len(view["rows"])
            assert df["name"].tolist() == [row["name"] for row in view["rows"]]
            assert df["host_self_us"].sum() * 1000 == pytest.approx(sum(row["host_self_ns"] for row in view["rows"]))
            assert df["host_self_us"].is_monotonic_decreasing
            assert (df["host_self_us"] <= df["host_total_us"] + 1e-6).all()
            if view["grouping"] == "name_and_shape":
                assert "input_dims" in df.columns
    all_ranks = report.operators()
    assert set(all_ranks["rank"]) == {r["rank"] for r in report["ranks"] if r["drilldown"]["operators"]}


def test_operators_groupings(reports):
    r = reports[SINGLE]
    module = r.operators("module")  # the trace has no nn.Module ranges
    assert module.empty and "module" in module.columns
    with pytest.raises(ValueError):
        r.operators("shape")


def test_kernels(report):
    k = report.kernels()
    for rank in report["ranks"]:
        view = rank["drilldown"]["kernels"]
        mine = k[k["rank"] == rank["rank"]]
        assert len(mine) == len(view["rows"])
        assert mine["total_us"].sum() * 1000 == pytest.approx(view["gpu_time_ns"])
        assert mine["share"].sum() == pytest.approx(1)
        assert (mine["calls"] * mine["mean_us"]).sum() * 1000 == pytest.approx(view["gpu_time_ns"])
        assert ((mine["min_us"] <= mine["mean_us"] + 1e-6) & (mine["mean_us"] <= mine["max_us"] + 1e-6)).all()


def test_rank_comparison(reports):
    rc = reports[TWO].rank_comparison()
    assert rc["rank"].tolist() == [0, 1]
    # Two ranks of a 128-rank job cannot name a straggler: the comparison says why not.
    assert not rc["straggler"].any() and reports[TWO]["rank_comparison"]["straggler"] is None
    assert rc.attrs["slowdown"] == "not_judged" and rc.attrs["world_size"] == 128
    assert "2 of the job's 128 ranks" in rc.attrs["withheld"]
    for row, j in zip(rc.to_dict("records"), reports[TWO]["rank_comparison"]["rows"]):
        assert row["step_us"] * 1000 == pytest.approx(j["step_ns"])
        assert row["grad_sync_exposed_us"] * 1000 == pytest.approx(j["grad_sync_exposed_ns"])
        assert row["compute_us"] <= row["step_us"]
    eight = reports[EIGHT].rank_comparison()
    assert eight["rank"].tolist() == list(range(8))
    assert eight["straggler"].sum() == (reports[EIGHT]["rank_comparison"]["straggler"] is not None)


def test_levers(report):
    lv = report.levers()
    assert lv["id"].tolist() == [l["id"] for l in report["levers"]]
    assert lv["id"].is_unique
    for row, j in zip(lv.to_dict("records"), report["levers"]):
        assert row["removable_us"] * 1000 == pytest.approx(j["removable_ns"])
        assert row["title"] == j["title"] and row["applies"] == j["applies"]
        # The speedup is the Amdahl bound of the removable time.
        if row["step_us"] > row["removable_us"]:
            assert row["speedup_bound"] == pytest.approx(row["step_us"] / (row["step_us"] - row["removable_us"]))
        assert row["removable_us"] <= row["target_us"] + 1e-6
    applies = lv["applies"].tolist()
    assert applies == sorted(applies, reverse=True), "applicable levers come first"


def test_memory_timeline(reports):
    r = reports[SINGLE]
    m = r.memory_timeline()
    devices = r["ranks"][0]["drilldown"]["memory"]["devices"]
    assert len(m) == sum(len(d["series"]["ts_ns"]) for d in devices)
    for d in devices:
        rows = m[(m["device_type"] == d["device_type"]) & (m["device_id"] == d["device_id"])]
        assert rows["ts_us"].is_monotonic_increasing
        assert rows["allocated_bytes"].max() <= d["peak_allocated_bytes"]
        assert rows["reserved_bytes"].max() <= d["peak_reserved_bytes"]
        if len(rows) < 20000:
            assert rows["allocated_bytes"].max() == d["peak_allocated_bytes"]
    assert reports[TWO].memory_timeline().empty  # recorded without profile_memory


def test_doctests(fixtures):
    trace = str(fixtures / TWO)
    result = doctest.testmod(stepscope.frames, extraglobs={"TRACE": trace, "report": stepscope.analyze_report(trace)},
                             optionflags=doctest.NORMALIZE_WHITESPACE, report=True, verbose=False)
    assert result.attempted >= 20
    assert result.failed == 0
