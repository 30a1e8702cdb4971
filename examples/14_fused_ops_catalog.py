"""14 · The catalog: every pattern of 07-13 (and more), tuned and tested, behind one call per operation.
`fused_ops.<op>(ctx, a, b, c, variant=...)` runs a named variant; variant="auto" picks the fastest measured one.

Teaches: `fused_ops.list_ops()`, `fused_ops.list_variants(op, backend, dtype)`, the four operations and their
shardings (gemm_all_scatter, gemm_all_reduce, all_gather_gemm, gemm_reduce_scatter), `fused_ops.plan` (what
"auto" would run), and checking a variant against a float64 reference.

    python examples/14_fused_ops_catalog.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch

import fused_ops
import iris
from fused_ops import reference

SHARDING = {
    "gemm_all_scatter": "A (M x K) on every rank, B split by columns -> all of C (M x N) on every rank",
    "gemm_all_reduce": "A split by columns, B by rows (K split) -> all of C on every rank (partials summed)",
    "all_gather_gemm": "A split by rows, B by columns -> gather(A) @ B_r (M x N/world) on rank r",
    "gemm_reduce_scatter": "A split by columns, B by rows -> rank r's M/world rows of the summed C",
}


def main(ctx, m=32, n=32, k=32, per_op=2):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    shared_gpu = ctx.get_device().type == "cuda" and torch.cuda.device_count() < world
    for op in fused_ops.list_ops():
        ran = []
        for variant in fused_ops.list_variants(op, iris.BACKEND, "float32"):
            if variant.startswith("torch_") or (shared_gpu and fused_ops.get(op, variant).one_gpu_per_rank):
                continue  # baselines (torch + NCCL), and variants that need a GPU per rank where ranks share one
            a, b, ref = reference.make_inputs(op, 1, world, rank, m, n, k, torch.float32, ctx.get_device())
            c = ctx.full(reference.local_shapes(op, m, n, k, world)[2], float("nan"))
            ctx.barrier()  # every C poisoned before peers write into it
            getattr(fused_ops, op)(ctx, a, b, c, variant=variant)
            err = reference.rel_error(c, ref)
            assert err <= reference.TOLERANCE[torch.float32], (op, variant, err)
            ran.append(variant)
            if len(ran) == per_op:
                break
        assert ran, f"no fused variant of {op} runs here"
        if rank == 0:
            print(f"ok: {op:20s} {SHARDING[op]}; checked {', '.join(ran)}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
