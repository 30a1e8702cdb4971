"""The taxonomy CLI on the CPU backend: list, run, sweep (CSV contents) and plot (PNGs written)."""

import os
import re
import subprocess
import sys

import matplotlib.image
import pandas as pd
import pytest
import torch

import fused_ops
import iris
from conftest import ON_GPU, gpu_per_rank
from taxonomy.cli import COLUMNS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def taxonomy(*args, ok=True):
    proc = subprocess.run([sys.executable, "-m", "taxonomy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert (proc.returncode == 0) == ok, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_list_names_every_variant_and_pattern():
    out = taxonomy("list")
    for name in ("gemm_all_scatter", "gemm_all_reduce", "fused_sequential", "producer_consumer", "wg_specialized",
                 "one_shot", "two_shot", "atomic", "torch_symm_mem", "[cuda only]", "workgroup-specialized",
                 "bulk-synchronous"):
        assert name in out, name


@gpu_per_rank(2)
def test_run_validates_and_benchmarks():
    out = taxonomy("run", "gemm_all_scatter", "-m", "40", "-n", "64", "-k", "48", "--validate", "--benchmark",
                   "--iters", "2", "--warmup", "1", "--variants", "fused_sequential", "wg_specialized",
                   "--BLK_M", "16", "--BLK_N", "16", "--BLK_K", "16")
    lines = [line for line in out.splitlines() if "True" in line]
    assert {"torch_nccl", "fused_sequential", "wg_specialized"} <= {line.split()[0] for line in lines}, out
    assert "overlap limit" in out


def test_run_rejects_bad_input_before_starting_ranks():
    assert "unknown variant 'nope'" in taxonomy("run", "gemm_all_reduce", "-m", "8", "-n", "8", "-k", "8",
                                                "--variants", "nope", ok=False)
    assert "must be divisible by the world size" in taxonomy("run", "gemm_all_reduce", "-m", "8", "-n", "8", "-k",
                                                             "9", ok=False)


@gpu_per_rank(2)
def test_sweep_appends_csv_and_plot_writes_pngs(tmp_path):
    out = str(tmp_path)
    args = ["sweep", "--shapes", "32x32x32", "16x32x48", "--iters", "2", "--warmup", "1", "--out", out,
            "--datatype", "fp16", "--BLK_M", "16", "--BLK_N", "16", "--BLK_K", "16"]
    taxonomy(*args, "--ops", "gemm_all_scatter", "gemm_all_reduce")  # the two ops checked below
    # default tiles this time; appends, keeps old rows
    taxonomy(*args[:-6], "--ops", "gemm_all_reduce", "--variants", "one_shot")
    scatter = pd.read_csv(os.path.join(out, "gemm_all_scatter.csv"))
    reduce = pd.read_csv(os.path.join(out, "gemm_all_reduce.csv"))
    assert list(scatter.columns) == COLUMNS
    # Every variant that runs here in fp16 (on the CPU: not torch_symm_mem, GPU-only, nor atomic, fp32-only under the
    # interpreter), plus `auto` in GPU sweeps.
    extra = 1 if iris.BACKEND == "cuda" else 0
    per_shape = {op: len(fused_ops.list_variants(op, iris.BACKEND, "float16")) + extra
                 for op in ("gemm_all_scatter", "gemm_all_reduce")}
    assert len(scatter) == 2 * per_shape["gemm_all_scatter"]
    assert len(reduce) == 2 * per_shape["gemm_all_reduce"] + 2 * 2
    for df in (scatter, reduce):
        assert df.correct.all() and (df.max_rel_error < 1e-2).all()
        assert (df.time_us > 0).all() and (df.gemm_only_us > 0).all() and (df.comm_only_us > 0).all()
        assert (df.overlap_limit_us == df[["gemm_only_us", "comm_only_us"]].max(axis=1)).all()
        assert (df[df.variant == "torch_nccl"].speedup == 1.0).all()
        assert (df.world_size == 2).all() and (df.dtype == "float16").all()
        assert df.device.str.contains("CPU" if iris.BACKEND == "cpu" else "2x").all()
        assert df.command.str.startswith("python -m taxonomy sweep").all()
        assert df.date.notna().all() and df.commit.notna().all() and (df.timing == "eager").all()
    assert set(scatter.variant) == {"torch_nccl", "bulk_sync", "fused_sequential", "producer_consumer",
                                    "wg_specialized"} | ({"auto"} if extra else set())
    one = reduce[(reduce.variant == "one_shot") & (reduce.m == 32)]
    assert len(one) == 2 and (one.speedup == one.speedup_vs_best_peer).all()  # torch_nccl is the only CPU peer
    out_text = taxonomy("plot", "--out", out)
    for op in ("gemm_all_scatter", "gemm_all_reduce"):
        for kind in ("speedup", "breakdown"):
            path = os.path.join(out, f"{op}_fp16_w2_{kind}.png")
            assert path in out_text and matplotlib.image.imread(path).shape[0] > 100


@gpu_per_rank(2)
def test_graph_timing_times_captured_calls_on_gpus_and_is_refused_on_the_cpu(tmp_path):
    path = str(tmp_path / "graph.csv")
    args = ("run", "gemm_all_reduce", "-m", "64", "-n", "64", "-k", "128", "--validate", "--benchmark", "--iters", "3",
            "--warmup", "1", "--timing", "graph", "--variants", "one_shot", "--output-file", path)
    if iris.BACKEND == "cpu":
        assert "needs the CUDA backend" in taxonomy(*args, ok=False)
        assert not os.path.exists(path)
    else:
        taxonomy(*args)
        df = pd.read_csv(path)
        assert set(df.variant) == {"torch_nccl", "one_shot"} and df.correct.all()
        assert (df.timing == "graph").all() and (df.time_us > 0).all()


def test_graph_timing_leaves_out_what_a_graph_may_not_capture():
    from taxonomy.cli import _variants
    assert "copy_engine" in _variants("gemm_reduce_scatter", None, "cuda", "bfloat16", "eager")
    graph = _variants("gemm_reduce_scatter", None, "cuda", "bfloat16", "graph")
    assert "copy_engine" not in graph and "fused" in graph and "auto" in graph
    with pytest.raises(SystemExit, match="gemm_reduce_scatter/copy_engine cannot be captured"):
        _variants("gemm_reduce_scatter", ["copy_engine"], "cuda", "bfloat16", "graph")


def test_more_ranks_than_gpus_is_refused_by_the_host_check(monkeypatch):
    # the check itself, on any machine: a CUDA backend that sees one GPU
    import argparse

    from taxonomy import cli
    monkeypatch.setattr(cli.iris, "BACKEND", "cuda")
    monkeypatch.setattr(cli.torch.cuda, "device_count", lambda: 1)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit, match=r"-r 2: this machine has 1 GPU\(s\).*NCCL.*use -r 1 or fewer"):
        cli._check_machine(argparse.Namespace(timing="eager", num_ranks=2))
    cli._check_machine(argparse.Namespace(timing="eager", num_ranks=1))  # one rank per GPU: accepted


@pytest.mark.skipif(not (ON_GPU and torch.cuda.device_count() == 1), reason="needs a machine with exactly one GPU")
def test_more_ranks_than_gpus_is_refused_before_starting_ranks():
    out = taxonomy("run", "gemm_all_reduce", "-m", "64", "-n", "64", "-k", "64", "-r", "2", ok=False)
    assert "-r 2: this machine has 1 GPU(s)" in out and "NCCL" in out and "Traceback" not in out


def test_append_keeps_commit_hashes_that_look_like_numbers(tmp_path):
    from taxonomy import cli

    path = str(tmp_path / "rows.csv")
    for commit in ("8e02100", "1234567"):
        cli._append([dict(op="gemm_all_reduce", variant="one_shot", commit=commit, command="x")], path)
    assert list(cli.read_csv(path).commit) == ["8e02100", "1234567"]


def test_compare_pools_rounds_and_gives_ratios_to_the_first_run(tmp_path):
    def sweep_dir(name, times):
        rows = [dict(op="gemm_all_reduce", variant=v, m=128, n=256, k=512, dtype="bfloat16", world_size=2,
                     timing="graph", time_us=t, commit="0123abc") for v, t in times.items()]
        os.makedirs(tmp_path / name)
        pd.DataFrame(rows).reindex(columns=COLUMNS).to_csv(tmp_path / name / "gemm_all_reduce.csv", index=False)
        return str(tmp_path / name)

    base = [sweep_dir("b1", {"one_shot": 10.0, "two_shot": 20.0}), sweep_dir("b2", {"one_shot": 12.0,
                                                                                      "two_shot": 20.0})]
    new = sweep_dir("n1", {"one_shot": 8.25, "two_shot": 30.0})
    csv = tmp_path / "table.csv"
    out = taxonomy("compare", f"base={','.join(base)}", f"new={new}", "--csv", str(csv))
    assert "new/base" in out
    table = pd.read_csv(csv).set_index("variant")
    assert table.loc["one_shot", "base"] == 11.0 and table.loc["one_shot", "new/base"] == 0.75
    assert table.loc["two_shot", "new/base"] == 1.5
    os.makedirs(tmp_path / "empty")
    assert "no <op>.csv" in taxonomy("compare", str(tmp_path / "b1"), str(tmp_path / "empty"), ok=False)


def test_summary_gives_the_targets_figures_per_op_and_timing(tmp_path):
    rows = []
    for shape, times, limit in (((128, 256, 512), {"torch_nccl": 20.0, "torch_symm_mem": 16.0, "one_shot": 10.0,
                                                   "two_shot": 12.0, "auto": 10.5}, 9.5),
                                ((1024, 256, 512), {"torch_nccl": 40.0, "torch_symm_mem": 30.0, "one_shot": 36.0,
                                                    "two_shot": 32.0, "auto": 44.0}, 25.0)):
        for v, t in times.items():
            rows.append(dict(op="gemm_all_reduce", variant=v, pattern=fused_ops.get("gemm_all_reduce", v).pattern
                             if v != "auto" else "auto", m=shape[0], n=shape[1], k=shape[2], dtype="bfloat16",
                             world_size=2, timing="graph", time_us=t, overlap_limit_us=limit, device="2x GPU",
                             commit="0123abc"))
    os.makedirs(tmp_path / "s")
    pd.DataFrame(rows).reindex(columns=COLUMNS).to_csv(tmp_path / "s" / "gemm_all_reduce.csv", index=False)
    csv = tmp_path / "summary.csv"
    out = taxonomy("summary", str(tmp_path / "s"), "--csv", str(csv))
    assert "gemm_all_reduce" in out
    row = pd.read_csv(csv).iloc[0]
    # best fused per shape: one_shot 10 (2.0x), two_shot 32 (1.25x): geo sqrt(2.5), max at 128x256x512
    assert abs(row.best_geo - 2.5 ** 0.5) < 1e-9 and row.best_max == 2.0 and row.best_max_shape == "128x256x512"
    assert row.within_10pct_of_limit == "1/2"  # 10 <= 1.1 * 9.5; 32 > 1.1 * 25
    assert row.faster_than_peer == "1/2" and abs(row.vs_peer_geo - (1.6 * 30 / 32) ** 0.5) < 1e-9
    assert abs(row.auto_worst - 40 / 44) < 1e-9 and row.auto_worst_shape == "1024x256x512"
    assert row.winners in ("one_shot:1 two_shot:1", "two_shot:1 one_shot:1") and row.shapes == 2
    assert "no <op>.csv" in taxonomy("summary", str(tmp_path), ok=False)


@gpu_per_rank(2)
def test_tune_times_variants_and_names_autos_pick():
    out = taxonomy("tune", "gemm_all_reduce", "-m", "32", "-n", "32", "-k", "64", "--variants", "one_shot", "two_shot",
                   "--iters", "1", "--search", "--datatype", "fp32")
    times = dict(re.findall(r"^\s+(\w+)\s+([\d.]+) us$", out, re.M))
    assert sorted(times) == ["one_shot", "two_shot"], out
    fastest = min(times, key=lambda v: float(times[v]))
    assert re.search(rf"after this tuning: {fastest}: \d+x\d+x\d+ s\d+ w\d+, \d+ GEMM programs", out), out


FP8_OPS = fused_ops.list_ops()


@gpu_per_rank(2)
def test_sweep_fp8_per_tensor_and_row_wise_validates_every_fp8_variant(tmp_path):
    # every op, both kinds of scales, into one directory: the dtype column keeps them apart (and from 16-bit rows)
    out = str(tmp_path)
    for datatype in ("fp8", "fp8-row"):
        taxonomy("sweep", "--datatype", datatype, "--shapes", "32x32x32", "--iters", "1", "--warmup", "0",
                 "--out", out)
    auto = {"auto"} if iris.BACKEND == "cuda" else set()
    for op in FP8_OPS:
        df = pd.read_csv(os.path.join(out, f"{op}.csv"))
        assert list(df.dtype) == ["float8_e4m3fn"] * (len(df) // 2) + ["float8_e4m3fn/row"] * (len(df) // 2), op
        for dtype, part in df.groupby("dtype"):
            # the FP8-capable variants, and only those (on the CPU: not gemm_all_reduce/atomic)
            assert set(part.variant) == set(fused_ops.list_variants(op, iris.BACKEND, "float8_e4m3fn")) | auto, dtype
            assert part.correct.all(), part[["variant", "max_rel_error"]]
        assert (df.max_rel_error < 1e-2).all() and (df.max_rel_error > 0).all()
        assert (df.time_us > 0).all() and (df.gemm_only_us > 0).all() and (df.comm_only_us > 0).all()
        assert (df[df.variant == "torch_nccl"].speedup == 1.0).all() and (df.world_size == 2).all()

    from taxonomy import cli, plots
    summary = cli.summary_table([out])
    assert sorted(summary[summary.op == "gemm_all_reduce"].dtype) == ["float8_e4m3fn", "float8_e4m3fn/row"]
    written = plots.plot_all(out, ["all_gather_gemm"])
    assert {os.path.basename(p) for p in written} == {f"all_gather_gemm_{d}_w2_{kind}.png" for d in ("fp8", "fp8-row")
                                                      for kind in ("breakdown", "speedup")}
    assert all(matplotlib.image.imread(p).shape[0] > 100 for p in written)


def test_fp8_shapes_torch_scaled_mm_cannot_take_are_refused_before_starting_ranks():
    from taxonomy import bench
    bench.check_shape("all_gather_gemm", 24, 32, 48, 2, "float8_e4m3fn")  # M is free; K = 48, N/world = 16
    with pytest.raises(ValueError, match=r"gemm_all_scatter 16x40x32 in FP8 on 2 ranks: each rank's GEMM is 16 x 20 x "
                                         r"32 \(M x N x K\).*multiples of 16: N/world = 20 is not"):
        bench.check_shape("gemm_all_scatter", 16, 40, 32, 2, "float8_e4m3fn/row")
    bench.check_shape("gemm_all_scatter", 16, 40, 32, 2, "float16")  # the rule is FP8's only
    out = taxonomy("sweep", "--datatype", "fp8", "--ops", "gemm_all_reduce", "--shapes", "16x32x64", "16x40x40",
                   "--out", "/nonexistent", ok=False)
    assert "gemm_all_reduce 16x40x40 in FP8 on 2 ranks" in out and "K/world = 20 and N = 40 are not" in out, out
    assert "Traceback" not in out
