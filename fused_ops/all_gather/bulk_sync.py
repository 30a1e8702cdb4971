"""Bulk-synchronous: a barrier (every rank's shard is ready), a copy kernel gathers every shard of A into a local heap
buffer, then the GEMM kernel runs on the gathered A."""

import triton
import triton.language as tl

import iris
from ..gemm import gemm_kernel
from ..registry import register


@triton.jit
def gather_kernel(A, G, M_LOCAL, K, stride_am, stride_gm, cur_rank, world_size, heap_bases, BLOCK_M: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """G[r * M_LOCAL + i, :] = rank r's A[i, :] for every rank r (A and G row-major, unit column stride)."""
    chunks = tl.cdiv(M_LOCAL, BLOCK_M)
    for job in range(tl.program_id(0), world_size * chunks, tl.num_programs(0)):
        src = (cur_rank + job // chunks) % world_size
        rm = (job % chunks) * BLOCK_M + tl.arange(0, BLOCK_M)
        for k0 in range(0, K, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            mask = (rm[:, None] < M_LOCAL) & (rk[None, :] < K)
            v = iris.load(A + rm[:, None] * stride_am + rk[None, :], cur_rank, src, heap_bases, mask=mask)
            tl.store(G + (src * M_LOCAL + rm)[:, None] * stride_gm + rk[None, :], v, mask=mask)


@register("all_gather_gemm", "bulk_sync", "bulk-synchronous", "barrier, gather kernel (all SMs), GEMM kernel on the "
                                                              "gathered A: no overlap")
def run(p):
    a, g = p.staged_a(), p.gathered_buffer()
    p.ctx.device_barrier()
    gather_kernel[p.grid(p.cfg.gemm_sms)](a, g, p.m_local, p.k, a.stride(0), g.stride(0), *p.rank_args(),
                                          BLOCK_M=p.cfg.block_m, BLOCK_K=p.cfg.block_k, num_warps=4)
    c = p.c
    gemm_kernel[p.grid(p.cfg.gemm_sms)](g, p.b, p.m, p.n, p.k, g.stride(0), g.stride(1), p.b.stride(0),
                                        p.b.stride(1), c, c.stride(0), c.stride(1), 0, *p.no_sync(), 0,
                                        *p.rank_args(), SIGNAL="none", **p.meta(), **p.trace_args())
    p.ctx.device_barrier()  # peers have finished reading this rank's A before it may change
