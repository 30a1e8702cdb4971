"""Baseline: all_gather_into_tensor of the row shards of A (NCCL on GPUs, gloo on the CPU), then torch.matmul."""

import torch

from iris.distributed import all_gather_single
from ..fp8 import WITH_FP8
from ..registry import register


@register("all_gather_gemm", "torch_nccl", "baseline", "all_gather_into_tensor of A's row shards, then torch.matmul",
          dtypes=WITH_FP8)
def run(p):
    gathered = p.a_gathered if p.a_gathered is not None else torch.empty(
        (p.m, p.k), dtype=p.a.dtype, device=p.a.device)
    if p.scales:  # FP8: the bytes of A (e4m3 as uint8, which NCCL and gloo move), then its row scales
        all_gather_single(gathered.view(torch.uint8), p.a.view(torch.uint8), group=p.ctx.group)
        rows = torch.empty((p.m, 1), dtype=torch.float32, device=p.a.device)
        all_gather_single(rows, p.scale_a.reshape(-1, 1).expand(p.m_local, 1).contiguous(), group=p.ctx.group)
        p.matmul(gathered, p.b, out=p.c, scale_a=rows)
    else:
        all_gather_single(gathered, p.a, group=p.ctx.group)
        torch.matmul(gathered, p.b, out=p.c)
