"""python -m taxonomy {list,run,tune,sweep,compare,summary,plot}: the catalog from the command line.

    python -m taxonomy list                                         # ops x variants with their pattern class
    python -m taxonomy run gemm_all_reduce -m 1024 -n 8192 -k 8192 --datatype bf16 --validate --benchmark -r 2
    python -m taxonomy tune gemm_all_reduce -m 4096 -n 8192 -k 8192 --search   # fused_ops.tune on one shape
    python -m taxonomy sweep --ops gemm_all_scatter gemm_all_reduce --out results/new   # appends <out>/<op>.csv
    python -m taxonomy compare base=results/a new=results/b          # A/B: time per row, ratios to the first run
    python -m taxonomy summary results/current/catalog results/current/catalog/graph
    python -m taxonomy plot --out results/new                        # <op>_<dtype>_w<world>_{speedup,breakdown}.png
    python -m taxonomy sweep --datatype fp8 --shapes 4096x8192x8192 --out results/fp8   # e4m3 operands, bf16 result

`run`, `tune` and `sweep` spawn their own ranks (-r), or join the ranks of torchrun / mpirun when launched under
them. `sweep` checks every row against a float64 reference before timing it (`run` with `--validate`);
`--timing eager|graph` picks how rows are timed (eager calls, or three calls replayed in a CUDA graph).

`--datatype fp8` (per-tensor scales) and `fp8-row` (row-wise: scale_a per row of a, scale_b per column of b) time
the ops on float8_e4m3fn operands (fused_ops/fp8.py): each rank quantizes its own shards with fp32 scales of its own,
c is bfloat16 (float16 on the CPU backend, whose interpreter computes bfloat16 wrongly), rows are checked against the
float64 product of the dequantized operands (reference.TOLERANCE[float8_e4m3fn]), and only the variants that take
FP8 run (fused_ops.list_variants(op, backend, "float8_e4m3fn"); others are left out). The GEMM alone is then
torch._scaled_mm, as the baselines run it, and the collective alone moves the bfloat16 result (all_gather_gemm: the
FP8 rows of A and their row scales). The CSV's dtype column says float8_e4m3fn or float8_e4m3fn/row, so summary,
compare and plot keep them apart from the 16-bit rows. FP8 shapes need each rank's GEMM K and N to be multiples of 16
(torch._scaled_mm on GPUs); others are refused before any rank starts (`--shapes models` leaves them out instead).
"""

import argparse
import dataclasses
import datetime
import os
import subprocess
import sys

import iris  # noqa: F401  (before any kernel module: the CPU backend's interpreter switch)
import torch
import fused_ops
from fused_ops import reference, registry
from iris import settings

# --datatype -> the CSV's dtype column (taxonomy/bench.py Data): FP8 operands with per-tensor or row-wise scales
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp8": "float8_e4m3fn",
          "fp8-row": "float8_e4m3fn/row"}
COLUMNS = ["op", "variant", "pattern", "m", "n", "k", "dtype", "world_size", "timing", "time_us", "tflops",
           "speedup", "speedup_vs_best_peer", "gemm_only_us", "comm_only_us", "overlap_limit_us", "no_overlap_us",
           "correct", "max_rel_error", "config", "ran", "device", "date", "commit", "command"]


def default_shapes():
    """Tensor-parallel layer shapes: M (tokens) from 128 to 16384 for hidden sizes 4096-16384, plus the paper's
    8192 x 4608 x 36864."""
    shapes = [(m, h, h) for h in (4096, 8192, 16384) for m in (128, 1024, 4096, 16384)]
    return shapes + [(8192, 4608, 36864)]


def _under_launcher():
    return "RANK" in os.environ or any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"))


def on_ranks(fn, args, *fn_args):
    """fn(ctx, *fn_args) on every rank: ours (spawned) or the launcher's. Returns rank 0's result."""
    heap = int(args.heap_size)
    if _under_launcher():
        ctx = iris.iris(heap)
        out = fn(ctx, *fn_args)
        return out if ctx.get_rank() == 0 else None
    return iris.spawn(fn, args.num_ranks, *fn_args, heap_size=heap)[0]


def _commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return settings.value("IRIS_COMMIT") or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def _device_name(ctx):
    if ctx.backend == "cuda":
        return f"{ctx.get_num_ranks()}x {torch.cuda.get_device_name(ctx.get_device())}"
    return f"{ctx.get_num_ranks()} CPU ranks (Triton interpreter)"


def _config(args):
    return fused_ops.Config(block_m=args.BLK_M, block_n=args.BLK_N, block_k=args.BLK_K, group_m=args.gsize_m,
                            gemm_sms=args.gemm_sms, comm_sms=args.comm_sms, num_stages=args.num_stages,
                            num_warps=args.num_warps, split_k=args.split_k,
                            split_tail=None if args.split_tail is None else args.split_tail == "on")


def _config_text(config):
    chosen = {k: v for k, v in dataclasses.asdict(config).items() if v is not None}
    return " ".join(f"{k}={v}" for k, v in chosen.items()) or "per-device defaults"


def bench_shape(ctx, op, variants, m, n, k, dtype_name, config, iters, warmup, validate, benchmark, timing="eager"):
    """Rows for one shape (rank 0's list is the answer): every variant plus the library-alone times."""
    from . import bench

    data = bench.data(dtype_name, ctx.backend)
    world = ctx.get_num_ranks()
    bench.check_shape(op, m, n, k, world, dtype_name)
    gemm_us, comm_us = bench.library_times(ctx, op, m, n, k, data, iters, warmup, timing) if benchmark else \
        (None, None)
    rows = []
    for variant in variants:
        why = "" if variant == "auto" else fused_ops.variant(op, variant).refusal(m, n, k, world, data.operand,
                                                                                   data.out)
        if why:  # a shape this variant refuses on the host (registry: Variant.refuses): no row
            if ctx.get_rank() == 0:
                print(f"skipped {op}/{variant} at {m}x{n}x{k}: {why}", file=sys.stderr, flush=True)
            continue
        pattern = (f"auto: {fused_ops.auto.choose(ctx, op, m, n, k, data.operand, timing=timing)}"  # the mode's pick
                   if variant == "auto" else fused_ops.variant(op, variant).pattern)
        res = bench.measure(ctx, op, variant, m, n, k, data, config, iters if benchmark else 0,
                            warmup if benchmark else 0, validate, timing)
        t = res["time_us"] if benchmark else None
        rows.append(dict(op=op, variant=variant, pattern=pattern, m=m, n=n, k=k, dtype=dtype_name,
                         world_size=world, timing=timing if benchmark else None, time_us=t,
                         tflops=(2 * m * n * k / world / t / 1e6) if t else None,
                         gemm_only_us=gemm_us, comm_only_us=comm_us,
                         overlap_limit_us=max(gemm_us, comm_us) if benchmark else None,
                         no_overlap_us=gemm_us + comm_us if benchmark else None, correct=res["correct"],
                         max_rel_error=res["max_rel_error"], config=_config_text(config), ran=res["ran"]))
    if benchmark:
        by = {r["variant"]: r["time_us"] for r in rows}
        peers = [by[p] for p in bench.PEERS if p in by]
        for r in rows:
            r["speedup"] = by["torch_nccl"] / r["time_us"] if "torch_nccl" in by else None
            r["speedup_vs_best_peer"] = min(peers) / r["time_us"] if peers else None
    stamp = dict(device=_device_name(ctx), date=datetime.date.today().isoformat(), commit=_commit(),
                 command=iris.settings.ab_prefix() + "python -m taxonomy " + " ".join(sys.argv[1:]))
    return [{**r, **stamp} for r in rows]


def sweep_ranks(ctx, jobs, config, iters, warmup, validate, out, timing="eager", leave_out_unfit=False):
    """Every (op, shape, dtype) job on these ranks; rank 0 shows progress and appends each shape's rows to
    <out>/<op>.csv as soon as they exist (a long sweep that dies keeps what it measured). leave_out_unfit: jobs whose
    shape this world size or dtype cannot take (bench.check_shape) are left out, each named on stderr, instead of
    failing the sweep (the `models` set, which nobody picked shape by shape)."""
    from tqdm import tqdm

    from . import bench

    if leave_out_unfit:
        fit = []
        for job in jobs:
            op, _, shape, dtype = job
            try:
                bench.check_shape(op, *shape, ctx.get_num_ranks(), dtype)
                fit.append(job)
            except ValueError as e:
                if ctx.get_rank() == 0:
                    print(f"left out: {e}", file=sys.stderr)
        jobs = fit
    rows = []
    bar = tqdm(jobs, desc="sweep", unit="shape", disable=ctx.get_rank() != 0, file=sys.stderr)
    for op, variants, (m, n, k), dtype in bar:
        bar.set_postfix_str(f"{op} {m}x{n}x{k} {dtype}")
        shape_rows = bench_shape(ctx, op, variants, m, n, k, dtype, config, iters, warmup, validate, True, timing)
        if ctx.get_rank() == 0:
            _append(shape_rows, os.path.join(out, f"{op}.csv"))
        rows += shape_rows
    return rows


def _variants(op, names, backend, dtype, timing="eager"):
    """The named variants (plus torch_nccl, the baseline of every speedup); by default every variant that runs here
    (in graph timing, that a CUDA graph may capture), and on GPUs also `auto` (the sweep checks that it never loses
    to the baseline). Named variants that do not take `dtype` (a DTYPES value) are left out."""
    graph = timing == "graph"
    available = registry.list_variants(op, backend, _registry_dtype(dtype), capture=graph)
    if not names:
        return available + (["auto"] if backend == "cuda" else [])
    for name in names:
        if name != "auto":
            v = registry.get(op, name, backend)  # unknown names fail here, before any rank starts
            if graph and not v.capture:
                raise SystemExit(f"{op}/{name} cannot be captured into a CUDA graph (its streams wait on each "
                                 f"other's flags: fused_ops/registry.py, Variant.capture), so --timing graph cannot "
                                 f"time it; time it with --timing eager")
    available.append("auto")
    chosen = [v for v in names if v in available]
    if "torch_nccl" not in chosen:
        chosen.insert(0, "torch_nccl")  # every speedup is measured against the baseline of the same run
    return chosen


def _registry_dtype(dtype):
    """The registry's dtype of a DTYPES value: float8_e4m3fn/row is float8_e4m3fn."""
    return dtype.partition("/")[0]


def _check_shapes(op_shapes, dtype, world):
    """Refuse, before any rank starts, shapes the ranks would refuse (not divisible by the world size where the op
    shards them; FP8 K and N that torch._scaled_mm cannot take: bench.check_shape). Under a launcher the world size
    is known on the ranks only (checked there too)."""
    from . import bench

    if _under_launcher():
        return
    for op, (m, n, k) in op_shapes:
        try:
            bench.check_shape(op, m, n, k, world, dtype)
        except ValueError as e:
            raise SystemExit(str(e)) from None


def cmd_list(args):
    width = max(len(v) for op in registry.OPS.values() for v in op.variants)
    for op in registry.OPS.values():
        print(f"{op.name}: {op.layout}")
        for v in op.variants.values():
            where = "" if v.backends == ("cpu", "cuda") else f" [{', '.join(v.backends)} only]"
            print(f"  {v.name:<{width}}  {v.pattern:<22} {v.summary}{where}")
    print("\nauto (every op): the fastest variant measured for the nearest swept shape on this GPU model and world "
          "size (fused_ops/tuned.csv), or one measured by fused_ops.tune; the op's default fused variant otherwise")
    print("\npattern classes:")
    for name, text in registry.PATTERNS.items():
        print(f"  {name:<22} {text}")


def _print_table(rows):
    import pandas as pd

    df = pd.DataFrame(rows)
    keep = [c for c in ["variant", "pattern", "time_us", "tflops", "speedup", "speedup_vs_best_peer", "correct",
                        "max_rel_error", "ran"] if c in df and df[c].notna().any()]
    with pd.option_context("display.width", 220, "display.max_colwidth", 90,
                           "display.float_format", "{:.3f}".format):
        print(df[keep].to_string(index=False))
    if df.get("gemm_only_us") is not None and df["gemm_only_us"].notna().any():
        r = df.iloc[0]
        gemm = "torch._scaled_mm" if str(r["dtype"]).startswith("float8") else "torch.matmul"
        print(f"{gemm} alone {r.gemm_only_us:.1f} us, collective alone {r.comm_only_us:.1f} us: overlap limit "
              f"{r.overlap_limit_us:.1f} us, no overlap {r.no_overlap_us:.1f} us")


def _check_machine(args):
    """Refusals that need no rank started: graph timing on the CPU, and more ranks than GPUs (the baseline and the
    library-alone timings go through NCCL, which refuses two ranks on one GPU)."""
    if args.timing == "graph" and iris.BACKEND != "cuda":
        raise SystemExit("--timing graph captures CUDA graphs and needs the CUDA backend (IRIS_BACKEND=cuda on a GPU "
                         "machine); the CPU backend times eagerly (--timing eager)")
    gpus = torch.cuda.device_count() if iris.BACKEND == "cuda" else 0
    if gpus and not _under_launcher() and args.num_ranks > gpus:
        raise SystemExit(f"-r {args.num_ranks}: this machine has {gpus} GPU(s). The torch_nccl baseline and the "
                         f"library-alone timings run NCCL, which refuses two ranks on one GPU; use -r {gpus} or "
                         f"fewer (or IRIS_BACKEND=cpu)")


def cmd_run(args):
    dtype = DTYPES[args.datatype]
    variants = _variants(args.op, args.variants, iris.BACKEND, dtype, args.timing) if args.benchmark else (
        args.variants or registry.list_variants(args.op, iris.BACKEND, _registry_dtype(dtype)))
    for v in variants:
        if v != "auto":
            registry.get(args.op, v, iris.BACKEND)
    _check_shapes([(args.op, (args.m, args.n, args.k))], dtype, args.num_ranks)
    _check_machine(args)  # after the arguments: bad input is named as such on any machine
    if not (args.validate or args.benchmark):
        args.validate = True
    rows = on_ranks(bench_shape, args, args.op, variants, args.m, args.n, args.k, dtype, _config(args), args.iters,
                    args.warmup, args.validate, args.benchmark, args.timing)
    if rows is None:
        return 0
    _print_table(rows)
    if args.output_file:
        _append(rows, args.output_file)
    return 0 if all(r["correct"] is not False for r in rows) else 1


def tune_shape(ctx, op, variants, m, n, k, dtype_name, search, iters):
    """fused_ops.tune on this shape (fresh random operands), then what `auto` would run here: rank 0's answer."""
    from . import bench

    data = bench.data(dtype_name, ctx.backend)
    world = ctx.get_num_ranks()
    bench.check_shape(op, m, n, k, world, dtype_name)
    with ctx.scratch():
        a, b, extra, _ = bench.inputs(ctx, op, 1, m, n, k, data, with_reference=False)
        c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=data.out)
        times = fused_ops.auto.tune(ctx, op, a, b, c, variants=variants, iters=iters,
                                    configs="search" if search else (), **extra)
        name, cfg = fused_ops.plan(ctx, op, a, b, c, **extra)
    return times, name if cfg is None else f"{name}: {cfg.describe()}"


def cmd_tune(args):
    dtype = DTYPES[args.datatype]
    _check_shapes([(args.op, (args.m, args.n, args.k))], dtype, args.num_ranks)
    _check_machine(args)
    out = on_ranks(tune_shape, args, args.op, args.variants, args.m, args.n, args.k, dtype, args.search, args.iters)
    if out is None:
        return 0
    times, picked = out
    for name, us in sorted(times.items(), key=lambda kv: kv[1]):
        print(f"  {name:<20} {us:10.1f} us")
    print(f"auto's pick for {args.op} {args.m}x{args.n}x{args.k} after this tuning: {picked} (the tuning lives in "
          f"the process that ran it: call fused_ops.tune in yours, or pass this variant and config)")
    return 0


def read_csv(path):
    """A results CSV with its text columns kept as text: a short commit hash such as 8e02100 is a float to pandas."""
    import pandas as pd

    return pd.read_csv(path, dtype={"commit": str, "config": str, "ran": str, "command": str})


def _append(rows, path):
    import pandas as pd

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    new = pd.DataFrame(rows).reindex(columns=COLUMNS)
    if os.path.exists(path):
        new = pd.concat([read_csv(path), new], ignore_index=True)
    new.to_csv(path, index=False)


def cmd_sweep(args):
    models = args.shapes == ["models"]
    if models:  # the public shape set's whole layers, sampled per class (benchmarks/shapes.py)
        from benchmarks.shapes import global_shapes
        shapes = global_shapes()
    else:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes] if args.shapes else default_shapes()
    dtype = DTYPES[args.datatype]
    jobs = [(op, _variants(op, args.variants, iris.BACKEND, dtype, args.timing), shape, dtype) for op in args.ops
            for shape in shapes]
    if not models:  # (the models set leaves out, on the ranks, the shapes that cannot run: sweep_ranks)
        _check_shapes([(op, shape) for op, _, shape, _ in jobs], dtype, args.num_ranks)
    _check_machine(args)
    rows = on_ranks(sweep_ranks, args, jobs, _config(args), args.iters, args.warmup, not args.no_validate,
                    os.path.abspath(args.out), args.timing, models)
    if rows is None:
        return 0
    for op in args.ops:
        n_rows = sum(r["op"] == op for r in rows)
        print(f"{n_rows} rows appended to {os.path.join(args.out, op + '.csv')}")
    bad = [r for r in rows if r["correct"] is False]
    for r in bad:
        print(f"INCORRECT: {r['op']}/{r['variant']} {r['m']}x{r['n']}x{r['k']}: error {r['max_rel_error']}")
    return 1 if bad else 0


def cmd_plot(args):
    from . import plots

    written = plots.plot_all(args.out, args.ops)
    for path in written:
        print(f"wrote {path}")
    return 0 if written else 1


def read_sweeps(dirs, command):
    """The rows of every <op>.csv in the sweep directories `dirs`, with a `shape` column (MxNxK)."""
    import pandas as pd

    frames = []
    for d in dirs:
        files = [f for f in (os.path.join(d, f"{op}.csv") for op in registry.list_ops()) if os.path.exists(f)]
        if not files:
            raise SystemExit(f"{command}: no <op>.csv in {d}")
        frames += [read_csv(f) for f in files]
    df = pd.concat(frames, ignore_index=True)
    df["shape"] = df.m.astype(str) + "x" + df.n.astype(str) + "x" + df.k.astype(str)
    return df


def _show_frame(table, csv, index):
    """Print a result table (and write it to `csv` when given)."""
    import pandas as pd

    if csv:
        table.to_csv(csv, index=index)
    with pd.option_context("display.width", 250, "display.max_rows", None, "display.max_columns", None,
                           "display.float_format", "{:.3f}".format):
        print(table.to_string(index=index))


def compare_table(runs):
    """Median time_us per (op, variant, shape, dtype, world_size, timing) of each labelled run, and each later
    label's ratio to the first. `runs`: [(label, [sweep directories])]; a label's directories (rounds of one
    configuration) are pooled. Rows missing from a run stay empty."""
    import pandas as pd

    df = pd.concat([read_sweeps(dirs, "compare").assign(run=label) for label, dirs in runs], ignore_index=True)
    keys = ["op", "variant", "shape", "dtype", "world_size", "timing"]
    table = df.pivot_table(index=keys, columns="run", values="time_us", aggfunc="median")
    labels = [label for label, _ in runs]
    table = table[labels]
    for label in labels[1:]:
        table[f"{label}/{labels[0]}"] = table[label] / table[labels[0]]
    return table


def cmd_compare(args):
    runs = []
    for spec in args.runs:
        label, _, dirs = spec.rpartition("=")
        dirs = dirs.split(",")
        runs.append((label or os.path.basename(os.path.normpath(dirs[0])), dirs))
    _show_frame(compare_table(runs), args.csv, index=True)
    return 0


def summary_table(dirs):
    """One row per (op, timing, world size, dtype, device) of the sweeps in `dirs`: the fastest fused variant per
    shape over torch_nccl (geo-mean and best shape), how many shapes it takes within 10% of the overlap limit
    max(t_gemm, t_comm), how often it beats the fastest of PyTorch's other ops, `auto`'s geo-mean and worst shape,
    and which variants win. The figures issue #6 states its targets in, from any sweep directory."""
    import numpy as np
    import pandas as pd

    df = read_sweeps(dirs, "summary")
    df = df[df["time_us"].notna()]
    for col, default in (("timing", "eager"), ("device", "unknown")):  # sweeps from before these columns
        df[col] = df[col].fillna(default) if col in df else default
    geo = lambda s: float(np.exp(np.log(s).mean()))  # noqa: E731
    rows = []
    for (op, timing, world, dtype, device), g in df.groupby(["op", "timing", "world_size", "dtype", "device"]):
        base = g[g.variant == "torch_nccl"].groupby("shape").time_us.median()
        fused = g[(g.pattern != "baseline") & (g.variant != "auto")]
        best = fused.loc[fused.groupby("shape").time_us.idxmin()].set_index("shape").reindex(base.index).dropna(
            subset=["time_us"])
        if best.empty:
            continue
        speedup = base[best.index] / best.time_us
        row = {"op": op, "timing": timing, "ranks": world, "dtype": dtype, "device": device, "shapes": len(best),
               "best_geo": geo(speedup), "best_max": speedup.max(), "best_max_shape": speedup.idxmax(),
               "within_10pct_of_limit": f"{int((best.time_us <= 1.1 * best.overlap_limit_us).sum())}/{len(best)}",
               "winners": " ".join(f"{v}:{n}" for v, n in best.variant.value_counts().items())}
        peers = g[(g.pattern == "baseline") & (g.variant != "torch_nccl")]
        if len(peers):
            fastest = peers.groupby("shape").time_us.min().reindex(best.index)
            row.update(peer=" ".join(sorted(peers.variant.unique())),
                       faster_than_peer=f"{int((best.time_us < fastest).sum())}/{len(best)}",
                       vs_peer_geo=geo((fastest / best.time_us).dropna()))
        auto = g[g.variant == "auto"].groupby("shape").time_us.median()
        if len(auto):
            ratio = base[auto.index] / auto
            row.update(auto_geo=geo(ratio), auto_worst=ratio.min(), auto_worst_shape=ratio.idxmin())
        rows.append(row)
    return pd.DataFrame(rows)


def cmd_summary(args):
    _show_frame(summary_table(args.dirs), args.csv, index=False)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="python -m taxonomy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="ops x variants with their pattern class")

    def common(sp):
        sp.add_argument("--datatype", choices=sorted(DTYPES), default="fp16" if iris.BACKEND == "cpu" else "bf16",
                        help="operands and result (CSV dtype column: " + ", ".join(
                            f"{k} {v}" for k, v in DTYPES.items()) + "). fp8: float8_e4m3fn operands with an fp32 "
                        "scale per tensor, fp8-row: with row-wise scales (one per row of a and per column of b); "
                        "c in bfloat16 (float16 on the CPU backend), the GEMM alone is torch._scaled_mm, and only "
                        "the variants that take FP8 run")
        sp.add_argument("-r", "--num_ranks", "--num-ranks", type=int, default=2)
        sp.add_argument("--heap_size", "--heap-size", type=float, default=(1 << 28) if iris.BACKEND == "cpu"
                        else (8 << 30))
        sp.add_argument("--iters", type=int, default=20)
        sp.add_argument("--warmup", type=int, default=3)
        for name in ("BLK_M", "BLK_N", "BLK_K", "gsize_m", "gemm_sms", "comm_sms", "num_stages", "num_warps",
                     "split_k"):
            sp.add_argument(f"--{name}", f"--{name.lower().replace('_', '-')}", dest=name, type=int, default=None)
        sp.add_argument("--split_tail", "--split-tail", choices=("on", "off"), default=None,
                        help="split only the last, partial wave's tiles along K (default: per shape)")
        sp.add_argument("--variants", nargs="+", default=None)
        sp.add_argument("--timing", choices=("eager", "graph"), default="eager",
                        help="eager: one call after a barrier, host launch included; graph: calls captured in a CUDA "
                             "graph and replayed back to back, GPU time only (taxonomy/bench.py)")

    run = sub.add_parser("run", help="one op, one shape, some variants")
    run.add_argument("op", choices=registry.list_ops())
    run.add_argument("-m", type=int, required=True)
    run.add_argument("-n", type=int, required=True)
    run.add_argument("-k", type=int, required=True)
    run.add_argument("--validate", action="store_true")
    run.add_argument("--benchmark", action="store_true")
    run.add_argument("--output_file", "--output-file", default=None, help="append the rows to this CSV")
    common(run)

    tune = sub.add_parser("tune", help="fused_ops.tune on one shape: every variant timed, the fastest (and with "
                                       "--search its tiles and split) picked for auto")
    tune.add_argument("op", choices=registry.list_ops())
    tune.add_argument("-m", type=int, required=True)
    tune.add_argument("-n", type=int, required=True)
    tune.add_argument("-k", type=int, required=True)
    tune.add_argument("--search", action="store_true", help="also time each variant with fused_ops.config.candidates")
    common(tune)

    sweep = sub.add_parser("sweep", help="shapes x variants, appended to <out>/<op>.csv")
    sweep.add_argument("--ops", nargs="+", default=registry.list_ops(), choices=registry.list_ops())
    sweep.add_argument("--shapes", nargs="+", default=None,
                       help="MxNxK ... (default: tensor-parallel layer grid), or models: layers of real models "
                            "(benchmarks/shapes.py)")
    sweep.add_argument("--out", default="results")
    sweep.add_argument("--no-validate", action="store_true")
    common(sweep)

    compare = sub.add_parser("compare", help="A/B: time per row of each sweep directory, ratios to the first")
    compare.add_argument("runs", nargs="+", metavar="[LABEL=]DIR[,DIR...]",
                         help="sweep --out directories; several after one label are rounds of it, pooled (median)")
    compare.add_argument("--csv", default=None, help="also write the table here")

    summary = sub.add_parser("summary", help="per op and timing: best fused variant (geo-mean, max), shapes near the "
                                             "overlap limit, wins over PyTorch's fused ops, auto's worst shape")
    summary.add_argument("dirs", nargs="+", metavar="DIR", help="sweep --out directories (e.g. A A/graph)")
    summary.add_argument("--csv", default=None, help="also write the table here")

    plot = sub.add_parser("plot", help="speedup and time-breakdown PNGs from <out>/<op>.csv")
    plot.add_argument("--out", default="results")
    plot.add_argument("--ops", nargs="+", default=registry.list_ops())
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    return {"list": cmd_list, "run": cmd_run, "sweep": cmd_sweep, "plot": cmd_plot, "compare": cmd_compare,
            "summary": cmd_summary, "tune": cmd_tune}[args.cmd](args) or 0
