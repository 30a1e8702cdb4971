"""Bulk-synchronous: the GEMM kernel writes this rank's partial (M x N) into a heap buffer, a barrier, then a kernel
sums every rank's partial of this rank's rows into C. The barrier is in the kernels and partials alternate by call
parity, as in all-reduce bulk_sync."""

import iris

from .. import sync
from ..comm import reduce_kernel
from ..gemm import gemm_kernel
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_reduce_scatter", "bulk_sync", "bulk-synchronous", "GEMM kernel into a partial buffer, barrier, "
                                                                  "reduce kernel over this rank's rows", split_k=True,
          dtypes=WITH_FP8)
def run(p):
    c = p.c
    ws = p.workspace(in_kernel=True, partial=((2, p.m, p.n), c.dtype))
    part, slot = ws["partial"][0], p.m * p.n
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), part, part.stride(0), part.stride(1), 0, ws["flags"],
                                        ws["sync"], slot, *p.rank_args(), SIGNAL="none", ROLE=sync.role(arrive=True),
                                        **p.meta(), **p.trace_args())
    mine = part[p.rank * p.m_local:(p.rank + 1) * p.m_local]
    reduce_kernel[p.grid(p.cfg.gemm_sms)](mine, c, p.m_local, p.n, c.stride(0), c.stride(1), ws["flags"],
                                          ws["sync"], slot, *p.rank_args(), WAIT=False,
                                          ROLE=sync.role(wait=True, close=True), **p.tiles(),
                                          num_warps=p.cfg.num_warps, **p.trace_args(), **iris.pdl_launch())
