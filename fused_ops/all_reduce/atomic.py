"""Atomic: C is zeroed on every rank, then the persistent GEMM atomically adds each finished tile into every rank's
C; its first add into a peer waits for that peer's entry (its C is zero by then) and the call ends once every
rank's adds have landed (fused_ops/sync.py). No workspace; the sum's order varies, so low-precision results vary by
ulps. With split-K, each slice of a tile is added on its own (so a low-precision C takes world x split_k roundings)."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, c_tile, gemm_unit, num_units, operands
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm, stride_cn,                            # output: C M x N, zeroed, on the heap
    SYNC,                                               # the call's synchronization words (sync.py)
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,                 # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    seen = 0
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    for unit in range(tl.program_id(0), num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE), tl.num_programs(0)):
        # a split tile's slices are added like tiles: the atomics sum them (no partials, no waiting)
        _, pid_m, pid_n, acc, _ = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                            None, None, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TMA, SPLIT_K, WHOLE,
                                            SUM_SLICES=False, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N, INSIDE=INSIDE)
        val = acc.to(C.dtype.element_ty)
        seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
        for i in range(world_size):
            iris.atomic_add(ptrs, val, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask, sem="relaxed",
                            scope="sys")
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=True)


@register("gemm_all_reduce", "atomic", "fused sequential", "zero C, persistent GEMM atomically adds each tile into "
                                                           "every rank's C; barriers in the kernel",
          cpu_dtypes=("float32",), cpu_note="the Triton interpreter's float16 atomic add is not atomic across rank "
                                            "processes", split_k=True, dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True)
    c.zero_()
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), ws["sync"], *p.rank_args(),
                                   **p.meta(sum_slices=False))
