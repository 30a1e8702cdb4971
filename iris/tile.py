"""Collectives inside any @triton.jit kernel, on a 1-D block of values held by one program (a "tile").

    ws = iris.tile.Workspace(ctx, tiles=programs, block=BLOCK, dtype=torch.float32)      # host, collective
    kernel[(programs,)](x, ..., *ws.args(), cur_rank, world, heap_bases, BLOCK=BLOCK)

    @triton.jit
    def kernel(X, ..., WS, FLAGS, EPOCHS, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
        t = tl.program_id(0)
        ws, flags, e = iris.tile.begin(WS, FLAGS, EPOCHS, t, world_size, BLOCK)
        x = tl.load(X + t * BLOCK + tl.arange(0, BLOCK))
        y = iris.tile.all_reduce(x, ws, flags, e, cur_rank, world_size, heap_bases)            # sum, one_shot
        z = iris.tile.broadcast(y * 2, 0, ws, flags, e + 1, cur_rank, world_size, heap_bases)
        iris.tile.end(EPOCHS, t, e + 1)         # the last epoch used

Every rank's program working on tile t makes the same calls in the same order; each call on a tile uses the next
epoch (e, e + 1, ...), and `end` stores the last one, so the next launch continues from it (device-side: CUDA graph
replays are fresh calls). send/recv advance the epoch on their two ranks only: give point-to-point traffic tiles of
its own.

Workspace and ordering, for every collective: values travel through the receiver's inbox on the heap. The inbox is
double-buffered by epoch parity. A sender first waits, locally, until the receiver has reported finishing call
e - 2, the last user of that half (almost always already true, so it costs nothing). It stores the data, then sets
an arrival flag to e with release semantics, and the receiver waits for it with acquire semantics. The credit for
call e is "dst finished call e - 2" or "dst sent this rank an arrival of call e - 1" (released after all of its
reads of call e - 2). Collectives in which every rank sends every peer an arrival (all_reduce except ring,
all_gather, reduce_scatter, all_to_all) need nothing more; the others end by reporting "finished e" to every peer.
A rank's own part never goes through its inbox (it is used in place), so the one-shot all-reduce of 2 ranks costs
one remote store, one flag write and one wait per call. Flags only grow, so nothing is re-zeroed and a stale flag
never satisfies a wait. All waits are bounded (IRIS_WAIT_TIMEOUT_S) and report rank, program and flag.

all_reduce variants: "one_shot" (every rank pushes its block to every rank; each sums locally), "two_shot" (chunk c
of the block is reduced at rank c, then pushed to everyone), "ring" (reduce-scatter then all-gather around the ring,
2(w-1) steps of one chunk each), "atomic" (sum: atomic adds into every rank's inbox; not float16 on the CPU
backend, whose interpreter does not make float16 atomic adds atomic across processes). Chunked variants split the
block into world_size chunks of ceil(BLOCK / world_size) elements rounded up to a multiple of 8.
"""

import torch
import triton
import triton.language as tl

from . import consistency
from . import device as iris

SLOTS = tl.constexpr(4)  # inbox slots per parity, in units of world_size * BLOCK (two_shot 2, ring 2(w-1)/w)
FLAG_REGIONS = tl.constexpr(5)  # world_size int32 each: arrivals, phase-2 arrivals, finished calls, ring steps (2)


class Workspace:
    """Heap buffers for `tiles` independent tiles of `block` elements: inboxes, flags and per-tile epochs."""

    def __init__(self, ctx, tiles, block, dtype=torch.float32):
        if block < 16 or block & (block - 1):
            raise ValueError(f"block={block}: expected a power of two >= 16")
        w = ctx.get_num_ranks()
        if w > 1:  # every rank's program t must use the same layout (iris/consistency.py; first call only)
            consistency.first_call(ctx, ("iris.tile.Workspace", tiles, block, str(dtype), ctx.heap.offset))
        self.tiles, self.block = tiles, block
        self.data = ctx.zeros(tiles * 2 * SLOTS.value * w * block, dtype=dtype)
        self.flags = ctx.zeros(tiles * FLAG_REGIONS.value * w, dtype=torch.int32)
        self.epochs = ctx.zeros(tiles, dtype=torch.int32)
        ctx.barrier()  # zeroed everywhere before any peer signals

    def args(self):
        return self.data, self.flags, self.epochs


# ---------------------------------------------------------------------------------------------- plumbing
@triton.jit
def begin(WS, FLAGS, EPOCHS, tile, world_size, BLOCK: tl.constexpr):
    """This tile's inbox base, flag base and first epoch."""
    ws = WS + tile * 2 * SLOTS * world_size * BLOCK
    flags = FLAGS + tile * FLAG_REGIONS * world_size
    return ws, flags, tl.load(EPOCHS + tile) + 1


@triton.jit
def end(EPOCHS, tile, last_epoch):
    tl.store(EPOCHS + tile, last_epoch)


@triton.jit
def _slot(ws, e, k, world_size, BLOCK: tl.constexpr):
    """Slot k (of 4 * world_size) of the inbox half used by epoch e."""
    return ws + ((e % 2) * SLOTS * world_size + k) * BLOCK


@triton.jit
def _push(val, ws, flags, e, k, dst, cur_rank, world_size, heap_bases, mask):
    """val into slot k of dst's inbox, once dst has finished call e - 2 (the last user of that half). A rank's own
    inbox needs no such wait: its reads of call e - 2 came earlier in program (or stream) order."""
    BLOCK: tl.constexpr = val.shape[0]
    if dst != cur_rank:
        _credit(flags, e, dst, cur_rank, world_size, heap_bases)
    iris.store(_slot(ws, e, k, world_size, BLOCK) + tl.arange(0, BLOCK), val, cur_rank, dst, heap_bases, mask=mask)


@triton.jit
def _credit(flags, e, dst, cur_rank, world_size, heap_bases):
    """dst has finished reading its inbox half of call e - 2: it said so (finished >= e - 2), or it has since sent
    this rank an arrival of call e - 1, which it released after all its reads of call e - 2."""
    iris.wait_either(flags + 2 * world_size + dst, e - 2, flags + dst, e - 1, cur_rank, heap_bases)


@triton.jit
def _arrive(flags, region, e, dst, cur_rank, world_size, heap_bases):
    """Release everything stored so far, then tell dst that this rank has arrived at `region` in call e."""
    iris.signal(flags + region * world_size + cur_rank, e, cur_rank, dst, heap_bases)


@triton.jit
def _arrive_peers(flags, region, e, cur_rank, world_size, heap_bases):
    """_arrive at every peer for the price of one release fence: a barrier and a fence, then relaxed flag writes."""
    tl.debug_barrier()
    iris.fence()
    for i in range(1, world_size):
        iris.atomic_xchg(flags + region * world_size + cur_rank, e, cur_rank, (cur_rank + i) % world_size, heap_bases,
                         sem="relaxed", scope="sys")


@triton.jit
def _wait_from(flags, region, e, src, cur_rank, world_size, heap_bases):
    iris.wait(flags + region * world_size + src, e, cur_rank, heap_bases, cmp="ge")


@triton.jit
def _receive(ws, flags, e, src, k, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    """Slot k of this rank's inbox, once rank src has arrived in call e."""
    _wait_from(flags, 0, e, src, cur_rank, world_size, heap_bases)
    return _read(ws, e, k, world_size, BLOCK)


@triton.jit
def _finish(flags, e, cur_rank, world_size, heap_bases):
    """Tell every peer this rank is done reading its inbox for call e (only peers wait for that)."""
    _arrive_peers(flags, 2, e, cur_rank, world_size, heap_bases)


@triton.jit
def _read(ws, e, k, world_size, BLOCK: tl.constexpr):
    return tl.load(_slot(ws, e, k, world_size, BLOCK) + tl.arange(0, BLOCK))


@triton.jit
def _combine(a, b, OP: tl.constexpr):
    if OP == "max":
        r = tl.maximum(a, b)
    elif OP == "min":
        r = tl.minimum(a, b)
    else:
        r = a + b
    return r


@triton.jit
def _wide(x):
    """Floats combine in fp32, float64 in float64 (a sum over ranks rounds once, as the host collectives do);
    integers as they are (an int32 sum wraps as torch's does)."""
    if x.dtype == tl.float64:
        r = x
    elif x.dtype.is_floating():
        r = x.to(tl.float32)
    else:
        r = x
    return r


@triton.jit
def _chunk_size(world_size, BLOCK: tl.constexpr):
    """Elements per chunk of the chunked variants: ceil(BLOCK / world) rounded up to a multiple of 8."""
    return tl.cdiv(tl.cdiv(BLOCK, world_size), 8) * 8


@triton.jit
def _chunk_of(world_size, BLOCK: tl.constexpr):
    """Chunk index of every element of the block (chunked variants). Chunks start on 8-element boundaries and the
    index is computed per group of 8, so the compiler sees masks constant over 8 elements and keeps masked stores
    16-byte wide (a chunk size it cannot see through made every remote store a 2-byte one: 4x slower)."""
    return (tl.arange(0, BLOCK) // 8 * 8) // _chunk_size(world_size, BLOCK)


@triton.jit
def _push_to_all(x, ws, flags, e, cur_rank, world_size, heap_bases, CHUNKED: tl.constexpr):
    """x (or, CHUNKED, only chunk c of x for rank c) into slot `cur_rank` of every peer's inbox, with arrivals (a
    rank's own part never travels: callers use x)."""
    BLOCK: tl.constexpr = x.shape[0]
    for i in range(1, world_size):
        dst = (cur_rank + i) % world_size
        if CHUNKED:
            _push(x, ws, flags, e, cur_rank, dst, cur_rank, world_size, heap_bases, _chunk_of(world_size, BLOCK) == dst)
        else:
            _push(x, ws, flags, e, cur_rank, dst, cur_rank, world_size, heap_bases, None)
    _arrive_peers(flags, 0, e, cur_rank, world_size, heap_bases)


@triton.jit
def _combine_arrived(x, ws, flags, e, cur_rank, world_size, heap_bases, OP: tl.constexpr):
    """x combined with every peer's block as it arrives (slot = the peer's rank); floats in fp32."""
    BLOCK: tl.constexpr = x.shape[0]
    acc = _wide(x)
    for i in range(1, world_size):
        src = (cur_rank + i) % world_size
        acc = _combine(acc, _wide(_receive(ws, flags, e, src, src, cur_rank, world_size, heap_bases, BLOCK)), OP)
    return acc.to(x.dtype)


# ---------------------------------------------------------------------------------------------- collectives
@triton.jit
def all_reduce(x, ws, flags, e, cur_rank, world_size, heap_bases, OP: tl.constexpr = tl.constexpr("sum"),
               VARIANT: tl.constexpr = tl.constexpr("one_shot")):
    """x combined over ranks (every rank gets the result)."""
    BLOCK: tl.constexpr = x.shape[0]
    if VARIANT == "two_shot":
        chunk = _chunk_of(world_size, BLOCK)
        _push_to_all(x, ws, flags, e, cur_rank, world_size, heap_bases, True)  # chunk c to rank c
        acc = _combine_arrived(x, ws, flags, e, cur_rank, world_size, heap_bases, OP)
        for i in range(1, world_size):  # my reduced chunk to every peer (phase 2, slot = world + my rank)
            dst = (cur_rank + i) % world_size
            iris.store(_slot(ws, e, world_size + cur_rank, world_size, BLOCK) + tl.arange(0, BLOCK), acc, cur_rank,
                       dst, heap_bases, mask=chunk == cur_rank)
        _arrive_peers(flags, 1, e, cur_rank, world_size, heap_bases)
        out = acc
        for i in range(1, world_size):
            src = (cur_rank + i) % world_size
            _wait_from(flags, 1, e, src, cur_rank, world_size, heap_bases)
            out = tl.where(chunk == src, _read(ws, e, world_size + src, world_size, BLOCK), out)
    elif VARIANT == "ring":
        chunk = _chunk_of(world_size, BLOCK)
        nxt = (cur_rank + 1) % world_size
        out = x
        for s in range(2 * (world_size - 1)):
            # steps < w-1: reduce-scatter (send the running chunk); then all-gather (forward finished chunks)
            send = (cur_rank - s + 2 * world_size) % world_size if s < world_size - 1 else \
                (cur_rank + 1 - (s - world_size + 1) + 2 * world_size) % world_size
            _push(out, ws, flags, e, s, nxt, cur_rank, world_size, heap_bases, chunk == send)
            iris.signal(flags + 3 * world_size + s, e, cur_rank, nxt, heap_bases)
            iris.wait(flags + 3 * world_size + s, e, cur_rank, heap_bases, cmp="ge")
            recv = (send + world_size - 1) % world_size
            got = _read(ws, e, s, world_size, BLOCK)
            if s < world_size - 1:
                out = tl.where(chunk == recv, _combine(_wide(out), _wide(got), OP).to(x.dtype), out)
            else:
                out = tl.where(chunk == recv, got, out)
    elif VARIANT == "atomic":
        for i in range(world_size):
            dst = (cur_rank + i) % world_size
            if dst != cur_rank:
                _credit(flags, e, dst, cur_rank, world_size, heap_bases)
            iris.atomic_add(_slot(ws, e, 0, world_size, BLOCK) + tl.arange(0, BLOCK), x, cur_rank, dst, heap_bases,
                            sem="relaxed", scope="sys")
            _arrive(flags, 0, e, dst, cur_rank, world_size, heap_bases)
        for src in range(world_size):  # every rank's adds have landed
            _wait_from(flags, 0, e, src, cur_rank, world_size, heap_bases)
        out = _read(ws, e, 0, world_size, BLOCK)
        tl.store(_slot(ws, e, 0, world_size, BLOCK) + tl.arange(0, BLOCK), tl.zeros((BLOCK,), x.dtype))  # reuse
    else:  # one_shot
        _push_to_all(x, ws, flags, e, cur_rank, world_size, heap_bases, False)
        out = _combine_arrived(x, ws, flags, e, cur_rank, world_size, heap_bases, OP)
    if VARIANT == "ring":  # the others sent every peer an arrival of call e: that is their credit for e + 2
        _finish(flags, e, cur_rank, world_size, heap_bases)
    return out


@triton.jit
def all_gather(x, OUT, ws, flags, e, cur_rank, world_size, heap_bases):
    """OUT[r * BLOCK:(r + 1) * BLOCK] (local memory) <- rank r's x, for every r."""
    BLOCK: tl.constexpr = x.shape[0]
    all_gather_strided(x, OUT, 0, BLOCK, world_size * BLOCK, ws, flags, e, cur_rank, world_size, heap_bases)


@triton.jit
def _slice_mask(first, stride, total, r, BLOCK: tl.constexpr):
    """Elements first + [0, BLOCK) of rank r's slice (slices `stride` apart) that exist: inside the slice and below
    `total` (the last slices of a tensor that world does not divide are short or empty)."""
    offs = first + tl.arange(0, BLOCK)
    return (offs < stride) & (r * stride + offs < total)


@triton.jit
def all_gather_strided(x, OUT, first, stride, total, ws, flags, e, cur_rank, world_size, heap_bases):
    """OUT[r * stride + first + [0, BLOCK)] (local memory) <- rank r's x, for every r: a tile of a larger all-gather
    of `total` elements whose rank slices are `stride` elements apart (elements past a slice or past `total` are
    not stored)."""
    BLOCK: tl.constexpr = x.shape[0]
    offs = first + tl.arange(0, BLOCK)
    tl.store(OUT + cur_rank * stride + offs, x, mask=_slice_mask(first, stride, total, cur_rank, BLOCK))
    _push_to_all(x, ws, flags, e, cur_rank, world_size, heap_bases, False)
    for i in range(1, world_size):
        src = (cur_rank + i) % world_size
        got = _receive(ws, flags, e, src, src, cur_rank, world_size, heap_bases, BLOCK)
        tl.store(OUT + src * stride + offs, got, mask=_slice_mask(first, stride, total, src, BLOCK))


@triton.jit
def reduce_scatter_strided(X, first, stride, total, ws, flags, e, cur_rank, world_size, heap_bases,
                           OP: tl.constexpr, BLOCK: tl.constexpr):
    """Elements first + [0, BLOCK) of this rank's slice of X (local; rank slices `stride` elements apart, `total`
    elements in all) combined over ranks, returned: a tile of a larger reduce-scatter. Each peer's part goes to that
    peer whole and contiguous (no chunk masks: stores stay 16 bytes wide). Missing elements read as 0."""
    offs = first + tl.arange(0, BLOCK)
    for i in range(1, world_size):
        dst = (cur_rank + i) % world_size
        v = tl.load(X + dst * stride + offs, mask=_slice_mask(first, stride, total, dst, BLOCK), other=0)
        _push(v, ws, flags, e, cur_rank, dst, cur_rank, world_size, heap_bases, None)
    _arrive_peers(flags, 0, e, cur_rank, world_size, heap_bases)
    own = tl.load(X + cur_rank * stride + offs, mask=_slice_mask(first, stride, total, cur_rank, BLOCK), other=0)
    return _combine_arrived(own, ws, flags, e, cur_rank, world_size, heap_bases, OP)


@triton.jit
def reduce_scatter(x, OUT, ws, flags, e, cur_rank, world_size, heap_bases, OP: tl.constexpr = tl.constexpr("sum")):
    """OUT (local) <- chunk `cur_rank` of x combined over ranks: chunks of ceil(BLOCK / world) elements rounded up to
    a multiple of 8 (so the last chunks may be shorter, or empty, when world does not divide BLOCK / 8)."""
    BLOCK: tl.constexpr = x.shape[0]
    _push_to_all(x, ws, flags, e, cur_rank, world_size, heap_bases, True)
    acc = _combine_arrived(x, ws, flags, e, cur_rank, world_size, heap_bases, OP)
    size = _chunk_size(world_size, BLOCK)
    tl.store(OUT + tl.arange(0, BLOCK) - cur_rank * size, acc, mask=_chunk_of(world_size, BLOCK) == cur_rank)


@triton.jit
def broadcast(x, root, ws, flags, e, cur_rank, world_size, heap_bases):
    """Rank root's x, on every rank."""
    BLOCK: tl.constexpr = x.shape[0]
    out = x
    if cur_rank == root:
        for i in range(1, world_size):
            dst = (cur_rank + i) % world_size
            _push(x, ws, flags, e, 0, dst, cur_rank, world_size, heap_bases, None)
            _arrive(flags, 0, e, dst, cur_rank, world_size, heap_bases)
    else:
        out = _receive(ws, flags, e, root, 0, cur_rank, world_size, heap_bases, BLOCK)
    _finish(flags, e, cur_rank, world_size, heap_bases)
    return out


@triton.jit
def scatter(X, root, ws, flags, e, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    """Block r of root's X (world * BLOCK elements, local to root) to rank r; returns this rank's block."""
    if cur_rank == root:
        for i in range(1, world_size):
            dst = (cur_rank + i) % world_size
            _push(tl.load(X + dst * BLOCK + tl.arange(0, BLOCK)), ws, flags, e, 0, dst, cur_rank, world_size,
                  heap_bases, None)
            _arrive(flags, 0, e, dst, cur_rank, world_size, heap_bases)
        out = tl.load(X + cur_rank * BLOCK + tl.arange(0, BLOCK))
    else:
        out = _receive(ws, flags, e, root, 0, cur_rank, world_size, heap_bases, BLOCK)
    _finish(flags, e, cur_rank, world_size, heap_bases)
    return out


@triton.jit
def gather(x, OUT, root, ws, flags, e, cur_rank, world_size, heap_bases):
    """Root's OUT[r * BLOCK:(r + 1) * BLOCK] (local to root) <- rank r's x."""
    BLOCK: tl.constexpr = x.shape[0]
    if cur_rank != root:
        _push(x, ws, flags, e, cur_rank, root, cur_rank, world_size, heap_bases, None)
        _arrive(flags, 0, e, root, cur_rank, world_size, heap_bases)
    else:
        tl.store(OUT + cur_rank * BLOCK + tl.arange(0, BLOCK), x)
        for i in range(1, world_size):
            src = (cur_rank + i) % world_size
            got = _receive(ws, flags, e, src, src, cur_rank, world_size, heap_bases, BLOCK)
            tl.store(OUT + src * BLOCK + tl.arange(0, BLOCK), got)
    _finish(flags, e, cur_rank, world_size, heap_bases)


@triton.jit
def reduce(x, root, ws, flags, e, cur_rank, world_size, heap_bases, OP: tl.constexpr = tl.constexpr("sum")):
    """x combined over ranks, on root (other ranks get their own x back)."""
    out = x
    if cur_rank != root:
        _push(x, ws, flags, e, cur_rank, root, cur_rank, world_size, heap_bases, None)
        _arrive(flags, 0, e, root, cur_rank, world_size, heap_bases)
    else:
        out = _combine_arrived(x, ws, flags, e, cur_rank, world_size, heap_bases, OP)
    _finish(flags, e, cur_rank, world_size, heap_bases)
    return out


@triton.jit
def all_to_all(X, OUT, ws, flags, e, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    """Block c of X (world * BLOCK, local) goes to rank c; OUT block r (local) <- rank r's block for this rank."""
    tl.store(OUT + cur_rank * BLOCK + tl.arange(0, BLOCK), tl.load(X + cur_rank * BLOCK + tl.arange(0, BLOCK)))
    for i in range(1, world_size):
        dst = (cur_rank + i) % world_size
        _push(tl.load(X + dst * BLOCK + tl.arange(0, BLOCK)), ws, flags, e, cur_rank, dst, cur_rank, world_size,
              heap_bases, None)
    _arrive_peers(flags, 0, e, cur_rank, world_size, heap_bases)
    for i in range(1, world_size):
        src = (cur_rank + i) % world_size
        got = _receive(ws, flags, e, src, src, cur_rank, world_size, heap_bases, BLOCK)
        tl.store(OUT + src * BLOCK + tl.arange(0, BLOCK), got)


@triton.jit
def send(x, dst, ws, flags, e, cur_rank, world_size, heap_bases):
    """Point to point: x to rank dst, whose matching recv (same tile, same epoch) returns it."""
    _push(x, ws, flags, e, cur_rank, dst, cur_rank, world_size, heap_bases, None)
    _arrive(flags, 0, e, dst, cur_rank, world_size, heap_bases)


@triton.jit
def recv(src, ws, flags, e, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    """The block rank src sent with the same tile and epoch; then frees the slot (tells src it was consumed)."""
    out = _receive(ws, flags, e, src, src, cur_rank, world_size, heap_bases, BLOCK)
    _arrive(flags, 2, e, src, cur_rank, world_size, heap_bases)
    return out
