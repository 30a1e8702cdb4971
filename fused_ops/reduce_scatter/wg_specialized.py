"""Workgroup-specialized: one kernel. GEMM programs [0, gemm_sms) push partial tiles to their owners; communication
programs [gemm_sms, +comm_sms) walk the tiles this rank owns, wait for every rank's arrival and sum the inbox into
C. No barrier (inboxes alternate by call parity, as in fused; the kernel counts the calls itself)."""

import triton
import triton.language as tl

import iris
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, call_slot, gemm_tile, operands, tile_coords
from ..fp8 import WITH_FP8
from ..registry import register
from .. import sync
from .owner import inbox, owns, push_partial, reduce_owned


@triton.jit
def kernel(
    A, B,                                         # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                      # problem size
    stride_am, stride_ak, stride_bk, stride_bn,   # A's and B's strides, in elements
    C, stride_cm,                                 # output: this rank's M_LOCAL x N rows
    INBOX, flags, SYNC,                           # partials inbox (heap), per-tile arrival counts, sync.py words
    M_LOCAL,                                      # rows per rank
    cur_rank, world_size, heap_bases,             # this rank, the ranks, the symmetric heap
    GEMM_SMS: tl.constexpr,                       # programs < GEMM_SMS run the GEMM, the rest communicate
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                            # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),      # programmatic dependent launch (iris.launched_early)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,           # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    pid = tl.program_id(0)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=False)
    INBOX = call_slot(INBOX, epoch, world_size * M_LOCAL * N)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    if pid < GEMM_SMS:
        a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
        for tile in range(pid, num_pid_m * num_pid_n, GEMM_SMS):
            pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
            acc = gemm_tile(a_op, b_op, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M,
                            BLOCK_N, BLOCK_K, TMA, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
            push_partial(acc, INBOX, pid_m, pid_n, M, N, M_LOCAL, flags, tile, cur_rank, world_size, heap_bases,
                         BLOCK_M, BLOCK_N, INSIDE)
    else:
        for tile in range(pid - GEMM_SMS, num_pid_m * num_pid_n, tl.num_programs(0) - GEMM_SMS):
            pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
            if owns(pid_m, M, M_LOCAL, cur_rank, BLOCK_M):
                reduce_owned(INBOX, C, stride_cm, pid_m, pid_n, M, N, M_LOCAL, flags, tile, epoch, cur_rank,
                             world_size, heap_bases, BLOCK_M, BLOCK_N)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=False)


@register("gemm_reduce_scatter", "wg_specialized", "workgroup-specialized", "one kernel: GEMM programs push partial "
                                                                            "tiles to owners, comm programs reduce",
          dtypes=WITH_FP8)
def run(p):
    ws, box = inbox(p)
    c = p.c
    gemm_sms = p.gemm_programs(p.cfg.gemm_sms)
    kernel[(gemm_sms + p.cfg.comm_sms,)](*p.gemm_args(), c, c.stride(0), box, ws["flags"], ws["sync"], p.m_local,
                                         *p.rank_args(), GEMM_SMS=gemm_sms, **p.meta())
