"""Bulk-synchronous: a barrier (every rank's shard is ready), a copy kernel gathers every shard of A into a local heap
buffer, then the GEMM kernel runs on the gathered A, and a barrier (the peers are done reading this rank's A). The
kernels hold the barriers (fused_ops/sync.py): the gather kernel announces the rank's entry as it starts and waits
for the peers' before its first remote load; the GEMM ends with the exit barrier."""

import triton
import triton.language as tl

import iris
from .. import sync
from ..gemm import gemm_kernel
from ..fp8 import WITH_FP8
from ..registry import register


@triton.jit
def gather_kernel(
    A, G,                                          # own shard M_LOCAL x K; gathered A world*M_LOCAL x K (heap)
    M_LOCAL, K,                                    # shard size
    stride_am, stride_gm,                          # row strides
    KPARTS,                                        # each chunk's K split into KPARTS jobs
    SYNC,                                          # the call's synchronization words (sync.py)
    cur_rank, world_size, heap_bases,              # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, COPY_K: tl.constexpr,   # rows per chunk, columns per copy
    PDL: tl.constexpr = tl.constexpr(False),       # programmatic dependent launch (iris.launched_early)
    ROLE: tl.constexpr = tl.constexpr(0),          # its part in a call of several kernels (sync.start)
):
    """G[r * M_LOCAL + i, :] = rank r's A[i, :] for every rank r (A and G row-major, unit column stride). A job is a
    BLOCK_M-row chunk of one rank's A over 1/KPARTS of K: a remote load costs a round trip, so a few rows (small M)
    are split along K to keep every program busy instead of one program walking all of K."""
    iris.launched_early(PDL)
    epoch = sync.start(SYNC, ROLE, cur_rank, world_size, heap_bases)
    seen = 0
    chunks = tl.cdiv(M_LOCAL, BLOCK_M)
    span = tl.cdiv(tl.cdiv(K, KPARTS), COPY_K) * COPY_K
    for job in range(tl.program_id(0), world_size * chunks * KPARTS, tl.num_programs(0)):
        src = (cur_rank + job // (chunks * KPARTS)) % world_size
        if (sync.WAIT & ROLE) != 0:
            if src != cur_rank:
                seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
        rm = (job // KPARTS % chunks) * BLOCK_M + tl.arange(0, BLOCK_M)
        k_lo = (job % KPARTS) * span
        for k0 in range(k_lo, tl.minimum(k_lo + span, K), COPY_K):
            rk = k0 + tl.arange(0, COPY_K)
            mask = (rm[:, None] < M_LOCAL) & (rk[None, :] < K)
            v = iris.load(A + rm[:, None] * stride_am + rk[None, :], cur_rank, src, heap_bases, mask=mask)
            tl.store(G + (src * M_LOCAL + rm)[:, None] * stride_gm + rk[None, :], v, mask=mask)
    sync.finish(SYNC, epoch, ROLE, cur_rank, world_size, heap_bases)


def copy_k(dtype_size):
    """Columns per copy step: 16 KiB rows of registers per BLOCK_M rows at most."""
    return 256 if dtype_size <= 2 else 128


def k_parts(jobs, programs, k, step):
    """How many parts to split K into so that `jobs` chunks keep `programs` programs busy (1 when they already do)."""
    return max(1, min(triton.cdiv(programs, jobs), triton.cdiv(k, step)))


@register("all_gather_gemm", "bulk_sync", "bulk-synchronous", "barrier, gather kernel (all SMs), GEMM kernel on the "
                                                              "gathered A: no overlap", split_k=True, dtypes=WITH_FP8)
def run(p):
    a, g, ws = p.staged_a(), p.gathered_buffer(), p.workspace(in_kernel=True)
    programs, step = p.cfg.gemm_sms, copy_k(a.element_size())
    kparts = k_parts(p.world * triton.cdiv(p.m_local, p.cfg.block_m), programs, p.k, step)
    gather_kernel[(programs,)](a, g, p.m_local, p.k, a.stride(0), g.stride(0), kparts, ws["sync"], *p.rank_args(),
                               BLOCK_M=p.cfg.block_m, COPY_K=step, ROLE=sync.role(enter=True, wait=True), num_warps=8,
                               **iris.pdl_launch())
    c = p.c
    # the exit barrier: peers have finished reading this rank's A before it may change
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.operands(g, p.b), p.m, p.n, p.k, g.stride(0), g.stride(1), p.b.stride(0),
                                        p.b.stride(1), c, c.stride(0), c.stride(1), 0, ws["flags"], ws["sync"], 0,
                                        *p.rank_args(), SIGNAL="none", ROLE=sync.role(exit=True, close=True),
                                        **p.meta(), **p.trace_args())
