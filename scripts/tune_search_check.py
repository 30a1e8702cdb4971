"""One GPU: fused_ops.tune(configs="search") on the shapes where the tile and split choice matters most, then an
`auto` call that must run the winner (fused_ops.plan) and match torch.matmul. Prints each (variant, config) time.

    IRIS_BACKEND=cuda python scripts/tune_search_check.py [--shapes 4096x2304x36864 ...]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402

import fused_ops  # noqa: E402
from fused_ops import auto, reference  # noqa: E402


def run(ctx, shapes):
    op, out = "gemm_all_scatter", []
    for m, n, k in shapes:
        a, b, ref = reference.make_inputs(op, 1, 1, 0, m, n, k, torch.bfloat16, ctx.get_device())
        c = ctx.zeros(m, n, dtype=torch.bfloat16)
        times = auto.tune(ctx, op, a, b, c, variants=["fused_sequential", "bulk_sync"], iters=5, configs="search")
        name, cfg = fused_ops.plan(ctx, op, a, b, c)
        call = lambda config: fused_ops.gemm_all_scatter(ctx, a, b, c, variant=name, config=config)  # noqa: E731
        tuned_us = auto._time_calls(ctx, lambda: call(cfg), 10)
        default_us = auto._time_calls(ctx, lambda: call(None), 10)
        defaults = fused_ops.plan(ctx, op, a, b, c, name)[1].describe()
        c.fill_(float("nan"))
        fused_ops.gemm_all_scatter(ctx, a, b, c)
        err = reference.rel_error(c, ref)
        out.append(f"{m}x{n}x{k}: {({v: round(t, 1) for v, t in times.items()})} -> auto runs {name}: "
                   f"{cfg.describe()}: {tuned_us:.1f} us, its defaults ({defaults}) {default_us:.1f} us; relative "
                   f"error {err:.1e} ({'ok' if err < 2e-2 else 'WRONG'})")
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", default=["4096x2304x36864", "8192x4096x2048"])
    args = p.parse_args()
    shapes = [tuple(map(int, s.split("x"))) for s in args.shapes]
    for line in iris.spawn(run, 1, shapes, heap_size=4 << 30)[0]:
        print(line)
