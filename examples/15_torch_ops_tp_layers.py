"""15 · From kernels to models: the catalog as PyTorch operators (with autograd) and tensor-parallel layers.

Teaches: `fused_ops.library.gemm_all_reduce(ctx, a, b)` etc. (torch custom ops: usable under autograd and
torch.compile), and `fused_ops.nn.ColumnParallelLinear` / `RowParallelLinear`, which shard an ordinary `nn.Linear`.
A sequence-parallel MLP (tokens split over ranks; AllGather+GEMM in, GEMM+ReduceScatter out) is checked against the
single-device MLP, forward and input gradient.

    python examples/15_torch_ops_tp_layers.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
from torch import nn

import iris
from fused_ops import library
from fused_ops.nn import ColumnParallelLinear, RowParallelLinear


def main(ctx, tokens=16, hidden=16):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    dev = ctx.get_device()
    torch.manual_seed(15)  # the same model and input on every rank
    mlp = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden)).to(dev)
    x = torch.randn(tokens, hidden, device=dev)
    # float32 GEMMs: exact on the CPU; TF32 tensor cores on GPUs (10-bit mantissas), as torch.matmul may use
    tol = dict(atol=1e-4, rtol=1e-3) if dev.type == "cpu" else dict(atol=2e-2, rtol=2e-2)

    # 1. An operator: C = sum over ranks of A_r @ B_r (K split), differentiable.
    kl = hidden // world
    a = x[:, rank * kl:(rank + 1) * kl].clone().requires_grad_(True)
    w = mlp[0].weight.detach().t()[rank * kl:(rank + 1) * kl].contiguous()
    c = library.gemm_all_reduce(ctx, a, w)
    assert torch.allclose(c, x @ mlp[0].weight.detach().t(), **tol)
    c.sum().backward()
    assert torch.allclose(a.grad, torch.ones_like(c) @ w.t(), **tol)

    # 2. Layers: this rank's tokens in, this rank's tokens out; the weights are sharded inside the layers.
    rows = slice(rank * tokens // world, (rank + 1) * tokens // world)
    tp = nn.Sequential(ColumnParallelLinear(ctx, mlp[0], gather_input=True), nn.GELU(),
                       RowParallelLinear(ctx, mlp[2], reduce="scatter"))
    x_mine = x[rows].clone().requires_grad_(True)
    y_mine = tp(x_mine)
    x_ref = x.clone().requires_grad_(True)
    y_ref = mlp(x_ref)
    assert torch.allclose(y_mine, y_ref[rows], **tol)
    # The layers' backward all-reduces the replicated bias's gradient through torch.distributed, whose NCCL refuses
    # ranks that share one GPU: there the forward is the whole check.
    shared_gpu = dev.type == "cuda" and ctx.ranks_per_device > 1
    if not shared_gpu:
        y_mine.square().sum().backward()
        y_ref.square().sum().backward()  # the sum over all ranks' tokens: each rank's share of it is its rows
        assert torch.allclose(x_mine.grad, x_ref.grad[rows], **tol)
    ctx.barrier()
    if rank == 0:
        print(f"ok: gemm_all_reduce as a torch op (forward, backward) and a {world}-way sequence-parallel MLP"
              f"{' (forward only: ranks share a GPU)' if shared_gpu else ''}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
