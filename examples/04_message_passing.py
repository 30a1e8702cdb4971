"""04 · Message passing with flags: a producer writes a chunk into the consumer's inbox, then raises a flag; the
consumer waits for the flag, then reads the chunk. Flags only grow (call 1 sets them to 1, call 2 to 2, ...), so
they never need resetting and a stale flag never satisfies a wait.

Teaches: `dctx.signal(flag, value, to_rank)` (a CTA barrier, then a release atomic at system scope: the chunk is
visible before the flag) and `dctx.wait(flag, value)` (acquire poll, bounded by IRIS_WAIT_TIMEOUT_S). Every rank
produces for the next rank and consumes from the previous one.

    python examples/04_message_passing.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def send_and_receive(data, inbox, ready, result, epoch, context, CHUNK: tl.constexpr):
    """Program c: chunk c of my data -> next rank's inbox, then flag; then wait for my own chunk c from the previous
    rank and consume it (here: double it into result)."""
    dctx = iris.DeviceContext.initialize(context)
    c = tl.program_id(0)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    nxt = (dctx.rank + 1) % dctx.world
    dctx.store(inbox + offs, tl.load(data + offs), nxt)    # produce: the payload first ...
    dctx.signal(ready + c, epoch, nxt)                     # ... then the flag (release: orders the payload)
    dctx.wait(ready + c, epoch)                            # consume: acquire, then the payload is safe to read
    tl.store(result + offs, tl.load(inbox + offs) * 2)


def main(ctx, chunks=4, chunk=64, calls=2):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    inbox = ctx.zeros(chunks * chunk)
    ready = ctx.zeros(chunks, dtype=torch.int32)  # zeroed once; the epoch makes every call's flags new
    dctx = ctx.get_device_context()
    for epoch in range(1, calls + 1):
        g = torch.Generator().manual_seed(epoch)
        all_data = [torch.randn(chunks * chunk, generator=g) for _ in range(world)]
        data = ctx.as_symmetric(all_data[rank])
        result = ctx.full((chunks * chunk,), float("nan"))
        send_and_receive[(chunks,)](data, inbox, ready, result, epoch, dctx, CHUNK=chunk)
        # checked before the barrier: past it, the previous rank may already raise my flags to the next epoch
        assert torch.equal(result.cpu(), all_data[(rank - 1) % world] * 2), epoch
        assert torch.all(ready == epoch)
        ctx.barrier()  # before the next call overwrites inboxes that a slow consumer may still read
    if rank == 0:
        print(f"ok: {calls} calls of {chunks} chunks each, flags at epoch {calls}, never reset")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
