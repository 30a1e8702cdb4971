"""Peer baseline: PyTorch's own fused op, torch.ops.symm_mem.fused_all_gather_matmul (async tensor parallelism)."""

import torch
from ..peers import symm_mem_group
from ..registry import register


@register("all_gather_gemm", "torch_async_tp", "baseline", "torch.ops.symm_mem.fused_all_gather_matmul (PyTorch "
                                                           "async-TP)", backends=("cuda",))
def run(p):
    group = symm_mem_group(p.ctx)
    gathered, (out,) = torch.ops.symm_mem.fused_all_gather_matmul(p.a, [p.b], 0, group)
    p.c.copy_(out)
    if p.a_gathered is not None:
        p.a_gathered.copy_(gathered)
