"""02 · put and get: memory-to-memory copies between ranks, no registers in the program's code.

Teaches: `dctx.put(src, dst, to_rank)` (local read, remote write), `dctx.get(src, dst, from_rank)` (remote read,
local write) and `dctx.copy(src, dst, from_rank, to_rank)` (both remote: any rank may move data between two others).
Reference note: the functional `iris.get(from_ptr, to_ptr, cur_rank, peer, heap_bases)` reads `peer`'s memory,
as the reference's code (not its docstring) does.

    python examples/02_put_get.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def exchange_kernel(mine, pushed, pulled, copied, n, context, BLOCK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    peer = (dctx.rank + 1) % dctx.world
    dctx.put(mine + offs, pushed + offs, peer, mask=mask)      # peer's pushed <- my mine
    dctx.get(mine + offs, pulled + offs, peer, mask=mask)      # my pulled <- peer's mine
    dctx.copy(mine + offs, copied + offs, peer, peer, mask=mask)  # peer's copied <- peer's mine, moved by me


def main(ctx, n=777):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    data = [torch.randn(n, generator=torch.Generator().manual_seed(r)) for r in range(world)]  # all ranks know all
    mine = ctx.as_symmetric(data[rank])
    pushed, pulled, copied = (ctx.full((n,), float("nan")) for _ in range(3))
    ctx.barrier()
    exchange_kernel[(triton.cdiv(n, 128),)](mine, pushed, pulled, copied, n, ctx.get_device_context(), BLOCK=128)
    ctx.barrier()
    prev, nxt = (rank - 1) % world, (rank + 1) % world
    assert torch.equal(pushed.cpu(), data[prev]) and torch.equal(pulled.cpu(), data[nxt])
    assert torch.equal(copied.cpu(), data[rank])
    if rank == 0:
        print("ok: put, get and copy moved every element exactly")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
