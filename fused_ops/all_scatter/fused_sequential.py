"""Fused sequential ("one-shot"): one persistent kernel; each finished tile is stored straight into every rank's C
from registers. Communication of tile t overlaps the computation of the next tiles on other SMs. The kernel holds
the call's barriers itself (fused_ops/sync.py): its first store into a peer waits for that peer's entry, and it
ends once every rank's stores have landed."""

import triton
import triton.language as tl

import iris
from iris.tracing import GEMM, STORE, record
from .. import sync
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, c_tile, gemm_unit, num_units, operands, unit_tile
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm, stride_cn,                            # output: C M x world*N, on the heap
    SYNC,                                               # the call's synchronization words (sync.py)
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,                 # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    seen = 0
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    for unit in range(tl.program_id(0), num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE), tl.num_programs(0)):
        record(TRACE, GEMM, unit_tile(unit, SPLIT_K, WHOLE)[0], TRACING)
        tile, pid_m, pid_n, acc, done = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk,
                                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                                  TMA, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        record(TRACE, -GEMM, tile, TRACING)
        if done:
            ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, cur_rank * N, BLOCK_M, BLOCK_N,
                                INSIDE=INSIDE)
            val = acc.to(C.dtype.element_ty)
            seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
            record(TRACE, STORE, tile, TRACING)
            for i in range(world_size):  # own copy first, then the peers from the next rank on
                iris.store(ptrs, val, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask)
            record(TRACE, -STORE, tile, TRACING)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=True)


@register("gemm_all_scatter", "fused_sequential", "fused sequential", "persistent GEMM stores each finished tile "
                                                                      "into every rank's C; barriers in the kernel",
          split_k=True, dtypes=WITH_FP8)
def run(p):
    c, ws = p.c, p.workspace(in_kernel=True)
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), ws["sync"], *p.rank_args(),
                                   **p.meta(), **p.trace_args())
