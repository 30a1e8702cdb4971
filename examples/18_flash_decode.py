"""18 · Distributed flash-decode: one new token attends to a KV cache split over ranks by sequence position. Each
rank computes, per head, a partial softmax over its part of the cache (running max m, sum of exponentials l, and
the weighted sum of values o); the partials are all-gathered inside the kernel and combined:
out = sum_r exp(m_r - M) o_r / sum_r exp(m_r - M) l_r with M = max_r m_r. Every rank ends with the full output,
checked against torch's attention over the whole cache.

Teaches: the split-softmax (flash-decoding) combine, and an in-kernel all-gather through the device context
(`dctx.all_gather(partial, out)`, one tile per head).

    python examples/18_flash_decode.py
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def flash_decode_kernel(Q, K, V, PARTS, OUT, S_LOCAL, scale, context, H: tl.constexpr, D: tl.constexpr,
                        S_BLOCK: tl.constexpr, WORLD: tl.constexpr, WORLD_P2: tl.constexpr):
    """Program h: head h. K and V are this rank's S_LOCAL x H x D slice of the cache; PARTS (WORLD x 2D per head)
    receives every rank's partial [o (D values), m, l, 0 ...]."""
    dctx = iris.DeviceContext.initialize(context)
    h = tl.program_id(0)
    s = tl.arange(0, S_BLOCK)
    c = tl.arange(0, 2 * D)  # columns D.. are zero in o: room for m and l in the same block
    q = tl.load(Q + h * D + c, mask=c < D, other=0.0)
    kv = s[:, None] * (H * D) + h * D + c[None, :]
    kv_mask = (s[:, None] < S_LOCAL) & (c[None, :] < D)
    k = tl.load(K + kv, mask=kv_mask, other=0.0)
    scores = tl.where(s < S_LOCAL, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
    m = tl.max(scores, axis=0)
    p = tl.exp(scores - m)
    l_sum = tl.sum(p, axis=0)
    o = tl.sum(p[:, None] * tl.load(V + kv, mask=kv_mask, other=0.0), axis=0)
    partial = tl.where(c == D, m, tl.where(c == D + 1, l_sum, o))
    parts = PARTS + h * WORLD * 2 * D
    dctx.all_gather(partial, parts)  # parts[r * 2D ...] <- rank r's partial of head h
    tl.debug_barrier()  # this program's threads wrote parts: make them visible to all its threads
    r = tl.arange(0, WORLD_P2)
    g = tl.load(parts + r[:, None] * 2 * D + c[None, :], mask=r[:, None] < WORLD, other=0.0)
    m_r = tl.where(r < WORLD, tl.sum(tl.where(c[None, :] == D, g, 0.0), axis=1), float("-inf"))
    l_r = tl.sum(tl.where(c[None, :] == D + 1, g, 0.0), axis=1)
    w = tl.exp(m_r - tl.max(m_r, axis=0))
    out = tl.sum(w[:, None] * g, axis=0) / tl.sum(w * l_r, axis=0)
    tl.store(OUT + h * D + c, out, mask=c < D)


def main(ctx, seq=64, heads=4, dim=16):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    s_local = seq // world
    g = torch.Generator().manual_seed(18)
    q, k, v = torch.randn(heads, dim, generator=g), torch.randn(seq, heads, dim, generator=g), \
        torch.randn(seq, heads, dim, generator=g)
    dev = ctx.get_device()
    mine = slice(rank * s_local, (rank + 1) * s_local)
    k_mine, v_mine = k[mine].contiguous().to(dev), v[mine].contiguous().to(dev)
    parts = ctx.zeros(heads * world * 2 * dim)  # written by all_gather (local): any memory would do
    out = torch.full((heads, dim), float("nan"), device=dev)
    dctx = ctx.get_device_context(tiles=heads, block=2 * dim, dtype=torch.float32)
    scale = 1 / math.sqrt(dim)
    flash_decode_kernel[(heads,)](q.to(dev), k_mine, v_mine, parts, out, s_local, scale, dctx, H=heads, D=dim,
                                  S_BLOCK=triton.next_power_of_2(s_local), WORLD=world,
                                  WORLD_P2=triton.next_power_of_2(world))
    ctx.barrier()
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double()[:, None, :], k.double().transpose(0, 1), v.double().transpose(0, 1))[:, 0, :]  # heads as batch
    err = ((out.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-4, err
    if rank == 0:
        print(f"ok: flash-decode over a {seq}-token KV cache split {world} ways, {heads} heads, error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
