"""Baseline: torch.matmul, then the library all-gather of the column blocks (NCCL on GPUs, gloo on the CPU)."""

import torch

from iris.distributed import all_gather_single

from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_all_scatter", "torch_nccl", "baseline", "torch.matmul, then all_gather_into_tensor of the column "
                                                          "blocks and one re-layout copy into C", dtypes=WITH_FP8)
def run(p):
    local = p.matmul(p.a, p.b)
    gathered = torch.empty((p.world * p.m, p.n), dtype=local.dtype, device=local.device)
    all_gather_single(gathered, local, group=p.ctx.group)
    p.c.copy_(gathered.view(p.world, p.m, p.n).permute(1, 0, 2).reshape(p.m, p.world * p.n))
