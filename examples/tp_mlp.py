"""A tensor-parallel transformer MLP block (Linear -> GELU -> Linear) on the fused ops, built from the single-device
block, checked against it (output, input gradient, every parameter gradient), then timed: forward and forward +
backward, eager / torch.compile / CUDA graph, the fused ops (`auto`) against the same layers on torch.matmul + NCCL
(`torch_nccl`).

    python examples/tp_mlp.py                         # check on 2 ranks (CPU backend where there is no GPU)
    python examples/tp_mlp.py --bench --out results   # GPU: also the timing table, appended to results/tp_mlp.csv

Layouts: "sequence_parallel" (tokens split across ranks between blocks: AllGather+GEMM, then GEMM+ReduceScatter) and
"replicated" (local GEMM, then GEMM+AllReduce).
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
from fused_ops.nn import ColumnParallelLinear, RowParallelLinear  # noqa: E402

LAYOUTS = {"sequence_parallel": (True, "scatter"), "replicated": (False, "all")}
# Variants by name: "auto" and "torch_nccl" exist for every op; "fused" pins each layer's default fused variant.
FUSED = {"sequence_parallel": ("push", "fused"), "replicated": ("auto", "one_shot")}


VARIANTS = ("torch_nccl", "auto", "fused")


def single_device_mlp(hidden, seed, device, dtype):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)).to(device, dtype)


def tensor_parallel(ctx, mlp, layout, variant):
    gather, reduce = LAYOUTS[layout]
    col, row = FUSED[layout] if variant == "fused" else (variant, variant)
    return nn.Sequential(ColumnParallelLinear(ctx, mlp[0], gather_input=gather, variant=col), nn.GELU(),
                         RowParallelLinear(ctx, mlp[2], reduce=reduce, variant=row))


def _rows(ctx, layout, tokens):
    w, r = ctx.get_num_ranks(), ctx.get_rank()
    return slice(r * tokens // w, (r + 1) * tokens // w) if layout == "sequence_parallel" else slice(None)


def check(ctx, layout, variant, tokens=64, hidden=32, steps=3):
    """Worst relative error of the TP block against the float64 single-device block over a few steps."""
    dev, r, w = ctx.get_device(), ctx.get_rank(), ctx.get_num_ranks()
    dtype = torch.bfloat16 if ctx.backend == "cuda" else torch.float32
    ref = single_device_mlp(hidden, 0, dev, torch.float64)
    tp = tensor_parallel(ctx, single_device_mlp(hidden, 0, dev, dtype), layout, variant)
    rows, cols = _rows(ctx, layout, tokens), slice(r * 4 * hidden // w, (r + 1) * 4 * hidden // w)
    worst = 0.0
    for step in range(steps):
        g = torch.Generator(device=dev).manual_seed(step)
        x = torch.randn(tokens, hidden, generator=g, device=dev, dtype=torch.float64)
        gy = torch.randn(tokens, hidden, generator=g, device=dev, dtype=torch.float64)
        xr, xt = x.clone().requires_grad_(), x[rows].to(dtype).requires_grad_()
        ref(xr).backward(gy)
        y = tp(xt)
        y.backward(gy[rows].to(dtype))
        pairs = [(y, ref(xr)[rows]), (xt.grad, xr.grad[rows]), (tp[0].weight.grad, ref[0].weight.grad[cols]),
                 (tp[0].bias.grad, ref[0].bias.grad[cols]), (tp[2].weight.grad, ref[2].weight.grad[:, cols]),
                 (tp[2].bias.grad, ref[2].bias.grad)]
        worst = max(worst, *[((a.double() - b).norm() / b.norm()).item() for a, b in pairs])
        ref.zero_grad()
        tp.zero_grad()
    return worst


def _events_us(fn, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def time_block(ctx, layout, variant, mode, tokens, hidden, iters=10, repeats=3):
    """(forward us, forward+backward us, output) of one configuration: back-to-back steps, median of repeats, the
    slowest rank's. Graph mode captures one forward (and one forward+backward) and replays it."""
    dev, dtype = ctx.get_device(), torch.bfloat16
    tp = tensor_parallel(ctx, single_device_mlp(hidden, 0, dev, dtype), layout, variant)
    if mode == "compile":
        torch._dynamo.reset()  # a fresh block each time: do not pile recompilations onto one frame
    model = torch.compile(tp, fullgraph=True) if mode == "compile" else tp
    rows = _rows(ctx, layout, tokens)
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(tokens, hidden, generator=g, device=dev, dtype=dtype)[rows].contiguous().requires_grad_()
    gy = torch.randn(tokens, hidden, generator=g, device=dev, dtype=dtype)[rows].contiguous()

    def forward():
        with torch.no_grad():
            return model(x)

    def step():
        model(x).backward(gy)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: workspaces, autotuning, compilation (and what graph capture needs)
        for _ in range(3):
            forward()
            step()
    torch.cuda.current_stream().wait_stream(side)
    ctx.barrier()
    if mode == "graph":
        fwd_graph, step_graph = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(fwd_graph):
            out = forward()
        with torch.cuda.graph(step_graph):
            step()
        run_fwd, run_step = fwd_graph.replay, step_graph.replay
    else:
        run_fwd, run_step = forward, step
    times = []
    for fn in (run_fwd, run_step):
        samples = []
        for _ in range(repeats):
            ctx.barrier()
            samples.append(_events_us(fn, iters))
        t = torch.tensor([statistics.median(samples)], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    ctx.barrier()
    result = out.clone() if mode == "graph" else forward()
    return times[0], times[1], result


def bench(ctx, shapes, out_dir, layouts=tuple(LAYOUTS), modes=("eager", "compile", "graph")):
    import fused_ops

    rows, stamp = [], dict(device=f"{ctx.get_num_ranks()}x {torch.cuda.get_device_name(ctx.get_device())}",
                           date=datetime.date.today().isoformat(), commit=_commit(),
                           command="python examples/tp_mlp.py " + " ".join(sys.argv[1:]))
    for tokens, hidden in shapes:
        for layout in layouts:
            for mode in modes:
                res = {}
                for v in VARIANTS:
                    if ctx.get_rank() == 0:  # a failure (a spin-wait timeout, say) then names what ran
                        print(f"[bench] {layout} {mode} M={tokens} H={hidden} {v}", flush=True)
                    res[v] = time_block(ctx, layout, v, mode, tokens, hidden)
                base_f, base_fb, base_y = res["torch_nccl"]
                m_local = tokens // ctx.get_num_ranks()
                gather, reduce = LAYOUTS[layout]
                timing = "graph" if mode == "graph" else "eager"  # what auto runs under capture differs
                chosen = [fused_ops.auto.choose(ctx, op, tokens, n, k, torch.bfloat16, timing=timing) for op, n, k in (
                    ("all_gather_gemm" if gather else "local", 4 * hidden, hidden),
                    ("gemm_reduce_scatter" if reduce == "scatter" else "gemm_all_reduce", hidden, 4 * hidden))
                    if op != "local"]
                for v, (f, fb, y) in res.items():
                    err = ((y.double() - base_y.double()).norm() / base_y.double().norm()).item()
                    what = {"auto": " + ".join(chosen), "torch_nccl": "torch.matmul + NCCL",
                            "fused": " + ".join(x for x in FUSED[layout] if x != "auto")}[v]
                    rows.append(dict(layout=layout, mode=mode, variant=v, chosen=what, tokens=tokens, hidden=hidden, ffn=4 * hidden,
                                     dtype="bfloat16", world_size=ctx.get_num_ranks(), fwd_us=f, fwd_bwd_us=fb,
                                     speedup_fwd=base_f / f, speedup_fwd_bwd=base_fb / fb,
                                     rel_diff_vs_torch_nccl=err, tokens_per_rank=m_local, **stamp))
                if ctx.get_rank() == 0:
                    _append(rows[-len(VARIANTS):], out_dir)
                    for r in rows[-len(VARIANTS) + 1:]:
                        print(f"{layout:17s} {mode:7s} M={tokens:6d} H={hidden} {r['variant']:5s}: fwd {base_f:8.1f} -> "
                              f"{r['fwd_us']:8.1f} us ({r['speedup_fwd']:.2f}x)  fwd+bwd {base_fb:8.1f} -> "
                              f"{r['fwd_bwd_us']:8.1f} us ({r['speedup_fwd_bwd']:.2f}x)  [{r['chosen']}]", flush=True)
    return rows


def _append(rows, out_dir):
    """Rows go to <out>/tp_mlp.csv as soon as they exist (a run cut short keeps what it measured)."""
    import pandas as pd

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tp_mlp.csv")
    pd.DataFrame(rows).to_csv(path, mode="a", header=not os.path.exists(path), index=False)


def _commit():
    try:
        return os.environ.get("IRIS_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main(ctx, args):
    for layout in LAYOUTS:
        for variant in VARIANTS:
            err = check(ctx, layout, variant)
            tol = 3e-2 if ctx.backend == "cuda" else 1e-4
            if ctx.get_rank() == 0:
                print(f"[check] {layout:17s} {variant:10s} worst relative error vs single device: {err:.2e}"
                      f" {'ok' if err < tol else 'FAILED'}", flush=True)
            if not err < tol:
                raise SystemExit(f"tensor-parallel MLP ({layout}, {variant}) does not match the single-device block")
    if args.bench:
        if ctx.backend != "cuda":
            raise SystemExit("--bench times CUDA graphs and NCCL: run it on GPUs")
        bench(ctx, [tuple(int(v) for v in s.split("x")) for s in args.shapes], args.out, args.layouts, args.modes)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", action="store_true")
    p.add_argument("--shapes", nargs="+", default=["4096x4096", "16384x4096", "4096x8192", "16384x8192"],
                   help="TOKENSxHIDDEN (the FFN is 4x hidden)")
    p.add_argument("--layouts", nargs="+", choices=list(LAYOUTS), default=list(LAYOUTS))
    p.add_argument("--modes", nargs="+", choices=["eager", "compile", "graph"], default=["eager", "compile", "graph"])
    p.add_argument("--out", default="results")
    p.add_argument("-n", "--num_ranks", type=int, default=2)
    p.add_argument("--heap_size", type=float, default=8 << 30)
    args = p.parse_args()
    if "RANK" in os.environ:
        main(iris.iris(int(args.heap_size)), args)
    else:
        iris.spawn(main, args.num_ranks, args, heap_size=int(args.heap_size if torch.cuda.is_available() else 1 << 28))
