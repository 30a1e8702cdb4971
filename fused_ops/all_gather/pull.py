"""Pull: the persistent GEMM reads A's rows straight from the rank that owns them (per-row translated pointers), its
own rank's rows first so the first tiles need no link traffic. No copy of A, no flags. The kernel holds the call's
barriers (fused_ops/sync.py): a program's first tile with a peer's rows waits for the peers' entry (their shards
are ready), and the call ends once every rank has finished reading (nobody still reads a shard that may change)."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..gemm import NEXT_IN_AT_START, c_tile, gemm_tile, operands, tile_coords
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def kernel(
    A, B,                                         # A: every rank's shard M_LOCAL x K (heap); B K x N
    M, N, K,                                      # problem size
    stride_am, stride_ak, stride_bk, stride_bn,   # A's and B's strides, in elements
    C, stride_cm, stride_cn,                      # output: C M x N
    M_LOCAL,                                      # rows per shard
    SYNC,                                         # the call's synchronization words (sync.py)
    cur_rank, world_size, heap_bases,             # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    PDL: tl.constexpr = tl.constexpr(False),      # programmatic dependent launch (iris.launched_early)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    _, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, False)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    first = (cur_rank * M_LOCAL) // BLOCK_M  # this rank's rows come first
    elem: tl.constexpr = A.dtype.element_ty.primitive_bitwidth // 8
    my_base = tl.load(heap_bases + cur_rank)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    seen = 0
    for tile in range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        pid_m = (pid_m + first) % num_pid_m
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        owner = tl.minimum(rm // M_LOCAL, world_size - 1)
        delta = (tl.load(heap_bases + owner) - my_base) // elem
        if tl.max(tl.abs(owner - cur_rank), 0) > 0:  # a peer's rows
            seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
        rows = A + delta + (rm - owner * M_LOCAL) * stride_am
        acc = gemm_tile(rows, b_op, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M,
                        BLOCK_N, BLOCK_K, False, True, SA=SA, SB=SB, SCALES=SCALES)
        ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N)
        tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=True)


@register("all_gather_gemm", "pull", "fused sequential", "persistent GEMM loads remote A rows directly, own rows "
                                                         "first; barriers in the kernel", dtypes=WITH_FP8)
def run(p):
    if p.a_gathered is not None:
        raise ValueError("all_gather_gemm/pull never materializes the gathered A; ask push, bulk_sync or torch_nccl "
                         "for a_gathered")
    a, c, ws = p.staged_a(), p.c, p.workspace(in_kernel=True)
    kernel[p.grid(p.cfg.gemm_sms)](a, p.b, p.m, p.n, p.k, a.stride(0), a.stride(1), p.b.stride(0), p.b.stride(1), c,
                                   c.stride(0), c.stride(1), p.m_local, ws["sync"], *p.rank_args(),
                                   BLOCK_M=p.cfg.block_m, BLOCK_N=p.cfg.block_n, BLOCK_K=p.cfg.block_k,
                                   GROUP_M=p.cfg.group_m, num_warps=p.cfg.num_warps, num_stages=p.cfg.num_stages,
                                   **iris.pdl_launch(), **p.scale_args())
