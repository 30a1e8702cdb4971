"""Bulk-synchronous: dispatch kernel (rows pushed into the owners' per-expert buffers), then, after every rank has
dispatched (a wait at the start of the GEMM kernel), the catalog's grouped GEMM twice (ragged M per expert, device tile
schedule), a kernel returning every output row to its source, and after every rank has returned, the weighted sum."""

from ..registry import register
from . import kernels
from .common import _block_h, combine, dispatch, gemm_meta


@register("moe_ffn", "bulk_sync", "bulk-synchronous", "dispatch kernel, barrier, grouped GEMMs, return kernel, "
                                                     "barrier, weighted sum")
def run(p):
    ws = p.workspace("bulk_sync")
    dispatch(p, ws, fused=False)
    grid = (p.cfg.gemm_sms,)
    args = (ws["counts"], ws["flags"], ws["epoch"], p.capacity)
    rank = p.rank_args()
    unused = (ws["blockready"], ws["nblk"], ws["meta"], ws["retready"], p.n_assign)
    kernels.grouped_gemm_kernel[grid](ws["xbuf"], p.w1, ws["hbuf"], *args, p.f, p.h, p.e_local, *unused, *rank,
                                      MODE="dispatched", ACT=p.act, **gemm_meta(p))
    kernels.grouped_gemm_kernel[grid](ws["hbuf"], p.w2, ws["obuf"], *args, p.h, p.f, p.e_local, *unused, *rank,
                                      MODE="plain", ACT="none", **gemm_meta(p))
    meta = gemm_meta(p)
    kernels.return_kernel[grid](ws["obuf"], ws["meta"], ws["ret"], ws["counts"], ws["done"], ws["flags"], p.capacity,
                                p.h, p.n_assign, p.e_local, *rank, BLOCK_M=meta["BLOCK_M"], BLOCK_H=_block_h(p),
                                EL_P2=meta["EL_P2"])
    combine(p, ws, fused=False)
