"""The catalog as PyTorch operators: torch.ops.fused_ops.{gemm_all_scatter, gemm_all_reduce, all_gather_gemm,
gemm_reduce_scatter}, with fake (meta) kernels and autograd, usable eagerly, under torch.compile(fullgraph=True) and
inside CUDA graph capture; and torch.ops.fused_ops.all_reduce_rmsnorm (a tensor-parallel layer's exit, for
inference: no autograd).

    import fused_ops.library as fl
    y = fl.gemm_all_reduce(ctx, x, w.t())             # variant="auto"
    y = fl.all_gather_gemm(ctx, x_rows, w_shard.t(), variant="push")

Operands may be any strides (a weight's `.t()` goes through TMA descriptors over the N x K storage). Outputs are
fresh tensors: ops whose output must live on the symmetric heap compute into a per-shape heap buffer and return a
copy of it, so the caller may keep it across calls. Each operator carries its context as `ctx.handle`.

Graph capture: the first call of each shape creates the op's heap workspace, which needs a host barrier; make it
before capturing (the usual warm-up). After that a call allocates nothing on the heap, never synchronizes the host,
and reads its call counter on the device, so every replay is a fresh, correct call.

Autograd uses each op's dual: all_gather_gemm <-> gemm_reduce_scatter, gemm_all_scatter -> gemm_all_reduce, and
gemm_all_reduce needs no communication backwards. Replicated outputs (gemm_all_scatter, gemm_all_reduce) assume the
incoming gradient is the same on every rank, as it is when every rank computes the same loss from them.
"""

import torch
from torch import Tensor

import iris
from . import ops, registry

NAMESPACE = "fused_ops"


def _heap_out(ctx, op, shape, dtype):
    return ctx.workspace(("torch_op_out", op, tuple(shape), dtype), lambda c: c.empty(*shape, dtype=dtype))


def _dual(variant, op):
    """The backward's variant: the same name where the dual op has it (torch_nccl stays torch_nccl), else auto."""
    return variant if variant in registry.OPS[op].variants else "auto"


def _world(handle):
    return iris.context(handle).get_num_ranks()


# ---------------------------------------------------------------------------------------------- operators
@torch.library.custom_op(f"{NAMESPACE}::gemm_all_scatter", mutates_args=())
def _gemm_all_scatter(a: Tensor, b: Tensor, variant: str, ctx: int) -> Tensor:
    cx = iris.context(ctx)
    out = _heap_out(cx, "gemm_all_scatter", (a.shape[0], b.shape[1] * cx.get_num_ranks()), a.dtype)
    return ops.gemm_all_scatter(cx, a, b, out, variant=variant).clone()


@torch.library.custom_op(f"{NAMESPACE}::gemm_all_reduce", mutates_args=())
def _gemm_all_reduce(a: Tensor, b: Tensor, variant: str, ctx: int) -> Tensor:
    cx = iris.context(ctx)
    out = _heap_out(cx, "gemm_all_reduce", (a.shape[0], b.shape[1]), a.dtype)
    return ops.gemm_all_reduce(cx, a, b, out, variant=variant).clone()


@torch.library.custom_op(f"{NAMESPACE}::all_gather_gemm", mutates_args=())
def _all_gather_gemm(a: Tensor, b: Tensor, variant: str, ctx: int, return_gathered: bool) -> tuple[Tensor, Tensor]:
    cx = iris.context(ctx)
    m = a.shape[0] * cx.get_num_ranks()
    c = torch.empty(m, b.shape[1], dtype=a.dtype, device=a.device)
    g = torch.empty((m, a.shape[1]) if return_gathered else (0,), dtype=a.dtype, device=a.device)
    ops.all_gather_gemm(cx, a.contiguous(), b, c, variant=variant, a_gathered=g if return_gathered else None)
    return c, g


@torch.library.custom_op(f"{NAMESPACE}::gemm_reduce_scatter", mutates_args=())
def _gemm_reduce_scatter(a: Tensor, b: Tensor, variant: str, ctx: int) -> Tensor:
    cx = iris.context(ctx)
    c = torch.empty(a.shape[0] // cx.get_num_ranks(), b.shape[1], dtype=a.dtype, device=a.device)
    return ops.gemm_reduce_scatter(cx, a, b, c, variant=variant)


@torch.library.custom_op(f"{NAMESPACE}::all_reduce_rmsnorm", mutates_args=())
def _all_reduce_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor, eps: float, variant: str,
                        ctx: int) -> tuple[Tensor, Tensor]:
    from iris import collectives

    new_residual, out = residual.contiguous().clone(), torch.empty_like(x, memory_format=torch.contiguous_format)
    collectives.all_reduce_rmsnorm(iris.context(ctx), x.contiguous(), new_residual, weight.contiguous(), eps=eps,
                                   variant=variant, out=out)
    return out, new_residual


# ---------------------------------------------------------------------------------------------- fake kernels
@_gemm_all_scatter.register_fake
def _(a, b, variant, ctx):
    return a.new_empty(a.shape[0], b.shape[1] * _world(ctx))


@_gemm_all_reduce.register_fake
def _(a, b, variant, ctx):
    return a.new_empty(a.shape[0], b.shape[1])


@_all_gather_gemm.register_fake
def _(a, b, variant, ctx, return_gathered):
    m = a.shape[0] * _world(ctx)
    return a.new_empty(m, b.shape[1]), a.new_empty((m, a.shape[1]) if return_gathered else (0,))


@_gemm_reduce_scatter.register_fake
def _(a, b, variant, ctx):
    return a.new_empty(a.shape[0] // _world(ctx), b.shape[1])


@_all_reduce_rmsnorm.register_fake
def _(x, residual, weight, eps, variant, ctx):
    return x.new_empty(x.shape), residual.new_empty(residual.shape)


# ---------------------------------------------------------------------------------------------- autograd
def _save_ab(ctx, inputs, output):
    a, b, variant, handle = inputs[:4]
    ctx.save_for_backward(a, b)
    ctx.variant, ctx.handle = variant, handle


def _save_gathered(ctx, inputs, output):
    _, b, ctx.variant, ctx.handle, _ = inputs
    ctx.save_for_backward(b, output[1])
    ctx.mark_non_differentiable(output[1])  # a copy of the inputs for the backward pass, not a result to train on


def _scatter_backward(ctx, grad):
    a, b = ctx.saved_tensors
    cx = iris.context(ctx.handle)
    n_l = b.shape[1]
    mine = grad[:, cx.get_rank() * n_l:(cx.get_rank() + 1) * n_l]
    grad_a = _gemm_all_reduce(mine.contiguous(), b.t(), _dual(ctx.variant, "gemm_all_reduce"), ctx.handle)
    return grad_a, a.t() @ mine, None, None


def _all_reduce_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return grad @ b.t(), a.t() @ grad, None, None


def _all_gather_backward(ctx, grad_c, grad_g):
    b, gathered = ctx.saved_tensors
    if gathered.numel() == 0:
        raise RuntimeError("all_gather_gemm backward needs the gathered A: call it through "
                           "fused_ops.library.all_gather_gemm (which asks for it when gradients are needed)")
    grad_a = _gemm_reduce_scatter(grad_c.contiguous(), b.t(), _dual(ctx.variant, "gemm_reduce_scatter"), ctx.handle)
    return grad_a, gathered.t() @ grad_c, None, None, None


def _reduce_scatter_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a, full = _all_gather_gemm(grad.contiguous(), b.t(), _dual(ctx.variant, "all_gather_gemm"), ctx.handle, True)
    return grad_a, a.t() @ full, None, None


_gemm_all_scatter.register_autograd(_scatter_backward, setup_context=_save_ab)
_gemm_all_reduce.register_autograd(_all_reduce_backward, setup_context=_save_ab)
_all_gather_gemm.register_autograd(_all_gather_backward, setup_context=_save_gathered)
_gemm_reduce_scatter.register_autograd(_reduce_scatter_backward, setup_context=_save_ab)


# ---------------------------------------------------------------------------------------------- front doors
def gemm_all_scatter(ctx, a, b, variant="auto"):
    """C (M x N, on every rank) = A @ [B_0 | B_1 | ...]; a: M x K (the same on every rank), b: K x N/world."""
    return torch.ops.fused_ops.gemm_all_scatter(a, b, variant, ctx.handle)


def gemm_all_reduce(ctx, a, b, variant="auto"):
    """C (M x N, on every rank) = sum over ranks of a @ b; a: M x K/world, b: K/world x N."""
    return torch.ops.fused_ops.gemm_all_reduce(a, b, variant, ctx.handle)


def all_gather_gemm(ctx, a, b, variant="auto", return_gathered=False):
    """gather(a) @ b (M x N/world); a: M/world x K rows, b: K x N/world. With return_gathered, also gather(a).
    The gathered A is kept for the backward pass whenever gradients are needed."""
    need = return_gathered or (torch.is_grad_enabled() and (a.requires_grad or b.requires_grad))
    c, g = torch.ops.fused_ops.all_gather_gemm(a, b, variant, ctx.handle, need)
    return (c, g) if return_gathered else c


def gemm_reduce_scatter(ctx, a, b, variant="auto"):
    """This rank's M/world rows of sum over ranks of a @ b; a: M x K/world, b: K/world x N."""
    return torch.ops.fused_ops.gemm_reduce_scatter(a, b, variant, ctx.handle)


def all_reduce_rmsnorm(ctx, x, residual, weight, eps=1e-6, variant="auto"):
    """(out, new residual) of iris.collectives.all_reduce_rmsnorm as a functional operator: fresh outputs, inputs
    untouched, for torch.compile and CUDA graphs (one copy of the residual more than the in-place call). Inference
    only: it has no autograd."""
    return torch.ops.fused_ops.all_reduce_rmsnorm(x, residual, weight, float(eps), variant, ctx.handle)
