"""Launch sequence pieces shared by the iris variants of moe_ffn: routing and dispatch, and the combine."""

import triton

from . import kernels


def _programs(p, blocks):
    return max(1, min(p.cfg.gemm_sms, blocks))


def _block_h(p):
    return min(triton.next_power_of_2(p.h), 64 if p.ctx.backend == "cpu" else 256)


def dispatch(p, ws, fused):
    """Route on the device, reserve rows in the owners' expert buffers (entry handshake first), push the rows."""
    idx, pos, hist, status = p.route(ws)
    base = p.rank_args()
    kernels.reserve_kernel[(1,)](hist, ws["bases"], ws["counts"], ws["flags"], ws["epoch"], p.e_local, p.e, *base,
                                 E_P2=triton.next_power_of_2(p.e))
    block_a = 16 if p.ctx.backend == "cpu" else 32
    kernels.push_kernel[(_programs(p, triton.cdiv(p.n_assign, block_a)),)](
        p.x, idx, pos, ws["bases"], ws["xbuf"], ws["meta"], ws["blockready"], ws["slot_of"], status, ws["done"],
        ws["flags"], ws["retready"], p.n_assign, p.k, p.h, p.capacity, p.e_local, p.e, ws["nblk"],
        triton.cdiv(p.h, p.cfg.block_n), *base, BLOCK_A=block_a,
        BLOCK_H=_block_h(p), BLOCK_M=p.cfg.block_m, FUSED=fused)


def combine(p, ws, fused):
    """Weighted sum of each token's k returned rows into p.y (and the counters' reset for the next call)."""
    block_t = 8 if p.ctx.backend == "cpu" else 16
    kernels.combine_kernel[(_programs(p, triton.cdiv(p.t, block_t)),)](
        ws["ret"], ws["retready"], ws["slot_of"], p.weights, p.y, ws["counts"], ws["blockready"], ws["flags"],
        ws["epoch"], p.t, p.k, p.h, p.e_local, ws["blockready"].numel(), triton.cdiv(p.h, p.cfg.block_n),
        *p.rank_args(), FUSED=fused, BLOCK_T=block_t, BLOCK_H=_block_h(p), KP2=triton.next_power_of_2(p.k),
        SPIN=2 if p.ctx.backend == "cpu" else 1 << 16)  # CPU: 2 rounds (exercised), then waits that yield


def gemm_meta(p):
    return {"BLOCK_M": p.cfg.block_m, "BLOCK_N": p.cfg.block_n, "BLOCK_K": p.cfg.block_k,
            "EL_P2": triton.next_power_of_2(p.e_local), "num_warps": p.cfg.num_warps, "num_stages": p.cfg.num_stages}
