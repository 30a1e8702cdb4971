"""iris.tile: collectives called from inside a user's kernel, on 2 and 4 ranks, several tiles per launch, several
collectives per launch (consecutive epochs), several launches in a row, against torch on every rank's inputs."""

import pytest
import torch
import triton
import triton.language as tl

import iris  # noqa: F401  (before any kernel: the CPU backend switches the interpreter on)
from iris import tile

BLOCK = 64


@triton.jit
def tile_kernel(X, OUT, WS, FLAGS, EPOCHS, cur_rank, world_size, heap_bases, ROOT: tl.constexpr, WHAT: tl.constexpr,
                OP: tl.constexpr, VARIANT: tl.constexpr, BLOCK: tl.constexpr):
    t = tl.program_id(0)
    ws, flags, e = tile.begin(WS, FLAGS, EPOCHS, t, world_size, BLOCK)
    x = tl.load(X + t * BLOCK + tl.arange(0, BLOCK))
    base = OUT + t * world_size * BLOCK  # every tile owns world * BLOCK elements of OUT
    offs = tl.arange(0, BLOCK)
    if WHAT == "all_reduce":
        y = tile.all_reduce(x, ws, flags, e, cur_rank, world_size, heap_bases, OP, VARIANT)
        y2 = tile.all_reduce(y, ws, flags, e + 1, cur_rank, world_size, heap_bases, OP, VARIANT)  # a second call
        tl.store(base + offs, y)
        tl.store(base + BLOCK + offs, y2)
        tile.end(EPOCHS, t, e + 1)
    elif WHAT == "all_gather":
        tile.all_gather(x, base, ws, flags, e, cur_rank, world_size, heap_bases)
        tile.end(EPOCHS, t, e)
    elif WHAT == "reduce_scatter":
        tile.reduce_scatter(x, base, ws, flags, e, cur_rank, world_size, heap_bases, OP)
        tile.end(EPOCHS, t, e)
    elif WHAT == "broadcast":
        tl.store(base + offs, tile.broadcast(x, ROOT, ws, flags, e, cur_rank, world_size, heap_bases))
        tile.end(EPOCHS, t, e)
    elif WHAT == "reduce":
        tl.store(base + offs, tile.reduce(x, ROOT, ws, flags, e, cur_rank, world_size, heap_bases, OP))
        tile.end(EPOCHS, t, e)
    elif WHAT == "gather":
        tile.gather(x, base, ROOT, ws, flags, e, cur_rank, world_size, heap_bases)
        tile.end(EPOCHS, t, e)
    elif WHAT == "scatter":  # root's X rows: tile t uses X[t * world * BLOCK ...] as its world blocks
        tl.store(base + offs, tile.scatter(X + t * world_size * BLOCK, ROOT, ws, flags, e, cur_rank, world_size,
                                           heap_bases, BLOCK))
        tile.end(EPOCHS, t, e)
    elif WHAT == "all_to_all":
        tile.all_to_all(X + t * world_size * BLOCK, base, ws, flags, e, cur_rank, world_size, heap_bases, BLOCK)
        tile.end(EPOCHS, t, e)
    else:  # send/recv around the ring: rank r sends to r+1, receives from r-1
        nxt, prv = (cur_rank + 1) % world_size, (cur_rank + world_size - 1) % world_size
        tile.send(x * 3, nxt, ws, flags, e, cur_rank, world_size, heap_bases)
        tl.store(base + offs, tile.recv(prv, ws, flags, e, cur_rank, world_size, heap_bases, BLOCK))
        tile.end(EPOCHS, t, e)


def _combine(ts, op):
    s = torch.stack(ts)
    return {"sum": s.sum(0), "max": s.max(0).values, "min": s.min(0).values}[op]


def r_tile(ctx, what, op, variant, dtype_name, tiles=3, launches=3, block=BLOCK):
    dtype, w, r = getattr(torch, dtype_name), ctx.get_num_ranks(), ctx.get_rank()
    ws = tile.Workspace(ctx, tiles, block, dtype)
    wide = what in ("scatter", "all_to_all")
    root = w - 1
    fails = []
    for launch in range(launches):
        xs = []
        for src in range(w):
            g = torch.Generator().manual_seed(1000 * launch + src)
            n = tiles * (w if wide else 1) * block
            t = torch.randint(-20, 20, (n,), generator=g) if dtype == torch.int32 else torch.randn(n, generator=g)
            xs.append(t.to(dtype))
        x = xs[r].to(ctx.get_device())
        out = torch.full((tiles * w * block,), -99, dtype=dtype, device=ctx.get_device())
        tile_kernel[(tiles,)](x, out, *ws.args(), r, w, ctx.get_heap_bases(), ROOT=root, WHAT=what, OP=op,
                              VARIANT=variant, BLOCK=block)
        got = out.view(tiles, w * block).double().cpu()
        X = [t.view(tiles, -1).double() for t in xs]
        want = got.clone()
        if what == "all_reduce":
            y = _combine(X, op)
            want[:, :block] = y
            want[:, block:2 * block] = _combine([y] * w, op)
        elif what in ("all_gather", "gather"):
            if what == "all_gather" or r == root:
                want = torch.cat(X, 1)
        elif what == "reduce_scatter":
            size = -(-(-(-block // w)) // 8) * 8  # noqa: B002  (ceil(block / w), rounded up to a multiple of 8)
            lo, hi = min(r * size, block), min((r + 1) * size, block)
            want[:, :hi - lo] = _combine(X, op)[:, lo:hi]
        elif what == "broadcast":
            want[:, :block] = X[root]
        elif what == "reduce":
            want[:, :block] = _combine(X, op) if r == root else X[r]
        elif what == "scatter":
            want[:, :block] = X[root][:, r * block:(r + 1) * block]
        elif what == "all_to_all":
            want = torch.cat([X[s][:, r * block:(r + 1) * block] for s in range(w)], 1)
        else:
            want[:, :block] = X[(r - 1) % w] * 3
        tol = 2e-2 if dtype == torch.float16 else 1e-5
        if not torch.allclose(got, want, rtol=tol, atol=tol):
            fails.append(f"launch {launch}: {int((~torch.isclose(got, want, rtol=tol, atol=tol)).sum())} wrong")
    ctx.barrier()
    return fails


CASES = ([("all_reduce", op, v) for v in ("one_shot", "two_shot", "ring") for op in ("sum", "max")] +
         [("all_reduce", "sum", "atomic"), ("all_gather", "sum", "-"), ("reduce_scatter", "sum", "-"),
          ("reduce_scatter", "min", "-"), ("broadcast", "sum", "-"), ("reduce", "sum", "-"), ("gather", "sum", "-"),
          ("scatter", "sum", "-"), ("all_to_all", "sum", "-"), ("send_recv", "sum", "-")])


@pytest.mark.parametrize("what,op,variant", CASES, ids=[f"{w}-{o}-{v}" for w, o, v in CASES])
def test_tile_collective(ranks, what, op, variant):
    for fails in ranks.run(r_tile, what, op, variant, "float32"):
        assert fails == [], fails


@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_tile_all_reduce_dtypes(ranks2, dtype):
    for variant in ("one_shot", "two_shot", "ring"):
        for fails in ranks2.run(r_tile, "all_reduce", "sum", variant, dtype):
            assert fails == [], (variant, fails)


def test_tile_chunks_round_to_8_elements(ranks):
    # 16-element blocks: on 4 ranks a chunk is 8 elements, not 4 (chunks of 8 keep masked stores 16 bytes wide), so
    # ranks 2 and 3 own empty chunks; every chunked variant must still be right.
    for what, op, variant in (("reduce_scatter", "sum", "-"), ("all_reduce", "sum", "two_shot"),
                              ("all_reduce", "max", "ring")):
        for fails in ranks.run(r_tile, what, op, variant, "float32", 2, 2, 16):
            assert fails == [], (what, variant, fails)
