"""Baseline: torch.matmul into C, then the library all-reduce in place (NCCL on GPUs, gloo on the CPU)."""

import torch.distributed as dist

from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_all_reduce", "torch_nccl", "baseline", "torch.matmul, then all_reduce of C in place", dtypes=WITH_FP8)
def run(p):
    p.matmul(p.a, p.b, out=p.c)
    dist.all_reduce(p.c, group=p.ctx.group)
