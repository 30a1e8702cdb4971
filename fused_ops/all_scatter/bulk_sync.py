"""Bulk-synchronous: the GEMM kernel writes this rank's block of C, a device barrier, then a kernel pushes the block
to every peer, and a final barrier (every peer's block has landed)."""

import iris

from ..comm import scatter_kernel
from ..gemm import gemm_kernel
from ..registry import register


@register("gemm_all_scatter", "bulk_sync", "bulk-synchronous", "GEMM kernel (all SMs), barrier, scatter kernel "
                                                                "(all SMs), barrier: no overlap", split_k=True)
def run(p):
    # No barrier first: the GEMM writes only this rank's own block, and peers write theirs only after the barrier
    # below, which every rank reaches after it is done with the previous call's output.
    c, col0, (flags, epoch) = p.c, p.rank * p.n, p.no_sync()
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), col0, flags, epoch, 0,
                                        *p.rank_args(), SIGNAL="none", **p.meta(), **p.trace_args())
    p.ctx.device_barrier()
    scatter_kernel[p.grid(p.cfg.gemm_sms)](c, p.m, p.n, c.stride(0), c.stride(1), col0, flags, epoch,
                                           *p.rank_args(), WAIT=False, **p.tiles(), num_warps=p.cfg.num_warps,
                                           **p.trace_args(), **iris.pdl_launch())
    p.ctx.device_barrier()
