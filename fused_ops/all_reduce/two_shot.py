"""Two-shot: tiles are owned round-robin by rank (see _owner). Each program computes its partial tiles and counts its
arrival at the owner; then, for the tiles it owns, it waits for every rank, sums the partials (reduce-scatter) and
stores the sum into every rank's C (all-gather). The kernel holds the call's barriers (fused_ops/sync.py): owners
wait for the peers' entry before their first store into a peer's C, and the call ends once every owner's stores
have landed. The same program
index handles a tile on every rank, so a program only ever waits on other ranks (the interpreter runs programs one
after another)."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..comm import reduce_tile
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, c_tile, gemm_tile, operands, tile_coords
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                         # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                      # problem size
    stride_am, stride_ak, stride_bk, stride_bn,   # A's and B's strides, in elements
    C, P, stride_cm, stride_cn,                   # output C M x N (heap); partials P (heap); strides
    flags, SYNC,                                  # per-tile arrival counts; call synchronization (sync.py)
    cur_rank, world_size, heap_bases,             # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                            # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),      # programmatic dependent launch (iris.launched_early)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,           # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    programs = tl.num_programs(0)
    for tile in range(tl.program_id(0), num_tiles, programs):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gemm_tile(a_op, b_op, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M,
                        BLOCK_N, BLOCK_K, TMA, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        ptrs, mask = c_tile(P, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N, INSIDE=INSIDE)
        tl.store(ptrs, acc.to(P.dtype.element_ty), mask=mask)
        iris.signal(flags + tile, 1, cur_rank, _owner(tile, programs, world_size), heap_bases, op="add")
    seen = 0
    for tile in range(tl.program_id(0), num_tiles, programs):
        if _owner(tile, programs, world_size) == cur_rank:
            seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
            pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
            iris.wait(flags + tile, world_size * epoch, cur_rank, heap_bases, cmp="ge")
            total = reduce_tile(P, pid_m, pid_n, M, N, stride_cm, stride_cn, cur_rank, world_size, heap_bases,
                                BLOCK_M, BLOCK_N).to(C.dtype.element_ty)
            out, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N)
            for i in range(world_size):
                iris.store(out, total, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=True)


@triton.jit
def _owner(tile, programs, world_size):
    """Round j of program p is owned by rank (p + j) % world: every program owns a share of its own tiles on every
    rank. (`tile % world` would leave idle every program whose index is not the rank's mod world when world divides
    the grid: 3/4 of them on 4 ranks.)"""
    return (tile % programs + tile // programs) % world_size


@register("gemm_all_reduce", "two_shot", "fused sequential", "partial tiles counted at their owner rank, owners "
                                                             "reduce and store into every rank's C; barriers in the "
                                                             "kernel", dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True, partial=((p.m, p.n), c.dtype))
    kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, ws["partial"], c.stride(0), c.stride(1), ws["flags"],
                                   ws["sync"], *p.rank_args(), **p.meta())
