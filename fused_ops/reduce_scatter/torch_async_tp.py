"""Peer baseline: PyTorch's own fused op, torch.ops.symm_mem.fused_matmul_reduce_scatter (async tensor parallelism)."""

import torch
from ..peers import symm_mem_group
from ..registry import register


@register("gemm_reduce_scatter", "torch_async_tp", "baseline", "torch.ops.symm_mem.fused_matmul_reduce_scatter "
                                                               "(PyTorch async-TP)", backends=("cuda",))
def run(p):
    group = symm_mem_group(p.ctx)
    p.c.copy_(torch.ops.symm_mem.fused_matmul_reduce_scatter(p.a, p.b, "sum", 0, group))
