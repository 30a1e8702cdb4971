"""Bulk-synchronous: the GEMM kernel writes this rank's partial into a heap buffer, a device barrier, then a kernel
sums every rank's partial into C. Partials alternate between two buffers by call parity: a rank can only start call
e+1's GEMM after call e's barrier, by which time every peer has finished reading call e-1's buffer."""

import iris

from ..comm import reduce_kernel
from ..gemm import gemm_kernel
from ..registry import register


@register("gemm_all_reduce", "bulk_sync", "bulk-synchronous", "GEMM kernel into a partial buffer, barrier, "
                                                               "reduce kernel reading every rank's partial",
          split_k=True)
def run(p):
    c = p.c
    ws = p.workspace(partial=((2, p.m, p.n), c.dtype))
    part, slot = ws["partial"], p.m * p.n
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), part, c.stride(0), c.stride(1), 0, ws["flags"], ws["epoch"],
                                        slot, *p.rank_args(), SIGNAL="none", **p.meta(), **p.trace_args())
    p.ctx.device_barrier()
    reduce_kernel[p.grid(p.cfg.gemm_sms)](part, c, p.m, p.n, c.stride(0), c.stride(1), ws["flags"], ws["epoch"], slot,
                                          *p.rank_args(), WAIT=False, **p.tiles(), num_warps=p.cfg.num_warps,
                                          **p.trace_args(), **iris.pdl_launch())
