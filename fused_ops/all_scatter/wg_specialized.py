"""Workgroup-specialized: one kernel. Programs [0, gemm_sms) compute tiles and release a per-tile flag (the call's
epoch); programs [gemm_sms, gemm_sms + comm_sms) poll the flags in tile order and push finished tiles to every peer.
Communication programs only wait on lower-numbered programs, which also keeps the interpreter (serial) correct.
The kernel holds the call's barriers and counter itself (fused_ops/sync.py)."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..comm import scatter_loop
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, gemm_loop
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm, stride_cn,                            # output: C M x world*N, on the heap
    flags, SYNC,                                        # per-tile flags; call synchronization (sync.py)
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
    col0 = cur_rank * N
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    if pid < GEMM_SMS:
        gemm_loop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, C, stride_cm, stride_cn, col0, flags,
                  epoch, cur_rank, world_size, heap_bases, pid, GEMM_SMS, "local", BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                  TMA, TRACE, TRACING, PARTIALS, COUNTS, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES,
                  INSIDE=INSIDE)
    else:
        scatter_loop(C, M, N, stride_cm, stride_cn, col0, flags, epoch, cur_rank, world_size, heap_bases,
                     pid - GEMM_SMS, tl.num_programs(0) - GEMM_SMS, True, BLOCK_M, BLOCK_N, GROUP_M, TRACE,
                     TRACING, SYNC)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=True)


@register("gemm_all_scatter", "wg_specialized", "workgroup-specialized", "one kernel: GEMM programs release "
                                                                         "per-tile flags, comm programs push tiles",
          split_k=True, dtypes=WITH_FP8)
def run(p):
    c, ws = p.c, p.workspace(in_kernel=True)
    gemm_sms = p.gemm_programs(p.cfg.gemm_sms)
    kernel[(gemm_sms + p.cfg.comm_sms,)](*p.gemm_args(), c, c.stride(0), c.stride(1), ws["flags"], ws["sync"],
                                         *p.rank_args(), GEMM_SMS=gemm_sms, **p.meta(), **p.trace_args())
