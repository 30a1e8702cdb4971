"""Fused: the dispatch kernel pushes rows straight into the owners' per-expert buffers and counts them per row block
there; one persistent kernel takes each expert's row blocks as their rows land (no barrier: a block waits only for
its own rows), computes act(X W1) W2 for the block and stores each result row straight into its source rank's buffer,
raising that row's flag to the call's epoch; each source sums a token as soon as its k rows have arrived. No host
synchronization, no barrier; the only handshake is the entry one (no rank writes into a peer still in the previous
call). Serves decode too: with few tokens the call is four small launches and per-row flags."""

from ..registry import register
from . import kernels
from .common import combine, dispatch, gemm_meta


@register("moe_ffn", "fused", "fused sequential", "rows pushed into owners' expert buffers with per-block arrival "
                                                  "counts; persistent grouped GEMM per block as it lands, results "
                                                  "pushed back per row; no barrier")
def run(p):
    ws = p.workspace("fused")
    dispatch(p, ws, fused=True)
    kernels.fused_expert_kernel[(p.cfg.gemm_sms,)](
        ws["xbuf"], ws["meta"], ws["blockready"], ws["counts"], p.w1, p.w2, ws["hbuf"], ws["ret"], ws["retready"],
        ws["flags"], ws["epoch"], p.capacity, p.h, p.f, ws["nblk"], p.n_assign, p.e_local, *p.rank_args(),
        ACT=p.act, **gemm_meta(p))
    combine(p, ws, fused=True)
