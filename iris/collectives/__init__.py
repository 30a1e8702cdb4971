"""Host-callable collectives on the symmetric heap: one Triton kernel per collective and variant (kernels.py).

    iris.collectives.all_reduce(ctx, x)                       # in place, sum, variant="auto"
    iris.collectives.all_reduce(ctx, x, op="max", variant="two_shot", out=y)
    iris.collectives.all_gather(ctx, out, x)                  # out: world * x.numel(), rank r's x at slice r
    iris.collectives.reduce_scatter(ctx, out, x, op="sum")    # x: world * out.numel(), rank r gets slice r reduced
    iris.collectives.all_to_all(ctx, out, x)                  # slice c of x goes to rank c, lands at slice `rank`
    iris.collectives.broadcast(ctx, x, src=0)
    work = iris.collectives.all_reduce(ctx, x, async_op=True); ...; work.wait()

Protocol, the same for every collective: program p of every rank tells program p of every rank it has entered
(ready flag = its call count), waits for all of them, moves its blocks, tells them it is done, waits until all are
done, then advances its own call count. The counts live on the device, one per program, so a call needs no host
synchronization and no other launch, and replays of a captured CUDA graph are fresh calls. Flags are only ever set to
a larger count, so nothing is re-zeroed and a flag from an earlier call never satisfies a later wait.

Variants of all_reduce:
- "push": iris.tile's one-shot. Every rank pushes its blocks into every rank's inbox and sums what arrived. There is
  no entry or exit barrier (the inbox is double-buffered by epoch), so this is the latency variant.
- "push_two_shot": two-shot through the same inboxes, a reduce-scatter then an all-gather of contiguous slices
  (iris.tile's strided pieces): rank r reduces slice r and pushes it to every rank. Each rank sends 2(w-1)/w of the
  tensor instead of push's w-1 times it, for a second flag round: meant for 4+ ranks and larger messages.
- "ring": iris.tile's ring, 2(w-1) steps of one chunk per block.
- "one_shot": after the entry barrier, every rank pulls the whole tensor from every rank and reduces it.
- "two_shot": rank r reduces blocks b with b % world == r and pushes the result to every rank (each program walks
  owned blocks only, so all programs of every rank work).
- "atomic": sum only; every rank atomically adds its blocks into every rank's buffer.
- "nccl": torch.distributed.
- "auto": push up to 1 MiB (2 ranks: 4 MiB), push_two_shot on 4+ ranks from 256 KiB to 4 MiB (2 ranks: 4-64 MiB),
  while their inboxes fit in half the free heap; above that two_shot, or nccl for a tensor that is not on the heap.
all_gather: "push" (through inboxes like all_reduce's push; the output may live anywhere) or "direct" (after the
entry barrier every rank stores its slice into every rank's output); "auto" pushes up to 1 MiB of output.
reduce_scatter: "push" (slice r into rank r's inbox; the input may live anywhere) or "pull" (after the entry barrier
every rank reads its slice from every rank's input); "auto" pushes up to 1 MiB of input.
all_to_all and broadcast: one kernel each, or "nccl".
"hierarchical" (all_reduce, all_gather, reduce_scatter; iris/hierarchical.py): for a group over several hosts
(an iris.multi_node context, where "auto" picks it): the node-local part through the heap, the cross-node part through
torch.distributed on the cross-node group. All host exchanges ("nccl" too) run over the context's group (ctx.group).

Inputs that peers read (all_reduce's x for one_shot/two_shot/atomic, reduce_scatter's x for pull, broadcast's
source) and outputs that peers write (all_gather's "direct" and all_to_all's out) must be on the heap. Other tensors
may live anywhere. Every rank makes the same calls with the same sizes. Collectives run on the current stream;
async_op=True runs them on a side stream and returns a handle whose wait() makes the current stream wait. At most
one async collective per context may be in flight at a time. The first call for a size creates its workspace,
which needs a host barrier; make that call before capturing a CUDA graph. Repeated eager calls on the same tensors
replay a captured launch (iris/replay.py), or from 1 MiB relaunch their kernel (iris/relaunch.py): a few µs of host
time instead of Triton's launch path.

Layout: kernels.py (the kernels and their shared entry/exit helpers), plan.py (config, checks, auto picks,
workspaces, launch arguments), this file (the front doors and the one prepared-call path, _call).
"""

import torch
import torch.distributed as dist

from .. import consistency
from ..distributed import all_gather_single
from ..replay import tensor_key
from . import kernels
from .plan import (  # noqa: F401  (_direct, _warps, ...: for tests and benchmarks)
    OPS,
    PUSH_MAX_BYTES,
    ROWS_MAX,
    VARIANTS,
    CollConfig,
    _acc,
    _auto_all_reduce,
    _barrier_launch,
    _block,
    _cdiv,
    _check,
    _direct,
    _hierarchical,
    _nccl_op,
    _overlaps,
    _programs,
    _push_launch,
    _rows_launch,
    _scratch,
    _warps,
)

__all__ = ["all_reduce", "all_reduce_rmsnorm", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
           "all_to_all_v", "CollConfig", "Work", "OPS", "VARIANTS", "PUSH_MAX_BYTES"]


class Work:
    """Handle of an async collective: wait() makes the current stream wait for it (CPU backend: already done)."""

    def __init__(self, event=None):
        self.event = event

    def wait(self):
        if self.event is not None:
            torch.cuda.current_stream().wait_event(self.event)
        return True

    def is_completed(self):
        return self.event is None or self.event.query()


# ---------------------------------------------------------------------------------------------- the one call path
def _call(ctx, signature, async_op, plan, args):
    """Every host collective's call: the call prepared for `signature` when there is one (no checks, no set-up: a
    direct relaunch or a graph replay, iris/replay.py), else plan() (the variant pick, the checks, the arguments)
    and its launch through the replay cache, offered as this signature's prepared call. plan(*args) returns
    (launch, result): a plan._Launch and what the call returns, or (None, result) where plan() ran the call itself
    (torch.distributed). Returns result, or a Work with async_op. (plan and args, not a closure: a closure's cells
    cost the prepared call about 0.2 µs.)"""
    sig, call = ctx.replay.lookup(signature)
    if call is not None:
        return call()
    launch, result = plan(*args)
    if launch is None:
        return result
    work = _run(ctx, launch, async_op, sig, result)
    return work if async_op else result


def _run(ctx, launch, async_op, sig, result):
    """launch() through the replay cache under launch.key, on the current stream or a side stream (_on_stream).
    With a signature, remember the call, so that the next call with the same signature skips the checks and the
    argument set-up (about 12 µs of host time) and becomes a direct relaunch of its one kernel (launch.direct(),
    iris.relaunch), or else a bare graph replay."""
    call = lambda: _on_stream(ctx, lambda: ctx.replay(launch.key, launch), launch.tensors, async_op)  # noqa: E731
    if sig is not None:
        if async_op:
            ctx.replay.prepare(sig, call)
        else:
            ctx.replay.prepare(sig, lambda: call() or result, key=launch.key, result=result, direct=launch.direct())
    return call()


_side_streams = {}


# _run finds _on_stream in this module's namespace: tests/faults.py injects faults by patching it here.
def _on_stream(ctx, launch, tensors, async_op):
    """launch() on the current stream, or on a side stream with a Work handle (async_op)."""
    if not async_op or ctx.backend == "cpu":
        launch()
        return Work() if async_op else None
    main = torch.cuda.current_stream()
    side = _side_streams.get(ctx.handle)  # per context: two contexts' async collectives never queue behind each other
    if side is None:
        side = _side_streams[ctx.handle] = torch.cuda.Stream(ctx.get_device())
    side.wait_stream(main)
    with torch.cuda.stream(side):
        launch()
        event = torch.cuda.Event()
        event.record(side)
    for t in tensors:
        t.record_stream(side)
    return Work(event)


# ---------------------------------------------------------------------------------------------- front doors
@consistency.guarded("all_reduce")
def all_reduce(ctx, tensor, op="sum", variant="auto", out=None, config=None, async_op=False):
    """Reduce `tensor` over ranks into `out` (default: in place). Returns `out` (or a Work with async_op)."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().all_reduce(ctx, tensor, op, variant, out, config, async_op)
    return _call(ctx, ("all_reduce", tensor_key(tensor), tensor_key(out), op, variant, config, async_op), async_op,
                 _all_reduce_plan, (ctx, tensor, op, variant, out, config, async_op))


def _all_reduce_plan(ctx, tensor, op, variant, out, config, async_op):
    out = tensor if out is None else out
    if variant == "auto" and isinstance(tensor, torch.Tensor):
        variant = _auto_all_reduce(ctx, tensor)
    heap = {} if variant in ("push", "push_two_shot", "ring") else {"tensor": "read"}
    _check(ctx, "all_reduce", variant, op, {"tensor": tensor, "out": out}, heap, (config, async_op))
    if out.shape != tensor.shape:
        raise ValueError(f"all_reduce: out has shape {tuple(out.shape)}, tensor {tuple(tensor.shape)}")
    if variant == "atomic" and ctx.backend == "cpu" and tensor.dtype == torch.float16:
        raise TypeError("all_reduce/atomic: float16 on the CPU backend is refused: the Triton interpreter's float16 "
                        "atomic add is not atomic across rank processes (use float32, or another variant)")
    if variant == "atomic" and (op != "sum" or tensor.dtype not in (torch.float32, torch.float16, torch.bfloat16,
                                                                    torch.int32)):
        raise ValueError(f"all_reduce/atomic supports op='sum' on float32, float16, bfloat16 and int32 only (got "
                         f"op={op!r}, {tensor.dtype}); use one_shot, two_shot or nccl")
    if variant == "nccl":
        if out is not tensor:
            out.copy_(tensor)
        work = dist.all_reduce(out, op=_nccl_op(op), group=ctx.group, async_op=async_op)
        return None, work if async_op else out
    n = tensor.numel()
    if variant == "push_two_shot":  # its programs cover one rank's slice, 16-element aligned
        span = _cdiv(_cdiv(n, ctx.get_num_ranks()), 16) * 16
        return _push_launch(ctx, kernels.push_two_shot_kernel, tensor, out, span, config, async_op, (n,), OP=op), out
    if variant in ("push", "ring"):
        return _push_launch(ctx, kernels.push_all_reduce_kernel, tensor, out, n, config, async_op, OP=op,
                            VARIANT="one_shot" if variant == "push" else "ring"), out
    if variant == "one_shot":
        staged = out.data_ptr() == tensor.data_ptr()  # in place: peers still read what we would overwrite
    else:
        staged = variant == "atomic" or not ctx.is_symmetric(out) or out.data_ptr() != tensor.data_ptr() and \
            _overlaps(out, tensor)
    data = (tensor, out, _scratch(ctx, n, tensor.dtype) if staged else out, n)
    if variant == "atomic":
        return _barrier_launch(ctx, kernels.atomic_kernel, data, n, config, async_op), out
    kernel = kernels.one_shot_kernel if variant == "one_shot" else kernels.two_shot_kernel
    return _barrier_launch(ctx, kernel, data, n, config, async_op, OP=op, STAGED=staged, ACC=_acc(tensor.dtype)), out


@consistency.guarded("all_reduce_rmsnorm")
def all_reduce_rmsnorm(ctx, tensor, residual, weight, eps=1e-6, variant="auto", out=None, config=None,
                       async_op=False):
    """The tensor-parallel layer's exit as one kernel: `tensor` (rows x hidden, any leading dims) summed over ranks,
    plus `residual`, which keeps that sum (the next layer's residual, as vLLM's fused_add_rms_norm), then each row
    divided by its root mean square (+ eps) and scaled by `weight` (hidden) into `out` (default: in place). Returns
    `out`. "push" ("auto"): each row through iris.tile's one-shot inboxes, no barrier, no tensor needs to be on the
    heap; "nccl": torch.distributed's all_reduce, then torch ops. Collective; about one push all-reduce of the
    tensor plus one pass over it."""
    return _call(ctx, ("all_reduce_rmsnorm", *map(tensor_key, (tensor, residual, weight, out)), eps, variant,
                       config, async_op), async_op, _all_reduce_rmsnorm_plan,
                 (ctx, tensor, residual, weight, eps, variant, out, config, async_op))


def _all_reduce_rmsnorm_plan(ctx, tensor, residual, weight, eps, variant, out, config, async_op):
    out = tensor if out is None else out
    variant = "push" if variant == "auto" else variant
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0:
        raise ValueError(f"all_reduce_rmsnorm: eps={eps!r}; expected a number >= 0")
    _check(ctx, "all_reduce_rmsnorm", variant, "sum", {"tensor": tensor, "residual": residual, "weight": weight,
                                                       "out": out}, {}, (float(eps), config, async_op))
    if not tensor.dtype.is_floating_point or tensor.dtype == torch.float64:
        raise TypeError(f"all_reduce_rmsnorm: tensors are {tensor.dtype}; expected float32, float16 or bfloat16")
    if tensor.dim() < 1 or tensor.numel() == 0:
        raise ValueError(f"all_reduce_rmsnorm: tensor has shape {tuple(tensor.shape)}; expected rows x hidden with "
                         f"hidden the last dimension")
    hidden = tensor.shape[-1]
    for label, t in (("residual", residual), ("out", out)):
        if t.shape != tensor.shape:
            raise ValueError(f"all_reduce_rmsnorm: {label} has shape {tuple(t.shape)}; expected the tensor's, "
                             f"{tuple(tensor.shape)}")
    if tuple(weight.shape) != (hidden,):
        raise ValueError(f"all_reduce_rmsnorm: weight has shape {tuple(weight.shape)}; expected ({hidden},), one "
                         f"scale per element of a row")
    if hidden > ROWS_MAX:
        raise ValueError(f"all_reduce_rmsnorm: rows of {hidden} elements; one program holds a row, at most "
                         f"{ROWS_MAX}: use all_reduce, then torch's rms_norm")
    if _overlaps(residual, tensor) or _overlaps(residual, out) or _overlaps(weight, out) or _overlaps(weight, residual):
        raise ValueError("all_reduce_rmsnorm: residual must not overlap tensor or out, nor weight residual or out "
                         "(residual and out are written); out may be the tensor itself")
    if out.data_ptr() != tensor.data_ptr() and _overlaps(out, tensor):
        raise ValueError("all_reduce_rmsnorm: out overlaps tensor without being it; pass out=None for in place")
    if variant == "nccl":
        summed = tensor.clone()
        dist.all_reduce(summed, group=ctx.group)
        h = summed.float() + residual.float()
        residual.copy_(h)
        out.copy_(h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
        return None, Work() if async_op else out
    return _rows_launch(ctx, kernels.push_all_reduce_rmsnorm_kernel, tensor, residual, weight, out, eps, config,
                        async_op), out


@consistency.guarded("all_gather")
def all_gather(ctx, output, input, variant="auto", config=None, async_op=False):
    """output (world * input.numel() elements) <- every rank's input, rank r's at slice r. "direct": peers store
    into `output`, which must be on the heap; "push": through inboxes (output anywhere; the latency variant)."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().all_gather(ctx, output, input, variant, config, async_op)
    return _call(ctx, ("all_gather", tensor_key(output), tensor_key(input), variant, config, async_op), async_op,
                 _all_gather_plan, (ctx, output, input, variant, config, async_op))


def _all_gather_plan(ctx, output, input, variant, config, async_op):
    w = ctx.get_num_ranks()
    if variant == "auto" and isinstance(input, torch.Tensor):
        variant = "push" if input.numel() * input.element_size() * w <= PUSH_MAX_BYTES else "direct"
    _check(ctx, "all_gather", variant, "sum", {"output": output, "input": input},
           {"output": "write into"} if variant == "direct" else {}, (config, async_op))
    n = input.numel()
    if output.numel() != w * n:
        raise ValueError(f"all_gather: output has {output.numel()} elements, expected world * input = {w} * {n}")
    if variant == "nccl":
        work = all_gather_single(output.view(-1), input.reshape(-1), group=ctx.group, async_op=async_op)
        return None, work if async_op else output
    if variant == "push":
        return _push_launch(ctx, kernels.push_all_gather_kernel, input, output, n, config, async_op), output
    return _barrier_launch(ctx, kernels.all_gather_kernel, (input, output, n), n, config, async_op), output


@consistency.guarded("reduce_scatter")
def reduce_scatter(ctx, output, input, op="sum", variant="auto", config=None, async_op=False):
    """output (this rank's slice) <- slice `rank` of input (world * output.numel()) reduced over ranks. "pull":
    every rank reads its slice from every rank's input, which must be on the heap; "push": every rank sends slice r
    to rank r's inbox (input anywhere; the latency variant); "auto" pushes up to 1 MiB of input."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().reduce_scatter(ctx, output, input, op, variant, config, async_op)
    return _call(ctx, ("reduce_scatter", tensor_key(output), tensor_key(input), op, variant, config, async_op),
                 async_op, _reduce_scatter_plan, (ctx, output, input, op, variant, config, async_op))


def _reduce_scatter_plan(ctx, output, input, op, variant, config, async_op):
    if variant == "auto" and isinstance(input, torch.Tensor):
        variant = "push" if input.numel() * input.element_size() <= PUSH_MAX_BYTES else "pull"
    _check(ctx, "reduce_scatter", variant, op, {"output": output, "input": input},
           {"input": "read"} if variant == "pull" else {}, (config, async_op))
    w, n = ctx.get_num_ranks(), output.numel()
    if input.numel() != w * n:
        raise ValueError(f"reduce_scatter: input has {input.numel()} elements, expected world * output = {w} * {n}")
    if variant == "nccl":
        work = dist.reduce_scatter_tensor(output.view(-1), input.reshape(-1), op=_nccl_op(op), group=ctx.group,
                                          async_op=async_op)
        return None, work if async_op else output
    if variant == "push":
        return _push_launch(ctx, kernels.push_reduce_scatter_kernel, input, output, n, config, async_op, OP=op), output
    return _barrier_launch(ctx, kernels.reduce_scatter_kernel, (input, output, n), n, config, async_op, OP=op,
                           ACC=_acc(input.dtype)), output


@consistency.guarded("all_to_all")
def all_to_all(ctx, output, input, variant="auto", config=None, async_op=False):
    """Slice c of input (world equal slices) goes to rank c, where it lands at slice `rank` of output (on the heap)."""
    if getattr(ctx, "multi_node", False):  # no heap spans the hosts: torch.distributed over the group
        variant = _hierarchical()._levels(ctx, "all_to_all", variant) and "nccl"
    return _call(ctx, ("all_to_all", tensor_key(output), tensor_key(input), variant, config, async_op), async_op,
                 _all_to_all_plan, (ctx, output, input, variant, config, async_op))


def _all_to_all_plan(ctx, output, input, variant, config, async_op):
    _check(ctx, "all_to_all", variant, "sum", {"output": output, "input": input}, {"output": "write into"},
           (config, async_op))
    w = ctx.get_num_ranks()
    if input.numel() != output.numel() or input.numel() % w:
        raise ValueError(f"all_to_all: input and output need the same number of elements, divisible by the world "
                         f"size {w}; got {input.numel()} and {output.numel()}")
    if variant == "nccl":
        work = dist.all_to_all_single(output.view(-1), input.reshape(-1), group=ctx.group, async_op=async_op)
        return None, work if async_op else output
    n = input.numel() // w
    return _barrier_launch(ctx, kernels.all_to_all_kernel, (input, output, n), n, config, async_op), output


@consistency.guarded("broadcast")
def broadcast(ctx, tensor, src=0, variant="auto", out=None, config=None, async_op=False):
    """out (default: tensor, in place) <- rank src's tensor (on the heap)."""
    if getattr(ctx, "multi_node", False):  # no heap spans the hosts: torch.distributed over the group
        variant = _hierarchical()._levels(ctx, "broadcast", variant) and "nccl"
    return _call(ctx, ("broadcast", tensor_key(tensor), src, tensor_key(out), variant, config, async_op), async_op,
                 _broadcast_plan, (ctx, tensor, src, variant, out, config, async_op))


def _broadcast_plan(ctx, tensor, src, variant, out, config, async_op):
    out = tensor if out is None else out
    _check(ctx, "broadcast", variant, "sum", {"tensor": tensor, "out": out}, {"tensor": "read"},
           (src, config, async_op))
    if not 0 <= src < ctx.get_num_ranks():
        raise ValueError(f"broadcast: src={src} is not a rank (world size {ctx.get_num_ranks()})")
    if out.shape != tensor.shape:
        raise ValueError(f"broadcast: out has shape {tuple(out.shape)}, tensor {tuple(tensor.shape)}")
    if variant == "nccl":
        if out is not tensor:
            out.copy_(tensor)
        work = dist.broadcast(out, group=ctx.group, group_src=src, async_op=async_op)
        return None, work if async_op else out
    n = tensor.numel()
    return _barrier_launch(ctx, kernels.broadcast_kernel, (tensor, out, n, src), n, config, async_op,
                           STAGED=out.data_ptr() != tensor.data_ptr()), out


def all_to_all_v(ctx, output, input, in_splits, out_splits=None, variant="auto", config=None):
    """Uneven all-to-all with device-side split sizes (iris/all_to_all_v.py): returns (output, out_splits)."""
    from ..all_to_all_v import all_to_all_v as impl
    return impl(ctx, output, input, in_splits, out_splits, variant, config)
