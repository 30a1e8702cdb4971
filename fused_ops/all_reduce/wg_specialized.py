"""Workgroup-specialized: one kernel. Programs [0, gemm_sms) compute partial tiles into a heap buffer and count
their arrival on every rank; programs [gemm_sms, +comm_sms) wait for each tile's arrivals from all ranks and sum the
tile into C. No barrier; partials alternate between two buffers by call parity (as in one_shot), and the kernel
counts the calls itself (fused_ops/sync.py)."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..comm import reduce_loop
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, call_slot, gemm_loop
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
    GEMM_SMS: tl.constexpr,                             # programs < GEMM_SMS run the GEMM, the rest communicate
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
    pid = tl.program_id(0)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=False)
    P = call_slot(P, epoch, M * N)
    if pid < GEMM_SMS:
        gemm_loop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, P, stride_cm, stride_cn, 0, flags, epoch,
                  cur_rank, world_size, heap_bases, pid, GEMM_SMS, "arrive", BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TMA,
                  TRACE, TRACING, PARTIALS, COUNTS, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
    else:
        reduce_loop(P, C, M, N, stride_cm, stride_cn, flags, epoch, cur_rank, world_size, heap_bases, pid - GEMM_SMS,
                    tl.num_programs(0) - GEMM_SMS, True, BLOCK_M, BLOCK_N, GROUP_M, TRACE, TRACING)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=False)


@register("gemm_all_reduce", "wg_specialized", "workgroup-specialized", "one kernel: GEMM programs publish partial "
                                                                        "tiles, comm programs reduce them into C",
          split_k=True, dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True, partial=((2, p.m, p.n), c.dtype))
    gemm_sms = p.gemm_programs(p.cfg.gemm_sms)
    kernel[(gemm_sms + p.cfg.comm_sms,)](*p.gemm_args(), c, ws["partial"], c.stride(0), c.stride(1),
                                         ws["flags"], ws["sync"], *p.rank_args(), GEMM_SMS=gemm_sms, **p.meta(),
                                         **p.trace_args())
