"""01 · load and store: a kernel reads a peer's copy of a heap tensor and writes into another peer's copy.

Teaches: the device context (`ctx.get_device_context()` on the host, `iris.DeviceContext.initialize` in the
kernel: rank, world size and heap bases in one argument), `dctx.load(ptr, from_rank)` and
`dctx.store(ptr, value, to_rank)`. Pointers are always addresses of *this* rank's tensors; the context translates
them to the peer's copy. The functional form is `iris.load(ptr, cur_rank, from_rank, heap_bases)`.

    python examples/01_load_store.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def shift_kernel(x, from_prev, n, context, BLOCK: tl.constexpr):
    """from_prev (on the next rank) <- x of the previous rank, moved in two hops: load from prev, store to next."""
    dctx = iris.DeviceContext.initialize(context)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    prev = (dctx.rank + dctx.world - 1) % dctx.world
    nxt = (dctx.rank + 1) % dctx.world
    v = dctx.load(x + offs, prev, mask=mask)          # remote read: prev's x
    dctx.store(from_prev + offs, v, nxt, mask=mask)   # remote write: into next's from_prev


def main(ctx, n=1000):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    x = ctx.as_symmetric(torch.arange(n, dtype=torch.float32) + 1000 * rank)
    out = ctx.full((n,), -1.0)
    ctx.barrier()  # peers' x must be written before anyone reads it
    shift_kernel[(triton.cdiv(n, 256),)](x, out, n, ctx.get_device_context(), BLOCK=256)
    ctx.barrier()  # every rank's stores into my `out` have landed
    # out here was written by rank-1, with what it loaded from rank-2: x of rank (rank - 2) mod world.
    src = (rank - 2) % world
    assert torch.equal(out.cpu(), torch.arange(n, dtype=torch.float32) + 1000 * src)
    if rank == 0:
        print(f"ok: rank 0 holds rank {src}'s x, moved by a remote load and a remote store")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
