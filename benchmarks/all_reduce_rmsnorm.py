"""A tensor-parallel layer's exit, all-reduce + residual add + RMSNorm (vLLM's all_reduce then fused_add_rms_norm),
bf16, decode to prefill rows: iris.collectives.all_reduce_rmsnorm ("push": one kernel) against the same steps
unfused (iris's push all_reduce, then torch ops) and against NCCL's all_reduce then torch ops ("nccl"), each timed
eager and CUDA-graph-captured (10 calls in one graph, replayed). Every variant's output and new residual are checked
against float64 of the definition first. Writes <out>/all_reduce_rmsnorm.csv.

    python benchmarks/all_reduce_rmsnorm.py --out DIR [--rows 1 8 32 128 1024] [--hidden 4096 8192]
"""

import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402

from iris import collectives as coll  # noqa: E402
from benchmarks.collectives import measure  # noqa: E402
from benchmarks.harness import stamp  # noqa: E402

EPS = 1e-6


def _norm(h, weight):
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * weight.float()


def variants(ctx, x, residual, weight, out):
    """(name, one call): every call reads x and residual as given and writes out and residual."""
    def fused():
        coll.all_reduce_rmsnorm(ctx, x, residual, weight, eps=EPS, out=out)

    def unfused():  # the same steps as separate launches: iris's all_reduce, then torch's elementwise ops
        coll.all_reduce(ctx, x, variant="push", out=out)
        h = out.float() + residual.float()
        residual.copy_(h)
        out.copy_(_norm(h, weight))

    def nccl():
        coll.all_reduce_rmsnorm(ctx, x, residual, weight, eps=EPS, variant="nccl", out=out)

    return [("push", fused), ("push, unfused", unfused), ("nccl", nccl)]


def bench(ctx, rows_list, hiddens, run_stamp):
    w, r, dev, out_rows = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device(), []
    dtype = torch.bfloat16 if ctx.backend == "cuda" else torch.float32
    for rows, hidden in itertools.product(rows_list, hiddens):
        g = torch.Generator().manual_seed(rows * 7 + hidden)
        ins = [torch.randn(rows, hidden, generator=g) for _ in range(w)]
        res0, weight = torch.randn(rows, hidden, generator=g), torch.rand(hidden, generator=g) + 0.5
        bf = [t.to(dtype) for t in (*ins, res0, weight)]
        h = torch.stack([t.double() for t in bf[:w]]).sum(0).to(dtype).double() + bf[w].double()
        want, want_res = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * bf[w + 1].double(), h
        x, residual, out = (torch.empty(rows, hidden, dtype=dtype, device=dev) for _ in range(3))
        weight_d = bf[w + 1].to(dev)
        for name, fn in variants(ctx, x, residual, weight_d, out):
            x.copy_(bf[r])
            residual.copy_(bf[w])
            out.fill_(float("nan"))
            ctx.barrier()
            fn()
            if ctx.backend == "cuda":
                torch.cuda.synchronize()
            err = max(((got.double().cpu() - ref).abs() / (1 + ref.abs())).max().item()
                      for got, ref in ((out, want), (residual, want_res)))
            modes = ("eager", "graph") if ctx.backend == "cuda" else ("eager",)
            for mode in modes:  # the residual keeps growing over the timed calls: harmless to the timing
                t = measure(ctx, fn, mode)
                out_rows.append(dict(variant=name, mode=mode, rows=rows, hidden=hidden,
                                     bytes=x.numel() * x.element_size(), time_us=t, rel_error=err, correct=err < 2e-2,
                                     world_size=w, dtype=str(dtype).replace("torch.", ""),
                                     **run_stamp))
        if r == 0:
            line = "  ".join(f"{o['variant']}/{o['mode']}={o['time_us']:.1f}" for o in out_rows
                             if o["rows"] == rows and o["hidden"] == hidden)
            print(f"{rows:5d} x {hidden:5d}: {line}", flush=True)
    return out_rows


def run(ctx, args, run_stamp):
    import pandas as pd

    df = pd.DataFrame(bench(ctx, args.rows, args.hidden, run_stamp))
    if ctx.get_rank() != 0:
        return
    base = df[df.variant == "nccl"].set_index(["mode", "rows", "hidden"]).time_us
    df["speedup_vs_nccl"] = [base[(m, r, h)] / t for m, r, h, t in zip(df["mode"], df["rows"], df["hidden"],
                                                                       df["time_us"])]
    print(df.pivot_table(index=["rows", "hidden"], columns=["mode", "variant"], values="speedup_vs_nccl").round(2)
          .to_string())
    print(f"all correct: {bool(df.correct.all())}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        df.to_csv(os.path.join(args.out, "all_reduce_rmsnorm.csv"), index=False)
        print(f"wrote {args.out}/all_reduce_rmsnorm.csv ({len(df)} rows)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out")
    p.add_argument("--rows", type=int, nargs="+", default=[1, 8, 32, 128, 1024])
    p.add_argument("--hidden", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("-n", "--num_ranks", type=int, default=2)
    args = p.parse_args()
    if iris.BACKEND != "cuda":
        print("CPU backend: a smoke run of the harness (gloo, no graphs, float32: the interpreter has no working "
              "bfloat16); results are not written")
        args.out, args.rows, args.hidden = None, args.rows[:1], [40]
    iris.spawn(run, args.num_ranks, args, stamp(args.num_ranks, "benchmarks/all_reduce_rmsnorm.py"),
               heap_size=1 << 30)


if __name__ == "__main__":
    main()
