"""Atomic: C is zeroed on every rank (barrier), then the persistent GEMM atomically adds each finished tile into
every rank's C, and a final barrier. No workspace; the sum's order varies, so low-precision results vary by ulps."""

import triton
import triton.language as tl

import iris
from ..gemm import NEXT_IN_AT_START, c_tile, gemm_tile, operands, tile_coords
from ..registry import register


@triton.jit
def kernel(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, C, stride_cm, stride_cn, cur_rank, world_size,
           heap_bases, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
           TMA: tl.constexpr, PDL: tl.constexpr = tl.constexpr(False)):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gemm_tile(a_op, b_op, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M,
                        BLOCK_N, BLOCK_K, TMA)
        ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N)
        val = acc.to(C.dtype.element_ty)
        for i in range(world_size):
            iris.atomic_add(ptrs, val, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask, sem="relaxed",
                            scope="sys")


@register("gemm_all_reduce", "atomic", "fused sequential", "zero C, barrier, persistent GEMM atomically adds each "
                                                           "tile into every rank's C, barrier",
          cpu_dtypes=("float32",), cpu_note="the Triton interpreter's float16 atomic add is not atomic across rank "
                                            "processes")
def run(p):
    c = p.c
    c.zero_()
    p.ctx.device_barrier()  # no peer adds into C before it is zero here
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), *p.rank_args(), **p.meta())
    p.ctx.device_barrier()
