"""Fused: one persistent kernel. Each program computes its partial tiles and pushes each to the rank owning its rows
(counting an arrival there); then, for the tiles among its own whose rows this rank owns, it waits for every rank
and sums the inbox into C. The same program index computes a tile on every rank, so a program only waits on other
ranks. No barrier; the kernel counts the calls itself (fused_ops/sync.py)."""

import triton
import triton.language as tl

import iris
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, call_slot, gemm_unit, num_units, operands, tile_coords, unit_tile
from ..fp8 import WITH_FP8
from ..registry import register
from .. import sync
from .owner import inbox, owns, push_partial, reduce_owned


@triton.jit
def kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm,                                       # output: this rank's M_LOCAL x N rows
    INBOX, flags, SYNC,                                 # partials inbox (heap), per-tile arrival counts, sync.py words
    M_LOCAL,                                            # rows per rank
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,                 # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=False)
    INBOX = call_slot(INBOX, epoch, world_size * M_LOCAL * N)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    units = num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE)
    for unit in range(tl.program_id(0), units, tl.num_programs(0)):
        tile, pid_m, pid_n, acc, done = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk,
                                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                                  TMA, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        if done:
            push_partial(acc, INBOX, pid_m, pid_n, M, N, M_LOCAL, flags, tile, cur_rank, world_size, heap_bases,
                         BLOCK_M, BLOCK_N, INSIDE)
    # Each tile is summed by the program of its last unit, the same one on every rank: the interpreter runs a rank's
    # programs one after another, and that program is the last of them to contribute to the tile.
    for unit in range(tl.program_id(0), units, tl.num_programs(0)):
        tile, _, last = unit_tile(unit, SPLIT_K, WHOLE)
        pid_m, pid_n = tile_coords(tile, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
        if last & owns(pid_m, M, M_LOCAL, cur_rank, BLOCK_M):
            reduce_owned(INBOX, C, stride_cm, pid_m, pid_n, M, N, M_LOCAL, flags, tile, epoch, cur_rank, world_size,
                         heap_bases, BLOCK_M, BLOCK_N)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=False)


@register("gemm_reduce_scatter", "fused", "fused sequential", "each partial tile pushed to its owner rank, owners "
                                                              "sum what arrived; no barrier", split_k=True,
          dtypes=WITH_FP8)
def run(p):
    ws, box = inbox(p)
    c = p.c
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), box, ws["flags"], ws["sync"], p.m_local,
                                   *p.rank_args(), **p.meta())
