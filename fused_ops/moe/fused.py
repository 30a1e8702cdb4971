"""Fused: the dispatch kernel pushes rows straight into the owners' per-expert buffers and counts them per row block
there; the persistent grouped GEMM takes each expert's tiles as their row block's rows land (no barrier: a tile waits
only for its own rows) and computes act(X W1); the second grouped GEMM's epilogue stores each output tile straight
into the source ranks' buffers, counting the tiles landed per row there; each source sums a token as soon as its k
rows are complete. No host synchronization, no barrier; the only handshake is the entry one (no rank writes into a
peer still in the previous call). Both GEMMs spread (expert, row block, column block) tiles over every SM, so few
tokens (decode) still use the whole GPU."""

from ..registry import register
from . import kernels
from .common import combine, dispatch, gemm_meta


@register("moe_ffn", "fused", "fused sequential", "rows pushed into owners' expert buffers with per-block arrival "
                                                  "counts; grouped GEMM tiles start as their rows land, the second "
                                                  "GEMM's epilogue pushes results back; no barrier")
def run(p):
    ws = p.workspace("fused")
    dispatch(p, ws, fused=True)
    grid = (p.cfg.gemm_sms,)
    args = (ws["counts"], ws["flags"], ws["epoch"], p.capacity)
    tail = (ws["blockready"], ws["nblk"], ws["meta"], ws["retready"], p.n_assign, *p.rank_args())
    kernels.grouped_gemm_kernel[grid](ws["xbuf"], p.w1, ws["hbuf"], *args, p.f, p.h, p.e_local, *tail,
                                      MODE="arrivals", ACT=p.act, **gemm_meta(p))
    kernels.grouped_gemm_kernel[grid](ws["hbuf"], p.w2, ws["ret"], *args, p.h, p.f, p.e_local, *tail, MODE="push",
                                      ACT="none", **gemm_meta(p))
    combine(p, ws, fused=True)
