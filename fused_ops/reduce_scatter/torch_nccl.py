"""Baseline: torch.matmul of the K-shard, then reduce_scatter_tensor over rows (NCCL on GPUs; gloo, which has no
reduce-scatter, all-reduces and keeps its rows)."""

import torch.distributed as dist

from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_reduce_scatter", "torch_nccl", "baseline", "torch.matmul, then reduce_scatter_tensor of the rows",
          dtypes=WITH_FP8)
def run(p):
    partial = p.matmul(p.a, p.b)
    if p.ctx.backend == "cuda":
        dist.reduce_scatter_tensor(p.c, partial, group=p.ctx.group)
    else:
        dist.all_reduce(partial, group=p.ctx.group)
        p.c.copy_(partial[p.rank * p.m_local:(p.rank + 1) * p.m_local])
