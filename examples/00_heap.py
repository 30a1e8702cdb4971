"""00 · The symmetric heap: every rank allocates the same tensors in the same order, so each tensor sits at the same
offset in every rank's heap, and a pointer to "my" tensor names the peer's copy too (after translation).

Teaches: `iris.iris` / `iris.spawn`, the torch-like allocators, `get_rank / get_num_ranks / get_heap_bases`,
`is_symmetric`, `as_symmetric`, and `barrier`. Host only: no kernel yet.

    python examples/00_heap.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch

import iris


def main(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    bases = ctx.get_heap_bases()  # int64 tensor: every rank's heap base, as mapped in *this* process
    x = ctx.zeros(4, 8, dtype=torch.float32)  # torch-like allocators: zeros/ones/empty/full/arange/rand/randn/...
    y = ctx.arange(16, dtype=torch.int32)
    z = ctx.as_symmetric(torch.full((3,), float(rank)))  # a heap copy of any tensor
    offsets = [t.data_ptr() - bases[rank].item() for t in (x, y, z)]
    # The same allocation sequence gives the same offsets on every rank: that is what "symmetric" means.
    assert offsets == sorted(offsets) and all(o % 256 == 0 for o in offsets), offsets
    assert all(ctx.is_symmetric(t) for t in (x, y, z)) and not ctx.is_symmetric(torch.zeros(3))
    assert y.tolist() == list(range(16)) and torch.all(z == rank)
    ctx.barrier()  # every rank's work so far is done (host-side; device_barrier() is the on-GPU one)
    if rank == 0:
        print(f"ok: {world} ranks, heap bases {[hex(b) for b in bases.tolist()]}, offsets {offsets} on every rank")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
