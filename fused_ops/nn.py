"""Tensor-parallel linear layers on the fused ops, built from ordinary nn.Linear layers (each rank keeps its shard).

Sequence-parallel pair (the Megatron-LM layout; activations between blocks are split by rows, i.e. tokens):
    ColumnParallelLinear(gather_input=True)   x: M/world rows  -> all_gather_gemm       -> y: M x out/world
    RowParallelLinear(reduce="scatter")       x: M x in/world  -> gemm_reduce_scatter   -> y: M/world x out
Replicated-activation pair:
    ColumnParallelLinear(gather_input=False)  x: M (replicated) -> local GEMM            -> y: M x out/world
    RowParallelLinear(reduce="all")           x: M x in/world   -> gemm_all_reduce       -> y: M x out (replicated)
Backward passes use the dual fused op: all_gather_gemm's input gradient is a gemm_reduce_scatter and vice versa; the
replicated column layer's input gradient is a gemm_all_reduce. Leading dimensions are flattened into M.
"""

import torch
import torch.distributed as dist
from torch import nn


from . import library


def _shard(t, dim, rank, world):
    size = t.shape[dim]
    if size % world:
        raise ValueError(f"cannot split dimension {dim} of size {size} over {world} ranks")
    return t.detach().narrow(dim, rank * (size // world), size // world).clone()


class _ReplicatedInputLinear(torch.autograd.Function):
    """y = x @ w.t() locally; backward: grad_x summed over ranks (each rank holds only its columns' share), fused."""

    @staticmethod
    def forward(x, w, variant, handle):
        return x @ w.t()

    @staticmethod
    def setup_context(c, inputs, output):
        x, w, c.variant, c.handle = inputs
        c.save_for_backward(x, w)

    @staticmethod
    def backward(c, grad):
        x, w = c.saved_tensors
        grad_x = torch.ops.fused_ops.gemm_all_reduce(grad.contiguous(), w, library._dual(c.variant, "gemm_all_reduce"),
                                                     c.handle)
        return grad_x, grad.t() @ x, None, None


# The process group of each layer's context, by context handle: filled when a layer is built (outside any compiled
# region), so that backward passes traced by torch.compile find the group with a plain dict lookup.
_GROUPS = {}


class _SumGradOverRanks(torch.autograd.Function):
    """Identity forward; all-reduce of the gradient (a replicated bias fed only this rank's rows)."""

    @staticmethod
    def forward(t, handle):
        return t.view_as(t)

    @staticmethod
    def setup_context(c, inputs, output):
        c.handle = inputs[1]

    @staticmethod
    def backward(c, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=_GROUPS[c.handle])  # over the layer's group, not the world
        return grad, None


class _TPLinear(nn.Module):
    def __init__(self, ctx, weight, bias, variant):
        super().__init__()
        self.ctx, self.variant = ctx, variant
        _GROUPS[ctx.handle] = ctx.group
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias) if bias is not None else None

    def _flat(self, x):
        if x.shape[-1] != self.weight.shape[1]:
            raise ValueError(f"{type(self).__name__}: input's last dimension is {x.shape[-1]}, expected "
                             f"{self.weight.shape[1]} (this rank's in_features)")
        return x.reshape(-1, x.shape[-1])


class ColumnParallelLinear(_TPLinear):
    """This rank's out_features/world output columns of `linear` (weight rows and bias entries sharded by rank)."""

    def __init__(self, ctx, linear, gather_input=True, variant="auto"):
        rank, world = ctx.get_rank(), ctx.get_num_ranks()
        bias = None if linear.bias is None else _shard(linear.bias, 0, rank, world)
        super().__init__(ctx, _shard(linear.weight, 0, rank, world), bias, variant)
        self.gather_input = gather_input

    def forward(self, x):
        x2 = self._flat(x)
        if self.gather_input:
            y = library.all_gather_gemm(self.ctx, x2, self.weight.t(), self.variant)
        else:
            y = _ReplicatedInputLinear.apply(x2, self.weight, self.variant, self.ctx.handle)
        if self.bias is not None:
            y = y + self.bias
        lead = (-1,) if self.gather_input else x.shape[:-1]
        return y.reshape(*lead, y.shape[-1])


class RowParallelLinear(_TPLinear):
    """Input features sharded by rank (weight columns); the partial products are summed over ranks: into every
    rank (reduce="all") or into each rank's M/world rows (reduce="scatter"). The bias is added once, after the sum."""

    def __init__(self, ctx, linear, reduce="scatter", variant="auto"):
        if reduce not in ("scatter", "all"):
            raise ValueError(f"reduce={reduce!r}: expected 'scatter' (sequence parallel) or 'all'")
        rank, world = ctx.get_rank(), ctx.get_num_ranks()
        bias = None if linear.bias is None else linear.bias.detach().clone()
        super().__init__(ctx, _shard(linear.weight, 1, rank, world), bias, variant)
        self.reduce = reduce

    def forward(self, x):
        x2 = self._flat(x)
        if self.reduce == "all":
            y = library.gemm_all_reduce(self.ctx, x2, self.weight.t(), self.variant)
            bias = self.bias
        else:
            y = library.gemm_reduce_scatter(self.ctx, x2, self.weight.t(), self.variant)
            bias = None if self.bias is None else _SumGradOverRanks.apply(self.bias, self.ctx.handle)
        if bias is not None:
            y = y + bias
        lead = x.shape[:-1] if self.reduce == "all" else (-1,)
        return y.reshape(*lead, y.shape[-1])


from .nn_moe import MoE  # noqa: E402,F401  (expert parallelism: fused_ops/nn_moe.py)
