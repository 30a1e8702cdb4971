"""20 · A tensor-parallel layer's exit in one kernel: all-reduce + residual add + RMSNorm.

Teaches: `iris.collectives.all_reduce_rmsnorm(ctx, partial, residual, weight)`. In a decoder block under tensor
parallelism, the attention or MLP output projection is row-parallel: each rank holds a partial sum of the output, and
the next step is all-reduce, add the residual stream, RMSNorm (vLLM's all_reduce then fused_add_rms_norm). Here all
three run in one kernel: each row goes through iris.tile's push inboxes (06_tile_collectives.py), is summed, added to
the residual (which keeps the sum for the next layer) and normalized, with no barrier and no other launch.

Checked against one process running the unsharded projection, the residual add and torch's RMSNorm.

    python examples/20_tp_layer_exit.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch

import iris
from iris import collectives as coll


def main(ctx, tokens=8, hidden=64, inner=128, eps=1e-6):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    dev = ctx.get_device()
    g = torch.Generator().manual_seed(20)  # the same model and activations on every rank
    act = torch.randn(tokens, inner, generator=g)                   # the MLP's inner activations
    w_down = torch.randn(inner, hidden, generator=g) / inner ** 0.5  # its down projection
    residual0 = torch.randn(tokens, hidden, generator=g)
    norm_weight = torch.rand(hidden, generator=g) + 0.5

    # Row-parallel: rank r holds rows r of the down projection's K dimension, so its product is a partial sum.
    k = inner // world
    partial = (act[:, rank * k:(rank + 1) * k].double() @ w_down[rank * k:(rank + 1) * k].double()).float().to(dev)
    residual = residual0.clone().to(dev)  # the residual stream: updated in place to partial sums + residual
    out = coll.all_reduce_rmsnorm(ctx, partial, residual, norm_weight.to(dev), eps=eps)  # in place, into partial

    want_residual = residual0.double() + act.double() @ w_down.double()
    want = torch.nn.functional.rms_norm(want_residual, (hidden,), norm_weight.double(), eps)
    assert out.data_ptr() == partial.data_ptr()
    assert torch.allclose(residual.cpu().double(), want_residual, atol=1e-4), "residual"
    assert torch.allclose(out.cpu().double(), want, atol=1e-4), "normalized output"
    ctx.barrier()
    if rank == 0:
        print(f"ok: all-reduce + residual + RMSNorm of {tokens} x {hidden} over {world} ranks in one kernel")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
