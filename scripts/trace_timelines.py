"""Timelines of catalog variants on GPUs: one traced call (after warm-up) per variant, written as a merged
Chrome/Perfetto trace JSON and a PNG per variant under --out.

    python scripts/trace_timelines.py --out results/current/traces \
        gemm_all_scatter:wg_specialized gemm_all_reduce:one_shot
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402

import fused_ops  # noqa: E402
from fused_ops import reference  # noqa: E402


def trace(ctx, jobs, m, n, k, out):
    dtype = torch.bfloat16 if ctx.backend == "cuda" else torch.float32
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    done = []
    for job in jobs:
        op, variant = job.split(":")
        a, b, ref = reference.make_inputs(op, 5, world, rank, m, n, k, dtype, ctx.get_device())
        with ctx.scratch():
            c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=dtype)
            for _ in range(3):
                getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
            ctx.barrier()
            tracer = iris.Tracer(ctx, capacity=1 << 18)
            with tracer:  # compiles the TRACING=True kernels: not the call to look at
                getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
            c.fill_(float("nan"))
            ctx.barrier()
            with tracer:
                getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
            ctx.barrier()
            err = reference.rel_error(c, ref)
            stem = os.path.join(out, f"{op}_{variant}_{m}x{n}x{k}")
            tracer.export(stem + ".json")
            tracer.plot(stem + ".png", title=f"{op} / {variant}, M x N x K = {m} x {n} x {k}, {world} ranks, "
                                             f"{str(dtype).replace('torch.', '')} (rel. error {err:.1e})")
            if rank == 0:
                print(f"{job}: {stem}.png  error {err:.2e}  dropped {tracer.dropped}", flush=True)
            done.append((job, err))
            del tracer
    return done


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("jobs", nargs="+", help="op:variant")
    p.add_argument("--shape", default="4096x8192x8192", help="MxNxK (global)")
    p.add_argument("--out", default="results/current/traces")
    p.add_argument("-n", "--num_ranks", type=int, default=2)
    args = p.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    os.makedirs(args.out, exist_ok=True)
    iris.spawn(trace, args.num_ranks, args.jobs, m, n, k, args.out, heap_size=4 << 30 if torch.cuda.is_available()
               else 1 << 27)


if __name__ == "__main__":
    main()
