"""Bulk-synchronous: the GEMM kernel writes this rank's block of C, then a kernel pushes the block to every peer,
and a final barrier (every peer's block has landed). The kernels hold the barriers (fused_ops/sync.py): the GEMM
announces the rank's entry as it starts (it is done with the previous call's output), the scatter kernel waits for
every peer's before its first push and ends with the exit barrier."""

import iris

from .. import sync
from ..comm import scatter_kernel
from ..gemm import gemm_kernel
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_all_scatter", "bulk_sync", "bulk-synchronous", "GEMM kernel (all SMs), barrier, scatter kernel "
                                                                "(all SMs), barrier: no overlap", split_k=True,
          dtypes=WITH_FP8)
def run(p):
    c, col0, ws = p.c, p.rank * p.n, p.workspace(in_kernel=True)
    gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), col0, ws["flags"], ws["sync"], 0,
                                        *p.rank_args(), SIGNAL="none", ROLE=sync.role(enter=True), **p.meta(),
                                        **p.trace_args())
    scatter_kernel[p.grid(p.cfg.gemm_sms)](c, p.m, p.n, c.stride(0), c.stride(1), col0, ws["flags"], ws["sync"],
                                           *p.rank_args(), WAIT=False, ROLE=sync.role(wait=True, exit=True, close=True),
                                           **p.tiles(), num_warps=p.cfg.num_warps, **p.trace_args(),
                                           **iris.pdl_launch())
