"""moe_ffn sweep over shapes of real MoE models, every variant timed in the taxonomy's harness (taxonomy/bench.py:
eager, or captured in CUDA graphs) and checked, rows appended to <out>/moe_ffn.csv with the taxonomy's columns
(taxonomy/cli.py COLUMNS; m = tokens per rank, n = hidden, k = ffn; E, top-k, routing and capacity in `config`).

    python benchmarks/moe.py --out results/moe -r 8                       # default grid, one GPU per rank
    python benchmarks/moe.py --models mixtral --tokens 128 4096 --routing balanced skewed --timing graph
    IRIS_BACKEND=cpu python benchmarks/moe.py --smoke                     # tiny shapes on the CPU backend

Models (hidden, ffn per expert, experts, top-k): mixtral 8x7B (4096, 14336, 8, 2), qwen3-30b-a3b (2048, 768, 128, 8),
olmoe (2048, 1024, 64, 8), gpt-oss-120b (2880, 2880, 128, 4), deepseek-v3 (7168, 2048, 256, 8). Tokens per rank 1 to
16384. Routing: "balanced" (top-k of uniform random scores), "skewed" (scores biased to a quarter of the experts,
the hot ones getting ~3x the mean load). Capacity per local expert: 4x the mean load or the largest load of the run's
routings if more (no row dropped), rounded up to 64, at most world * T rows. An output with NaN rows (a dropped row)
is correct=False.
Validation: each variant's output against torch_nccl's (rel. error, fp32 accumulation both sides) where torch_nccl
runs, else against a float64 reference where the experts fit in memory. torch_nccl needs one GPU per rank and is
timed eagerly only (its split sizes go through the host: it cannot be captured).
"""

import argparse
import datetime
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import fused_ops  # noqa: E402
from fused_ops.moe import reference  # noqa: E402
from benchmarks.harness import worst  # noqa: E402
from taxonomy.bench import ROTATE, Timer  # noqa: E402
from taxonomy.cli import COLUMNS, _commit  # noqa: E402

MODELS = {"mixtral": (4096, 14336, 8, 2), "qwen3-30b-a3b": (2048, 768, 128, 8), "olmoe": (2048, 1024, 64, 8),
          "gpt-oss-120b": (2880, 2880, 128, 4), "deepseek-v3": (7168, 2048, 256, 8)}
TOKENS = (1, 16, 128, 1024, 4096, 16384)
SMOKE = {"tiny": (16, 8, 4, 2)}


def capacity(world, t, k, e, routed=0):
    """Rows per local expert: 4x the mean load, at least the largest load `routed` of the run's routings (so no row
    is dropped: skewed routing put 4.3x the mean load on one of Qwen3's 128 experts), rounded up to 64, at most
    world x T."""
    return min(world * t, 64 * math.ceil(max(4 * t * k * world / e, routed) / 64))


def largest_load(sets, e):
    """The most (token, expert) pairs any one expert receives from all ranks in any of the input sets (collective)."""
    loads = torch.stack([torch.bincount(idx.reshape(-1).long(), minlength=e) for _, idx, _ in sets]).cpu()
    dist.all_reduce(loads)  # a CPU tensor: gloo (the default group has it on GPUs too)
    return int(loads.max())


def routing(seed, t, e, k, mode, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    scores = torch.rand(t, e, generator=g)
    if mode == "skewed":
        scores[:, : max(1, e // 4)] += 0.35  # a quarter of the experts is hot
    top, idx = scores.topk(k, dim=1)
    w = torch.softmax(top, dim=1)
    return idx.to(device), w.to(device)


def inputs(ctx, seed, t, h, f, e, k, mode, dtype):
    rank, dev = ctx.get_rank(), ctx.get_device()
    g = torch.Generator(device="cpu").manual_seed(seed * 1000 + rank)
    x = torch.randn(t, h, generator=g).to(dev, dtype)
    idx, w = routing(seed * 1000 + rank, t, e, k, mode, dev)
    return x, idx, w.to(dtype)


def weights(ctx, h, f, e, dtype):
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    g = torch.Generator(device="cpu").manual_seed(77 + rank)
    el = e // world
    w1 = (torch.randn(el, h, f, generator=g) / math.sqrt(h)).to(dev, dtype)
    w2 = (torch.randn(el, f, h, generator=g) / math.sqrt(f)).to(dev, dtype)
    return w1, w2


def _max_over_ranks(v):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, v)
    return worst(out)


def bench_shape(ctx, model, t, mode, variants, dtype_name, timing, iters, warmup):
    """Rows of every variant on one shape (rank 0's list; times are the slowest rank's medians)."""
    h, f, e, k = (MODELS | SMOKE)[model]
    world, dtype = ctx.get_num_ranks(), getattr(torch, dtype_name)
    if e % world:
        return []
    rows = []
    with ctx.scratch():
        w1, w2 = weights(ctx, h, f, e, dtype)
        sets = [inputs(ctx, 10 + s, t, h, f, e, k, mode, dtype) for s in range(ROTATE)]
        cap = capacity(world, t, k, e, largest_load(sets, e))
        y = torch.empty(t, h, dtype=dtype, device=ctx.get_device())
        nccl_ok = ctx.backend == "cuda" and ctx.ranks_per_device == 1 or ctx.backend == "cpu"
        ref = None
        if nccl_ok and "torch_nccl" in fused_ops.list_variants("moe_ffn"):
            fused_ops.moe_ffn(ctx, *sets[0], w1, w2, out=y, variant="torch_nccl", capacity=cap)
            ref = y.double().clone()
        elif e * h * f * 16 < (1 << 30):  # float64 reference: every rank's inputs and experts on each rank
            objs = [None] * world
            dist.all_gather_object(objs, [t_.cpu() for t_ in (*sets[0], w1, w2)])
            ref = reference(*([o[i] for o in objs] for i in range(5)))[ctx.get_rank()].to(y.device)
        base = None
        for v in variants:
            if v == "torch_nccl" and (not nccl_ok or timing == "graph"):
                continue
            y.fill_(float("nan"))
            fused_ops.moe_ffn(ctx, *sets[0], w1, w2, out=y, variant=v, capacity=cap)
            if ctx.backend == "cuda":
                torch.cuda.synchronize()
            err = float("nan") if ref is None else ((y.double() - ref).norm() / ref.norm()).item()
            err = _max_over_ranks(err)
            us = Timer(ctx, timing)(lambda i, v=v: fused_ops.moe_ffn(ctx, *sets[i % ROTATE], w1, w2, out=y, variant=v,
                                                                     capacity=cap), iters, warmup)
            if v == "torch_nccl":
                base = us
            flops = 2 * 2 * t * k * h * f  # per rank: two GEMMs per (token, expert) pair
            tol = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-3}[dtype]
            rows.append({
                "op": "moe_ffn", "variant": v, "pattern": fused_ops.get("moe_ffn", v).pattern, "m": t, "n": h, "k": f,
                "dtype": dtype_name, "world_size": world, "timing": timing, "time_us": us,
                "tflops": flops / us / 1e6 if us else float("nan"), "speedup": (base / us) if base else float("nan"),
                "correct": None if ref is None else bool(err <= tol), "max_rel_error": err,  # NaN rows: False
                "config": f"model={model} E={e} topk={k} routing={mode} capacity={cap}", "ran": v,
                "device": torch.cuda.get_device_name() if ctx.backend == "cuda" else "cpu",
                "date": datetime.date.today().isoformat(), "commit": _commit(), "command": " ".join(sys.argv)})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS | SMOKE))
    p.add_argument("--tokens", nargs="+", type=int, default=list(TOKENS))
    p.add_argument("--routing", nargs="+", default=["balanced", "skewed"], choices=["balanced", "skewed"])
    p.add_argument("--variants", nargs="+", default=fused_ops.list_variants("moe_ffn"))
    p.add_argument("--datatype", default="float16" if iris.BACKEND == "cpu" else "bfloat16")
    p.add_argument("--timing", choices=("eager", "graph"), default="eager")
    p.add_argument("-r", "--num-ranks", type=int, default=2)
    p.add_argument("--heap-size", type=float, default=float(32 << 30) if iris.BACKEND == "cuda" else float(1 << 27))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", default="results/moe")
    p.add_argument("--smoke", action="store_true", help="tiny shapes (CPU backend check of the script)")
    args = p.parse_args(argv)
    if args.smoke:
        args.models, args.tokens, args.iters, args.warmup = ["tiny"], [3], 2, 1
    gpus = torch.cuda.device_count() if iris.BACKEND == "cuda" else 0
    if gpus and args.num_ranks > gpus:
        raise SystemExit(f"-r {args.num_ranks}: this machine has {gpus} GPU(s); the timings gather over NCCL and the "
                         f"torch_nccl baseline runs NCCL, which refuse two ranks on one GPU (for correctness with "
                         f"ranks sharing a GPU: pytest tests/test_moe.py)")
    shapes = [(m, t, r) for m in args.models for t in args.tokens for r in args.routing]
    rows = iris.spawn(_sweep, args.num_ranks, shapes, args, heap_size=int(args.heap_size))[0]
    import pandas as pd

    print(pd.DataFrame(rows)[["config", "m", "variant", "time_us", "speedup", "correct", "max_rel_error"]].to_string(
        index=False))
    return 0 if all(r["correct"] is not False for r in rows) else 1


def _append(path, rows):
    """Append one shape's rows to the CSV, so a run cut short by a timeout keeps every shape it finished."""
    import pandas as pd

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    pd.DataFrame(rows).reindex(columns=COLUMNS).to_csv(path, mode="a", header=not os.path.exists(path), index=False)


def _sweep(ctx, shapes, args):
    rows = []
    for model, t, mode in shapes:
        done = bench_shape(ctx, model, t, mode, args.variants, args.datatype, args.timing, args.iters, args.warmup)
        rows += done
        if ctx.get_rank() == 0:
            _append(os.path.join(args.out, "moe_ffn.csv"), done)
            print(f"done {model} T={t} {mode}", flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
