"""Peer baseline: PyTorch's own fused op, torch.ops.symm_mem.fused_all_gather_matmul (async tensor parallelism), and
for FP8 its scaled twin, fused_all_gather_scaled_matmul."""

import torch
from ..fp8 import WITH_FP8
from ..peers import symm_mem_group
from ..registry import register

FP8_ROWS = 16  # rows per rank that PyTorch's FP8 op runs (18 failed in cuBLASLt on 2 H100s, torch 2.11)


def refuses(m, n, k, world, dtype, out_dtype):
    """PyTorch's FP8 op writes bfloat16 only (row-wise scales), and multiplies each rank's rows with their slice of
    the row-wise scales, which cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED) unless the rows per rank are a
    multiple of FP8_ROWS."""
    if not dtype.startswith("float8"):
        return ""
    if out_dtype not in (None, "bfloat16"):
        return (f"all_gather_gemm/torch_async_tp: with FP8 operands PyTorch's fused op writes bfloat16 only (row-wise "
                f"scales); c is {out_dtype}")
    if (m // world) % FP8_ROWS:
        return (f"all_gather_gemm/torch_async_tp: with FP8 operands PyTorch's fused op multiplies each rank's rows "
                f"with their slice of the row-wise scales, which cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED) unless "
                f"the rows per rank are a multiple of {FP8_ROWS}; a has {m // world} rows here (another variant "
                f"takes them)")
    return ""


@register("all_gather_gemm", "torch_async_tp", "baseline", "torch.ops.symm_mem.fused_all_gather_matmul (PyTorch "
                                                           "async-TP)", backends=("cuda",), dtypes=WITH_FP8,
          refuses=refuses)
def run(p):
    group = symm_mem_group(p.ctx)
    if p.scales:
        # Row-wise scales both: torch gathers a row-wise A_scale with A's rows, while a per-tensor one would be taken
        # as every rank's (each rank may quantize its shard with a scale of its own here). bfloat16 c only (refuses).
        scale_a = p.scale_a.reshape(-1, 1).expand(p.m_local, 1).contiguous()
        scale_b = p.scale_b.reshape(1, -1).expand(1, p.n).contiguous()
        gathered, (out,) = torch.ops.symm_mem.fused_all_gather_scaled_matmul(
            p.a, [p.b], scale_a, [scale_b], 0, group, [None], [None], [torch.bfloat16], [False])
    else:
        gathered, (out,) = torch.ops.symm_mem.fused_all_gather_matmul(p.a, [p.b], 0, group)
    p.c.copy_(out)
    if p.a_gathered is not None:
        p.a_gathered.copy_(gathered)
