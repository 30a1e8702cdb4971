"""Block size of the push collectives (one program per block of elements): graph-timed µs per call for each block
size (and warp count) and message size, bf16, so that the host default can follow the measurement. Every run is
checked against NCCL first. Writes <out>/push_blocks.csv.

    python benchmarks/push_blocks.py --out results [-n 2]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from benchmarks.collectives import measure  # noqa: E402
from benchmarks.harness import stamp  # noqa: E402
from iris import collectives as coll  # noqa: E402

BLOCKS = (1024, 2048, 4096, 8192, 16384, 32768)


def _case(ctx, name, n, block, warps):
    """(call, our result, NCCL's result) for one collective of n bf16 elements (the largest tensor's size)."""
    w, cfg = ctx.get_num_ranks(), coll.CollConfig(block=block, num_warps=warps)
    g = torch.Generator(device=ctx.get_device()).manual_seed(1 + ctx.get_rank())
    if name == "all_reduce":
        x = ctx.zeros(n, dtype=torch.bfloat16).normal_(generator=g)
        y, ref = ctx.zeros(n, dtype=torch.bfloat16), x.clone()
        dist.all_reduce(ref)
        return lambda: coll.all_reduce(ctx, x, variant="push", out=y, config=cfg), y, ref
    if name == "all_gather":
        x = ctx.zeros(n // w, dtype=torch.bfloat16).normal_(generator=g)
        y, ref = ctx.zeros(n, dtype=torch.bfloat16), torch.empty(n, dtype=torch.bfloat16, device=ctx.get_device())
        dist.all_gather_into_tensor(ref, x)
        return lambda: coll.all_gather(ctx, y, x, variant="push", config=cfg), y, ref
    x = ctx.zeros(n, dtype=torch.bfloat16).normal_(generator=g)
    y, ref = ctx.zeros(n // w, dtype=torch.bfloat16), torch.empty(n // w, dtype=torch.bfloat16,
                                                                  device=ctx.get_device())
    dist.reduce_scatter_tensor(ref, x)
    return lambda: coll.reduce_scatter(ctx, y, x, variant="push", config=cfg), y, ref


def run(ctx, args, run_stamp):
    rows = []
    for name in args.collectives:
        for nbytes in args.sizes:
            for block, warps in ((b, w) for b in args.blocks for w in args.warps):
                with ctx.scratch():
                    fn, y, ref = _case(ctx, name, nbytes // 2, block, warps or None)
                    y.fill_(float("nan"))
                    fn()
                    torch.cuda.synchronize()
                    err = ((y.double() - ref.double()).norm() / ref.double().norm()).item()
                    t = measure(ctx, fn, "graph")
                rows.append(dict(collective=name, variant="push", bytes=nbytes, block=block,
                                 num_warps=coll._warps(coll.CollConfig(num_warps=warps or None), block), time_us=t,
                                 rel_error_vs_nccl=err, correct=err < 1e-2, world_size=ctx.get_num_ranks(),
                                 dtype="bfloat16", **run_stamp))
                if ctx.get_rank() == 0:
                    warps = rows[-1]["num_warps"]
                    print(f"{name:14s} {nbytes:>9d} B block {block:>5d} warps {warps:>2d}: {t:6.1f} µs  err {err:.1e}",
                          flush=True)
    if ctx.get_rank() == 0:
        import pandas as pd

        os.makedirs(args.out, exist_ok=True)
        df = pd.DataFrame(rows)
        df.to_csv(os.path.join(args.out, "push_blocks.csv"), index=False)
        best = df.loc[df.groupby(["collective", "bytes"]).time_us.idxmin()]
        print(best[["collective", "bytes", "block", "num_warps", "time_us"]].to_string(index=False))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results")
    p.add_argument("--sizes", type=int, nargs="+", default=[1 << s for s in range(14, 25, 2)])
    p.add_argument("--collectives", nargs="+", default=["all_reduce", "all_gather", "reduce_scatter"])
    p.add_argument("--blocks", type=int, nargs="+", default=list(BLOCKS))
    p.add_argument("--warps", type=int, nargs="+", default=[0], help="warps per program (0: the default for the block)")
    p.add_argument("-n", "--num_ranks", type=int, default=2)
    args = p.parse_args()
    if iris.BACKEND != "cuda":
        raise SystemExit("push_blocks.py times CUDA graphs: run it on GPUs (IRIS_BACKEND=cuda)")
    iris.spawn(run, args.num_ranks, args, stamp(args.num_ranks, "benchmarks/push_blocks.py"),
               heap_size=16 * args.num_ranks * max(args.sizes) + (256 << 20))


if __name__ == "__main__":
    main()
