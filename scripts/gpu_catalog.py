"""GPU validation of the catalog on 2 GPUs: every variant of every op, bf16 and fp16, several shapes (M=128 and
M=8192 included), 5 calls in a row with fresh inputs and a NaN-poisoned output, against a float64 reference
computed on the GPU. Prints one line per case, a rough median time per variant (not a benchmark: see taxonomy),
and exits non-zero on any failure. Writes catalog_validation.csv under --out.

    python scripts/gpu_catalog.py --out results
"""

import argparse
import datetime
import os
import sys
import time

import torch

import fused_ops
import iris
from fused_ops import reference

SHAPES = [(128, 8192, 8192), (1024, 8192, 8192), (8192, 8192, 8192), (1000, 3000, 2000)]  # M, N, K (global)


def validate(ctx, shapes, calls, ops):
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    rows = []
    for op in ops:
        for m, n, k in shapes:
            for dtype in (torch.bfloat16, torch.float16):
                with ctx.scratch():
                    c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=dtype)
                    for variant in fused_ops.list_variants(op, "cuda", dtype):
                        worst, status = 0.0, "ok"
                        try:
                            for call in range(1, calls + 1):
                                a, b, ref = reference.make_inputs(op, call, world, rank, m, n, k, dtype, dev)
                                c.fill_(float("nan"))
                                ctx.barrier()
                                getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
                                torch.cuda.synchronize()
                                err = reference.rel_error(c, ref)
                                if not err <= reference.TOLERANCE[dtype]:
                                    status = f"call {call}: error {err:.3g}"
                                    break
                                worst = max(worst, err)
                            ctx.barrier()
                            times = []
                            for _ in range(10):
                                ctx.barrier()
                                t0 = time.perf_counter()
                                getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
                                torch.cuda.synchronize()
                                times.append((time.perf_counter() - t0) * 1e6)
                            ctx.barrier()
                            t = sorted(times)[5]
                        except Exception as err:  # record and go on: one line per case
                            status, t = f"raised {type(err).__name__}: {str(err).splitlines()[0][:160]}", float("nan")
                            ctx.barrier()
                        rows.append(dict(op=op, variant=variant, m=m, n=n, k=k, dtype=str(dtype)[6:], rank=rank,
                                         max_rel_error=worst, status=status, rough_us=t))
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="results")
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--ops", nargs="+", default=fused_ops.list_ops())
    p.add_argument("--commit", default=os.environ.get("IRIS_COMMIT", "unknown"))
    args = p.parse_args()
    results = iris.spawn(validate, 2, SHAPES, args.calls, args.ops, heap_size=6 << 30)
    import pandas as pd

    df = pd.DataFrame([r for rank_rows in results for r in rank_rows])
    summary = df.groupby(["op", "variant", "m", "n", "k", "dtype"], sort=False).agg(
        max_rel_error=("max_rel_error", "max"), status=("status", lambda s: "ok" if (s == "ok").all() else
                                                          "; ".join(sorted(set(s) - {"ok"}))),
        rough_us=("rough_us", "max")).reset_index()
    summary["device"] = f"2x {torch.cuda.get_device_name(0)}"
    summary["date"] = datetime.date.today().isoformat()
    summary["commit"] = args.commit
    summary["command"] = "python " + " ".join(sys.argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "catalog_validation.csv")
    summary.to_csv(path, index=False, mode="a" if os.path.exists(path) else "w", header=not os.path.exists(path))
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summary[["op", "variant", "m", "n", "k", "dtype", "max_rel_error", "rough_us", "status"]].to_string())
    bad = summary[summary.status != "ok"]
    print(f"{len(summary) - len(bad)}/{len(summary)} cases correct")
    sys.exit(1 if len(bad) else 0)


if __name__ == "__main__":
    main()
