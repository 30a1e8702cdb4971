"""Peer baseline: PyTorch's own fused op, torch.ops.symm_mem.fused_matmul_reduce_scatter (async tensor parallelism)."""

import torch
from ..peers import symm_mem_group
from ..fp8 import WITH_FP8, one_kind
from ..registry import register


@register("gemm_reduce_scatter", "torch_async_tp", "baseline", "torch.ops.symm_mem.fused_matmul_reduce_scatter "
                                                               "(PyTorch async-TP)", backends=("cuda",),
          dtypes=WITH_FP8)
def run(p):
    group = symm_mem_group(p.ctx)
    if p.scales:  # FP8: PyTorch's scaled twin (row-wise scales both, or per-tensor both: fp8.one_kind)
        scale_a, scale_b = one_kind(p.a, p.b, p.scale_a, p.scale_b)
        p.c.copy_(torch.ops.symm_mem.fused_scaled_matmul_reduce_scatter(
            p.a, p.b, scale_a, scale_b, "sum", 0, 0, group, [p.m, p.n], out_dtype=p.c.dtype))
    else:
        p.c.copy_(torch.ops.symm_mem.fused_matmul_reduce_scatter(p.a, p.b, "sum", 0, group))
