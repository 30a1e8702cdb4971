"""One-shot: each program publishes its partial tile in a heap buffer, counts its arrival on every rank, waits until
all ranks have arrived at that tile, then sums the tile from every rank into its own C. No barrier: arrival counters
grow by world per call (never reset, never stale), and partials alternate between two buffers by call parity: before
a rank overwrites a buffer in call e, it has seen every peer arrive in call e-1, so every peer has finished call e-2,
the last reader of that buffer. The kernel counts the calls itself (fused_ops/sync.py)."""

import triton
import triton.language as tl

import iris
from iris.tracing import GEMM, REDUCE, WAIT, record
from .. import sync
from ..comm import reduce_tile
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, c_tile, call_slot, gemm_unit, num_units, operands, unit_tile
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, P, stride_cm, stride_cn,                         # output C M x N; partials P (2 slots, heap); strides
    flags, SYNC,                                        # per-tile arrival counts; call synchronization (sync.py)
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
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=False)
    P = call_slot(P, epoch, M * N)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    for unit in range(tl.program_id(0), num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE), tl.num_programs(0)):
        record(TRACE, GEMM, unit_tile(unit, SPLIT_K, WHOLE)[0], TRACING)
        tile, pid_m, pid_n, acc, done = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk,
                                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                                  TMA, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        record(TRACE, -GEMM, tile, TRACING)
        if done:  # the tile is whole (with split-K: on the program that finished its last slice)
            ptrs, mask = c_tile(P, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N, INSIDE=INSIDE)
            tl.store(ptrs, acc.to(P.dtype.element_ty), mask=mask)
            for i in range(world_size):
                iris.signal(flags + tile, 1, cur_rank, (cur_rank + i) % world_size, heap_bases, op="add")
            record(TRACE, WAIT, tile, TRACING)
            iris.wait(flags + tile, world_size * epoch, cur_rank, heap_bases, cmp="ge")
            record(TRACE, -WAIT, tile, TRACING)
            record(TRACE, REDUCE, tile, TRACING)
            total = reduce_tile(P, pid_m, pid_n, M, N, stride_cm, stride_cn, cur_rank, world_size, heap_bases,
                                BLOCK_M, BLOCK_N)
            out, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N)  # (the tile's own)
            tl.store(out, total.to(C.dtype.element_ty), mask=mask)
            record(TRACE, -REDUCE, tile, TRACING)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=False)


@register("gemm_all_reduce", "one_shot", "fused sequential", "publish each partial tile, count arrivals, every rank "
                                                             "sums the tile from all ranks; no barrier",
          split_k=True, dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True, partial=((2, p.m, p.n), c.dtype))
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, ws["partial"], c.stride(0), c.stride(1),
                                   ws["flags"], ws["sync"], *p.rank_args(), **p.meta(),
                                   **p.trace_args())
