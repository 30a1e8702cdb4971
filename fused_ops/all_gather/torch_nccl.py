"""Baseline: all_gather_into_tensor of the row shards of A (NCCL on GPUs, gloo on the CPU), then torch.matmul."""

import torch

from iris.distributed import all_gather_single
from ..registry import register


@register("all_gather_gemm", "torch_nccl", "baseline", "all_gather_into_tensor of A's row shards, then torch.matmul")
def run(p):
    gathered = p.a_gathered if p.a_gathered is not None else torch.empty(
        (p.m, p.k), dtype=p.a.dtype, device=p.a.device)
    all_gather_single(gathered, p.a, group=p.ctx.group)
    torch.matmul(gathered, p.b, out=p.c)
