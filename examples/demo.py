"""Two (or more) ranks exchange data through the symmetric heap: each rank puts a block into every peer, raises a
flag, waits for the peers' flags and sums what arrived. Then the same ranks one level up: a fused GEMM+AllReduce
as a PyTorch operator (variant "auto") and a host all-reduce, both checked against torch. Runs on GPUs (CUDA IPC)
or on the CPU backend.

    python examples/demo.py [--ranks 2]          # spawns local ranks
    torchrun --nproc-per-node 2 examples/demo.py  # or under torchrun / mpirun
"""

import argparse
import os

import torch

import iris
import triton
import triton.language as tl


@triton.jit
def exchange_kernel(mine, inbox, flags, epoch, cur_rank, world, heap_bases, N: tl.constexpr):
    offs = tl.arange(0, N)
    for peer in range(world):  # push my block into slot `cur_rank` of every peer's inbox, then raise its flag
        iris.put(mine + offs, inbox + cur_rank * N + offs, cur_rank, peer, heap_bases)
        iris.signal(flags + cur_rank, epoch, cur_rank, peer, heap_bases)
    for peer in range(world):
        iris.wait(flags + peer, epoch, cur_rank, heap_bases, cmp="ge")


def exchange(ctx, n=1024, rounds=3):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    mine = ctx.zeros(n, dtype=torch.float32)
    inbox = ctx.zeros(world, n, dtype=torch.float32)
    flags = ctx.zeros(world, dtype=torch.int32)
    ctx.barrier()
    for epoch in range(1, rounds + 1):
        mine.copy_(torch.full((n,), float(rank + 1) * epoch))
        exchange_kernel[(1,)](mine, inbox, flags, epoch, rank, world, ctx.get_heap_bases(), N=n)
        got = inbox.sum(dim=1).cpu()
        want = torch.tensor([float(p + 1) * epoch * n for p in range(world)])
        assert torch.equal(got, want), f"rank {rank} round {epoch}: {got} != {want}"
        ctx.barrier()  # nobody starts the next round before everyone has read this one
    return f"rank {rank}/{world} on {ctx.get_device()}: received {got.tolist()} in round {rounds} (OK)"


def one_level_up(ctx, m=64, n=64, k=64):
    """torch.ops.fused_ops.gemm_all_reduce and iris.collectives.all_reduce, against torch on all ranks' inputs."""
    import fused_ops.library as fl
    from iris import collectives

    rank, world, dev = ctx.get_rank(), ctx.get_num_ranks(), ctx.get_device()
    dtype = torch.bfloat16 if ctx.backend == "cuda" else torch.float32
    gen = torch.Generator().manual_seed(0)
    a = [torch.randn(m, k // world, generator=gen) for _ in range(world)]
    b = [torch.randn(k // world, n, generator=gen) for _ in range(world)]
    c = fl.gemm_all_reduce(ctx, a[rank].to(dev, dtype), b[rank].to(dev, dtype))
    want = sum(x.double() @ y.double() for x, y in zip(a, b))
    err = ((c.double().cpu() - want).norm() / want.norm()).item()
    x = ctx.full((1000,), float(rank + 1))
    collectives.all_reduce(ctx, x)
    ok = err < 2e-2 and bool((x == world * (world + 1) / 2).all())
    assert ok, f"rank {rank}: GEMM+AllReduce error {err}, all_reduce {x[:3].tolist()}"
    return f"rank {rank}: GEMM+AllReduce operator rel. error {err:.1e}, all_reduce of 1000 values (OK)"


def run(ctx):
    return [exchange(ctx), one_level_up(ctx)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-r", "--ranks", type=int, default=2)
    args = parser.parse_args()
    if "RANK" in os.environ or "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ:
        print("\n".join(run(iris.iris(1 << 26))), flush=True)
        return
    print(f"iris demo: {args.ranks} ranks on the {iris.BACKEND} backend")
    for lines in iris.spawn(run, args.ranks, heap_size=1 << 26):
        for line in lines:
            print(" ", line)


if __name__ == "__main__":
    main()
