"""06 · Collectives inside a kernel: every program holds a block of values (a "tile") and combines it with the same
tile of every other rank, without leaving the kernel.

Teaches: `dctx.all_reduce(x)` (variants one_shot, two_shot, ring, atomic), `dctx.all_gather(x, out)`,
`dctx.reduce_scatter(x, out)`, `dctx.broadcast(x, root)`, `dctx.reduce(x, root)`, `dctx.sendrecv(x, dst, src)`.
The context needs a workspace (`ctx.get_device_context(tiles=programs, block=BLOCK, dtype=...)`: inboxes and
flags on the heap); program t uses tile t, and each call's epoch is kept in the workspace, so nothing is passed
around. Every rank's program t must make the same calls in the same order.

    python examples/06_tile_collectives.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def collectives_kernel(x, out, context, WORLD: tl.constexpr, BLOCK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + t * BLOCK + offs)
    row = out + t * (5 + WORLD) * BLOCK
    tl.store(row + offs, dctx.all_reduce(v))                                   # sum over ranks
    tl.store(row + BLOCK + offs, dctx.all_reduce(v, op="max", variant="two_shot"))
    tl.store(row + 2 * BLOCK + offs, dctx.broadcast(v, 0))                     # rank 0's v
    tl.store(row + 3 * BLOCK + offs, dctx.sendrecv(v, (dctx.rank + 1) % WORLD, (dctx.rank + WORLD - 1) % WORLD))
    dctx.reduce_scatter(v, row + 4 * BLOCK)                                    # my chunk of the sum
    dctx.all_gather(v, row + 5 * BLOCK)                                        # every rank's v, in rank order


def main(ctx, programs=2, block=32):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    g = torch.Generator().manual_seed(6)
    xs = torch.randint(-50, 50, (world, programs, block), generator=g).float()  # every rank knows every input
    x = ctx.as_symmetric(xs[rank].flatten())
    width = (5 + world) * block
    out = ctx.full((programs * width,), float("nan"))
    dctx = ctx.get_device_context(tiles=programs, block=block, dtype=torch.float32)
    ctx.barrier()
    collectives_kernel[(programs,)](x, out, dctx, WORLD=world, BLOCK=block)
    ctx.barrier()
    o = out.cpu().view(programs, width)
    chunk = ((block + world - 1) // world + 7) // 8 * 8  # reduce_scatter's chunk: ceil(block/world), 8-aligned
    lo, hi = rank * chunk, min((rank + 1) * chunk, block)
    for t in range(programs):
        total = xs[:, t].sum(0)
        assert torch.equal(o[t, :block], total)
        assert torch.equal(o[t, block:2 * block], xs[:, t].max(0).values)
        assert torch.equal(o[t, 2 * block:3 * block], xs[0, t])
        assert torch.equal(o[t, 3 * block:4 * block], xs[(rank - 1) % world, t])
        assert torch.equal(o[t, 4 * block:4 * block + hi - lo], total[lo:hi])
        assert torch.equal(o[t, 5 * block:], xs[:, t].flatten())
    if rank == 0:
        print(f"ok: all_reduce (sum, max), broadcast, sendrecv, reduce_scatter, all_gather on {programs} tiles")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
