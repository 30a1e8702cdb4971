"""The reference's quick start (seed 002), launch adapted: NCCL when every rank has a GPU of its own, gloo on the
CPU backend and where ranks share a GPU. The kernel and the Iris calls are unchanged."""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import iris  # before the kernel: on a machine without a GPU it switches Triton's interpreter on
import triton
import triton.language as tl


# Device-side APIs
@triton.jit
def kernel(buffer, buffer_size: tl.constexpr, block_size: tl.constexpr, heap_bases_ptr):
    # Compute start index of this block
    pid = tl.program_id(0)
    block_start = pid * block_size
    offsets = block_start + tl.arange(0, block_size)

    # Guard for out-of-bounds accesses
    mask = offsets < buffer_size

    # Store 1 in the target buffer at each offset
    source_rank = 0
    target_rank = 1
    iris.store(buffer + offsets, 1, source_rank, target_rank, heap_bases_ptr, mask=mask)


def _worker(rank, world_size, port):
    # Torch distributed initialization (adapted: NCCL with one GPU per rank; gloo on the CPU backend and where ranks
    # share a GPU, which NCCL refuses with "Duplicate GPU detected"; iris itself needs only host collectives)
    if iris.BACKEND == "cuda" and torch.cuda.device_count() >= world_size:
        device_id = rank % torch.cuda.device_count()
        dist.init_process_group(backend="nccl", rank=rank, world_size=world_size,
                                init_method=f"tcp://127.0.0.1:{port}", device_id=torch.device(f"cuda:{device_id}"))
    else:
        if iris.BACKEND == "cuda":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(backend="gloo", rank=rank, world_size=world_size,
                                init_method=f"tcp://127.0.0.1:{port}")

    # Iris initialization
    heap_size = 2**30  # 1GiB symmetric heap for inter-GPU communication
    iris_ctx = iris.iris(heap_size)
    cur_rank = iris_ctx.get_rank()

    # Iris tensor allocation
    buffer_size = 4096  # 4K elements buffer
    buffer = iris_ctx.zeros(buffer_size, device="cuda", dtype=torch.float32)

    # Launch the kernel on rank 0
    block_size = 1024
    grid = lambda meta: (triton.cdiv(buffer_size, meta["block_size"]),)  # noqa: E731
    source_rank = 0
    if cur_rank == source_rank:
        kernel[grid](
            buffer,
            buffer_size,
            block_size,
            iris_ctx.get_heap_bases(),
        )

    # Synchronize all ranks
    iris_ctx.barrier()
    if cur_rank == 1:  # (added) show and check what rank 0 stored
        ok = bool(torch.all(buffer == 1))
        print(f"rank 1 received {int(buffer.sum().item())} ones from rank 0: {'OK' if ok else 'WRONG'}", flush=True)
        if not ok:
            sys.exit(1)
    iris_ctx.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    world_size = 2  # Using two ranks
    mp.spawn(_worker, args=(world_size, iris.distributed.free_port()), nprocs=world_size, join=True)
