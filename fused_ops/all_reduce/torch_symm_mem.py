"""Peer baseline: torch.matmul into a PyTorch SymmetricMemory buffer, its two-shot all-reduce (the fastest NVIDIA
peer for this op, ../shared/notes/peer-baselines.md), one copy into C. Never the multimem/multicast variants."""

import torch
from ..peers import symm_mem_group
from ..registry import register

_buffers = {}


def _symmetric_buffer(ctx, shape, dtype, device):
    import torch.distributed._symmetric_memory as symm_mem

    key = (tuple(shape), dtype, device, ctx.handle)  # per context: a buffer is rendezvoused over one group
    if key not in _buffers:
        group = symm_mem_group(ctx)
        buf = symm_mem.empty(*shape, dtype=dtype, device=device)
        symm_mem.rendezvous(buf, group)
        _buffers[key] = (buf, group)
    return _buffers[key]


@register("gemm_all_reduce", "torch_symm_mem", "baseline", "torch.matmul into a SymmetricMemory buffer, "
                                                           "two_shot_all_reduce_, copy into C", backends=("cuda",),
          dtypes=("bfloat16", "float32", "float8_e4m3fn"))  # PyTorch has no float16 kernel for it
def run(p):
    buf, group = _symmetric_buffer(p.ctx, (p.m, p.n), p.c.dtype, p.c.device)
    p.matmul(p.a, p.b, out=buf)
    torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", group)
    p.c.copy_(buf)
