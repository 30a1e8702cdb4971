"""One process, every device: a row-partitioned matmul C = A @ B launched on all devices at once with iris.Grid,
then an in-kernel all-gather of C through partitioned-tensor indexing (each device reads every global row from the
device that owns it). Runs on all visible GPUs, or on 3 simulated devices under the CPU backend.

    python examples/device_grid.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402  (before triton: on a machine without a GPU it switches Triton's interpreter on)
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@iris.jit
def matmul_rows(A, B, C, rows, N, K, cur_rank, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """This device's rows of C = A @ B (A and C partitioned by rows, B the same on every device)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < rows) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < rows) & (rn[None, :] < N))


@iris.jit
def gather_rows(C, FULL, M, N, shard_rows, cur_rank, heap_bases, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """FULL (every device) <- all of C, each global row read from the device that owns it."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    rows = iris.partition.global_ptr(C, tl.minimum(rm, M - 1), shard_rows, N, cur_rank, heap_bases)
    tl.store(FULL + rm[:, None] * N + rn[None, :], tl.load(rows[:, None] + rn[None, :], mask=mask), mask=mask)


def main():
    group = iris.DeviceGroup(None if iris.BACKEND == "cuda" else 3)
    M, N, K = 200, 64, 96
    torch.manual_seed(0)
    a_full, b_full = torch.randn(M, K), torch.randn(K, N)
    A = group.partitioned((M, K), dim=0).copy_from(a_full)
    C = group.partitioned((M, N), dim=0)
    B, FULL = group.zeros(K, N), group.zeros(M, N)
    for shard in B.shards:
        shard.copy_(b_full)
    rows = A.shard_size  # padded shards: the kernel masks with the global size below
    grid = iris.Grid((triton.cdiv(rows, 32), triton.cdiv(N, 32)), devices=group)
    matmul_rows[grid](A, B, C, rows, N, K, iris.DEVICE_ID, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    group.synchronize()
    iris.Grid((triton.cdiv(M, 32),), devices=group).launch(
        gather_rows, C, FULL, M, N, C.shard_size, iris.DEVICE_ID, iris.HEAP_BASES, BLOCK_M=32, BLOCK_N=64)
    group.synchronize()
    want = a_full.double() @ b_full.double()
    for d, full in enumerate(FULL.shards):
        err = ((full.cpu().double() - want).norm() / want.norm()).item()
        print(f"device {d} ({group.devices[d]}): owns rows {C.bounds(d)}, gathered C relative error {err:.1e}")
        assert err < 1e-2
    print(f"ok: {group.num_devices} devices, one launch each, from one process")


if __name__ == "__main__":
    main()
