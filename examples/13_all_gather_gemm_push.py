"""13 · AllGather + GEMM, push. The same product as 12, but every rank pushes its rows of A into every rank's
gathered-A buffer (an inbox) and raises a flag per row block; the GEMM waits for a block's flag, then reads it
locally. Remote traffic happens once per block instead of once per tile that needs it, and the GEMM's loads stay
local; the cost is the inbox (M x K per rank) and a flag wait.

Teaches: a push kernel (`dctx.put` + `dctx.signal`) feeding a consumer GEMM that waits on flags (`dctx.wait`).

    python examples/13_all_gather_gemm_push.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def push_kernel(A, A_ALL, ready, epoch, ML, K, context, BM: tl.constexpr, BK: tl.constexpr):
    """Program b: my row block b into every rank's A_ALL (at my rows), then that block's flag on that rank."""
    dctx = iris.DeviceContext.initialize(context)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    blocks = tl.cdiv(ML, BM)
    for i in range(dctx.world):
        dst = (dctx.rank + i) % dctx.world
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            offs = rows[:, None] * K + rk[None, :]
            dctx.put(A + offs, A_ALL + dctx.rank * ML * K + offs, dst, mask=rk[None, :] < K)
        dctx.signal(ready + dctx.rank * blocks + tl.program_id(0), epoch, dst)


@triton.jit
def gemm_kernel(A_ALL, B, C, ready, epoch, ML, NL, K, context, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    dctx.wait(ready + pid_m, epoch)  # row block pid_m (owner pid_m // blocks) has landed in my A_ALL
    rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(A_ALL + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0)
        b = tl.load(B + rk[:, None] * NL + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < NL), other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * NL + rn[None, :], acc, mask=rn[None, :] < NL)


def main(ctx, m_local=32, n_local=32, k=64, bm=16, bn=32, bk=32):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    assert m_local % bm == 0
    g = torch.Generator().manual_seed(13)
    a, b = torch.randn(m_local * world, k, generator=g), torch.randn(k, n_local * world, generator=g)
    dev = ctx.get_device()
    a_mine = a[rank * m_local:(rank + 1) * m_local].contiguous().to(dev)  # read locally only: anywhere
    a_all = ctx.full((m_local * world, k), float("nan"))                  # the inbox: on the heap
    ready = ctx.zeros(world * m_local // bm, dtype=torch.int32)
    b_mine = b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(dev)
    c = torch.full((m_local * world, n_local), float("nan"), device=dev)
    dctx = ctx.get_device_context()
    ctx.barrier()
    push_kernel[(m_local // bm,)](a_mine, a_all, ready, 1, m_local, k, dctx, BM=bm, BK=bk)
    gemm_kernel[(world * m_local // bm, triton.cdiv(n_local, bn))](a_all, b_mine, c, ready, 1, m_local, n_local, k,
                                                                    dctx, BM=bm, BN=bn, BK=bk)
    ctx.barrier()
    ref = a.double() @ b[:, rank * n_local:(rank + 1) * n_local].double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    assert torch.equal(a_all.cpu(), a), "the gathered A is every rank's rows, in rank order"
    if rank == 0:
        print(f"ok: AllGather + GEMM (push), relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
