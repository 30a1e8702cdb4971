"""2-D parallel training step: tensor parallelism inside each node (fused_ops.nn layers on a node-local heap), data
parallelism across nodes (gradients averaged by iris's hierarchical all-reduce), checked against one process training
the whole model on the whole batch: the loss and every gradient, for a few SGD steps.

    python examples/tp_dp_2d.py                                   # 4 ranks as 2 simulated nodes x 2 (iris.spawn)
    torchrun --nnodes 2 --nproc_per_node 2 ... examples/tp_dp_2d.py   # the same code on real nodes
    mpirun -n 4 python examples/tp_dp_2d.py                       # (one node: then tp = the whole node)
    mpiexec -n 2 -env IRIS_HOSTNAME a python examples/tp_dp_2d.py : \\
            -n 2 -env IRIS_HOSTNAME b python examples/tp_dp_2d.py  # MPICH: 2 simulated hosts

Layout (the usual DeviceMesh (dp, tp) with TP innermost): the ranks of one node form a TP group, holding one replica
of the model sharded over them; rank i of every node forms DP group i. Each replica trains on its own slice of the
batch; the TP shards' gradients are averaged over their DP group.
"""

import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
from fused_ops.nn import ColumnParallelLinear, RowParallelLinear  # noqa: E402

HIDDEN, TOKENS, STEPS, LR = 16, 8, 3, 0.1


def full_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))


def batch(step, replicas):
    """The global batch of a step: replicas x TOKENS rows (inputs, targets); replica d trains on slice d."""
    g = torch.Generator().manual_seed(1000 + step)
    return (torch.randn(replicas * TOKENS, HIDDEN, generator=g), torch.randn(replicas * TOKENS, HIDDEN, generator=g))


def train(ctx, dp_heap=1 << 20, steps=STEPS):
    """ctx: an iris.multi_node context over the job (ctx.local: this node's heap, the TP group). Returns the worst
    relative error of the losses and gradients against the single-process reference."""
    tp = ctx.local
    # DP group: the ranks with this rank's local index, one per node (collective over it only).
    dp = iris.multi_node(dp_heap, group=ctx.cross_ranks)
    t, tw, d, dw = tp.get_rank(), tp.get_num_ranks(), dp.get_rank(), dp.get_num_ranks()
    dev = tp.get_device()
    ref = full_model().double()
    fc1, fc2 = full_model()[::2]
    model = nn.Sequential(ColumnParallelLinear(tp, fc1.to(dev), gather_input=False), nn.GELU(),
                          RowParallelLinear(tp, fc2.to(dev), reduce="all")).to(dev)
    f1 = slice(t * 4 * HIDDEN // tw, (t + 1) * 4 * HIDDEN // tw)  # this TP rank's rows of fc1 / columns of fc2
    worst = 0.0
    for step in range(steps):
        x, y = batch(step, dw)
        mine = slice(d * TOKENS, (d + 1) * TOKENS)
        loss = nn.functional.mse_loss(model(x[mine].to(dev)), y[mine].to(dev))
        loss.backward()
        for p in model.parameters():  # DP: average each shard's gradient over the replicas
            iris.collectives.all_reduce(dp, p.grad, variant="hierarchical")
            p.grad /= dw
        mean_loss = loss.detach().clone().reshape(1)
        iris.collectives.all_reduce(dp, mean_loss)
        mean_loss /= dw
        want = nn.functional.mse_loss(ref(x.double()), y.double())  # the whole batch, one process
        want.backward()
        pairs = [("loss", mean_loss, want.reshape(1)),
                 ("fc1.weight.grad", model[0].weight.grad, ref[0].weight.grad[f1]),
                 ("fc1.bias.grad", model[0].bias.grad, ref[0].bias.grad[f1]),
                 ("fc2.weight.grad", model[2].weight.grad, ref[2].weight.grad[:, f1]),
                 ("fc2.bias.grad", model[2].bias.grad, ref[2].bias.grad)]
        for name, got, expect in pairs:
            err = ((got.double().cpu() - expect).norm() / expect.norm()).item()
            if not err < (3e-2 if ctx.backend == "cuda" else 1e-4):
                raise AssertionError(f"step {step}: {name} relative error {err} (rank {ctx.get_rank()})")
            worst = max(worst, err)
        with torch.no_grad():  # the same SGD step on both
            for m in (model, ref):
                for p in m.parameters():
                    p -= LR * p.grad
                    p.grad = None
    dp.close()
    return worst


def main(ctx):
    worst = train(ctx)
    if ctx.get_rank() == 0:
        print(f"{ctx.num_nodes} node(s) x {ctx.local_size} ranks: TP {ctx.local_size} x DP {ctx.num_nodes}, "
              f"{STEPS} steps; worst relative error of loss and gradients vs one process: {worst:.1e}", flush=True)
    return worst


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--num_ranks", type=int, default=4)
    p.add_argument("--nodes", type=int, default=2, help="simulated nodes (iris.spawn only)")
    p.add_argument("--heap_size", type=int, default=64 << 20)
    args = p.parse_args()
    if iris.distributed.launched():  # torchrun / mpirun: one process per rank, real (or IRIS_HOSTNAME) hosts
        main(iris.multi_node(args.heap_size))
    else:
        gpus = torch.cuda.device_count() if iris.BACKEND == "cuda" else args.num_ranks
        if gpus < args.num_ranks:  # the cross-node all-reduce runs on NCCL, which refuses ranks sharing a GPU
            raise SystemExit(f"-n {args.num_ranks}: this machine has {gpus} GPU(s) and the cross-node part runs on "
                             f"NCCL, which needs one GPU per rank; run -n {gpus} --nodes {min(args.nodes, gpus)}, "
                             f"or IRIS_BACKEND=cpu for {args.num_ranks} ranks")
        iris.spawn(main, args.num_ranks, heap_size=args.heap_size, nodes=args.nodes)
