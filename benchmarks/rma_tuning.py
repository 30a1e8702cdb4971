"""Exploration behind benchmarks/rma.py's choices (kept so the numbers in BENCHMARK_NOTES can be re-made):
remote put/get at 256 MiB over grid sizes, cache hints and TMA (bulk tensor) stores into the peer; ping-pong poll
variants. Prints a table; no CSV."""

import torch

import iris
import triton
import triton.language as tl

from benchmarks.rma import time_us


@triton.jit
def put_plain(src, dst, n, cur, peer, heap_bases, BLOCK: tl.constexpr, HINT: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(src + offs)
        remote = iris.translate(dst + offs, cur, peer, heap_bases)
        if HINT == "cs":
            tl.store(remote, x, cache_modifier=".cs")
        elif HINT == "wt":
            tl.store(remote, x, cache_modifier=".wt")
        else:
            tl.store(remote, x)


@triton.jit
def get_plain(src, dst, n, cur, peer, heap_bases, BLOCK: tl.constexpr, HINT: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        remote = iris.translate(src + offs, cur, peer, heap_bases)
        if HINT == "cg":
            x = tl.load(remote, cache_modifier=".cg")
        else:
            x = tl.load(remote)
        tl.store(dst + offs, x)


@triton.jit
def put_tma(src, dst, rows, cur, peer, heap_bases, BR: tl.constexpr, W: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    remote = iris.translate(dst, cur, peer, heap_bases)
    sd = tl.make_tensor_descriptor(src, shape=[rows, W], strides=[W, 1], block_shape=[BR, W])
    dd = tl.make_tensor_descriptor(remote, shape=[rows, W], strides=[W, 1], block_shape=[BR, W])
    for r in range(pid * BR, rows, nprog * BR):
        dd.store([r, 0], sd.load([r, 0]))


@triton.jit
def get_tma(src, dst, rows, cur, peer, heap_bases, BR: tl.constexpr, W: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    remote = iris.translate(src, cur, peer, heap_bases)
    sd = tl.make_tensor_descriptor(remote, shape=[rows, W], strides=[W, 1], block_shape=[BR, W])
    dd = tl.make_tensor_descriptor(dst, shape=[rows, W], strides=[W, 1], block_shape=[BR, W])
    for r in range(pid * BR, rows, nprog * BR):
        dd.store([r, 0], sd.load([r, 0]))


@triton.jit
def pingpong_variant(flags, iters, cur, heap_bases, POLL: tl.constexpr):
    peer = 1 - cur
    for i in range(1, iters + 1):
        if cur == 0:
            iris.signal(flags, i, cur, peer, heap_bases)
            if POLL == "iris":
                iris.wait(flags + 1, i, cur, heap_bases, cmp="ge")
            else:
                v = tl.atomic_add(flags + 1, 0, sem="acquire", scope="sys")
                while v < i:
                    v = tl.atomic_add(flags + 1, 0, sem="acquire", scope="sys")
        else:
            if POLL == "iris":
                iris.wait(flags, i, cur, heap_bases, cmp="ge")
            else:
                v = tl.atomic_add(flags, 0, sem="acquire", scope="sys")
                while v < i:
                    v = tl.atomic_add(flags, 0, sem="acquire", scope="sys")
            iris.signal(flags + 1, i, cur, peer, heap_bases)


def explore(ctx, nbytes):
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=ctx.get_device()))
    rank, peer, hb = ctx.get_rank(), 1 - ctx.get_rank(), ctx.get_heap_bases()
    n = nbytes // 4
    src = ctx.randn(n)
    dst = ctx.zeros(n)
    flags = ctx.zeros(2, dtype=torch.int32)
    lines = []
    ctx.barrier()
    if rank == 0:
        from benchmarks.rma import peer_view

        ce = time_us(lambda: peer_view(ctx, dst, n).copy_(src), 10)
        lines.append(f"copy_engine put {nbytes / ce / 1e3:.1f} GB/s")
        ce = time_us(lambda: dst.copy_(peer_view(ctx, src, n)), 10)
        lines.append(f"copy_engine get {nbytes / ce / 1e3:.1f} GB/s")
        for kern, hints in ((put_plain, ("none", "cs", "wt")), (get_plain, ("none", "cg"))):
            for hint in hints:
                for block, warps in ((8192, 8), (16384, 16), (4096, 4)):
                    for ctas in (33, 66, 132, 264):
                        t = time_us(lambda: kern[(ctas,)](src, dst, n, rank, peer, hb, BLOCK=block, HINT=hint,  # noqa
                                                          num_warps=warps), 10)
                        lines.append(f"{kern.__name__} hint={hint} BLOCK={block} warps={warps} ctas={ctas}: "
                                     f"{nbytes / t / 1e3:.1f} GB/s")
        for kern in (put_tma, get_tma):
            for br, w in ((32, 256), (64, 128), (16, 256)):
                for ctas in (33, 66, 132):
                    try:
                        t = time_us(lambda: kern[(ctas,)](src, dst, n // w, rank, peer, hb, BR=br, W=w,  # noqa
                                                          num_warps=4), 10)
                        lines.append(f"{kern.__name__} box={br}x{w} ctas={ctas}: {nbytes / t / 1e3:.1f} GB/s")
                    except Exception as err:
                        lines.append(f"{kern.__name__} box={br}x{w}: failed {str(err).splitlines()[0][:200]}")
        torch.cuda.synchronize()
    ctx.barrier()
    for poll in ("iris", "atomic"):
        for iters in (10, 3000):  # the first call compiles (on both ranks, at different speeds)
            flags.zero_()
            ctx.barrier()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            pingpong_variant[(1,)](flags, iters, rank, hb, POLL=poll, num_warps=1)
            b.record()
            b.synchronize()
            ctx.barrier()
        lines.append(f"pingpong poll={poll}: {a.elapsed_time(b) * 1e3 / iters:.2f} us round trip")
    return lines


if __name__ == "__main__":
    for line in iris.spawn(explore, 2, 256 << 20, heap_size=(512 << 20) + (64 << 20))[0]:
        print(line)
