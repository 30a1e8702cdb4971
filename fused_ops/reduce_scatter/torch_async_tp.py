"""Peer baseline: PyTorch's own fused op, torch.ops.symm_mem.fused_matmul_reduce_scatter (async tensor parallelism)."""

import torch
import torch.distributed as dist

from ..registry import register


@register("gemm_reduce_scatter", "torch_async_tp", "baseline", "torch.ops.symm_mem.fused_matmul_reduce_scatter "
                                                               "(PyTorch async-TP)", backends=("cuda",))
def run(p):
    import torch.distributed._symmetric_memory as symm_mem

    group = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):
        symm_mem.enable_symm_mem_for_group(group)
    p.c.copy_(torch.ops.symm_mem.fused_matmul_reduce_scatter(p.a, p.b, "sum", 0, group))
