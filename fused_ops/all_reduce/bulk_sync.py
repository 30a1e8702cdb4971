"""Bulk-synchronous: the GEMM kernel writes this rank's partial into a heap buffer, a barrier, then a kernel sums
every rank's partial into C. The kernels hold the barrier (fused_ops/sync.py): the GEMM's last program announces that
the partial is complete, and the reduce kernel waits for every peer's before its first tile. Partials alternate
between two buffers by call parity: a rank can only start call e+1's GEMM after call e's reduce kernel has seen every
peer's announcement of call e, by which time every peer has finished reading call e-1's buffer."""

import iris

from .. import sync
from ..comm import reduce_kernel
from ..gemm import gemm_kernel
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_all_reduce", "bulk_sync", "bulk-synchronous", "GEMM kernel into a partial buffer, barrier, "
                                                               "reduce kernel reading every rank's partial",
          split_k=True, dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True, partial=((2, p.m, p.n), c.dtype))
    part, slot = ws["partial"], p.m * p.n
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), part, c.stride(0), c.stride(1), 0, ws["flags"], ws["sync"],
                                        slot, *p.rank_args(), SIGNAL="none", ROLE=sync.role(arrive=True), **p.meta(),
                                        **p.trace_args())
    reduce_kernel[p.grid(p.cfg.gemm_sms)](part, c, p.m, p.n, c.stride(0), c.stride(1), ws["flags"], ws["sync"], slot,
                                          *p.rank_args(), WAIT=False, ROLE=sync.role(wait=True, close=True),
                                          **p.tiles(), num_warps=p.cfg.num_warps, **p.trace_args(),
                                          **iris.pdl_launch())
