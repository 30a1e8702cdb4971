"""How a host collective becomes one kernel launch: its configuration, the checks of its arguments, the `auto`
picks, its workspaces and its launch (a _Launch: kernel, grid, arguments, replay key). Host code only; the kernels
are in kernels.py and the front doors, with the one prepared-call path, in __init__.py."""

import weakref
from dataclasses import dataclass

import torch
import torch.distributed as dist
import triton.language as tl

from .. import consistency, relaunch, tile
from .. import device as iris
from ..replay import tensor_key

OPS = ("sum", "max", "min")
VARIANTS = {"all_reduce": ("auto", "push", "push_two_shot", "ring", "one_shot", "two_shot", "atomic", "nccl",
                           "hierarchical"),
            "all_gather": ("auto", "push", "direct", "nccl", "hierarchical"),
            "reduce_scatter": ("auto", "push", "pull", "nccl", "hierarchical"), "all_to_all": ("auto", "nccl"),
            "broadcast": ("auto", "nccl"), "all_reduce_rmsnorm": ("auto", "push", "nccl")}
PUSH_MAX_BYTES = 1 << 20  # "auto": push (latency; inboxes of 8 x world x size) up to here, two_shot/pull above


def _cdiv(a, b):
    """Host ceil division (triton.cdiv is a constexpr function: microseconds per host call)."""
    return -(-a // b)


@dataclass(frozen=True)
class CollConfig:
    """programs: the grid (one workspace per value); block: elements per program step; num_warps: per program
    (default 4 up to 2048-element blocks, else 8)."""
    programs: int = None
    block: int = None
    num_warps: int = None


def _block(cfg, default):
    block = cfg.block or default
    if block < 16 or block & (block - 1):
        raise ValueError(f"config.block={block}: expected a power of two >= 16")
    return block


def _warps(cfg, block):
    warps = cfg.num_warps or (4 if block <= 2048 else 8)
    if warps not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"config.num_warps={warps}: expected a power of two from 1 to 32")
    return warps


def _programs(ctx, cfg, blocks):
    """The grid of a kernel that spins on flags: config.programs, else one program per block up to what is resident
    on this rank's share of the GPU (2 on the CPU backend)."""
    limit = 2 if ctx.backend == "cpu" else ctx.get_cu_count() // ctx.ranks_per_device
    programs = cfg.programs or max(1, min(blocks, limit))
    if not 1 <= programs <= limit and ctx.backend == "cuda":
        raise ValueError(f"config.programs={programs}: expected 1..{limit} (every program must be resident: the "
                         f"kernel spins on flags)")
    return programs


def _check_tensor(ctx, name, label, t):
    """A collective's tensor argument: a contiguous torch.Tensor on the heap's device."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: {label} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: {label} must be contiguous")
    if t.device.type != ctx.get_device().type:
        raise ValueError(f"{name}: {label} is on {t.device}, the heap is on {ctx.get_device()}")


def _check(ctx, name, variant, op, tensors, heap, extra=()):
    """Refuse bad input on the host; `heap`: {label: what peers do with it} for the tensors that must be on the heap.
    The first call of a signature is compared across ranks (iris/consistency.py)."""
    if variant not in VARIANTS[name]:
        raise ValueError(f"{name}: unknown variant {variant!r}; expected one of {', '.join(VARIANTS[name])}")
    if op not in OPS:
        raise ValueError(f"{name}: op={op!r}; expected one of {', '.join(OPS)}")
    for label, t in tensors.items():
        _check_tensor(ctx, name, label, t)
        if variant != "nccl" and label in heap and not ctx.is_symmetric(t):
            ctx.require_symmetric(t, f"{name}: {label}",
                                  f" (peers {heap[label]} it); allocate it with ctx.empty/zeros, or use variant='nccl'")
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1:
        raise TypeError(f"{name}: tensors must share one dtype, got {sorted(map(str, dtypes))}")
    if ctx.get_num_ranks() > 1:
        consistency.first_call(ctx, (name, variant, op, *((label, consistency.describe(t), consistency.offset(
            ctx, t) if label in heap and variant != "nccl" else None) for label, t in tensors.items()), *extra))


def _hierarchical():
    """iris.hierarchical (imported late: it builds on this package). Its variants run on an iris.multi_node context
    (a group over several hosts: "auto" picks them there) and on a node-local context (one level)."""
    from .. import hierarchical

    return hierarchical


def _nccl_op(op):
    return {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op]


def _scratch(ctx, numel, dtype):
    return ctx.workspace(("collectives", "scratch", numel, dtype), lambda c: c.zeros(numel, dtype=dtype))


def _overlaps(a, b):
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def _acc(dtype):
    """Accumulation type: float64 sums in float64; integers as torch sums them (int64 in int64, narrower ones wrap
    at their width); other floats in float32."""
    return {torch.float64: tl.float64, torch.int64: tl.int64}.get(dtype,
                                                                 tl.float32 if dtype.is_floating_point else tl.int32)


def _auto_all_reduce(ctx, tensor):
    """push up to 1 MiB (2 ranks: 4 MiB); push_two_shot on 4+ ranks from 256 KiB to 4 MiB, on 2 ranks from 4 to 64
    MiB (each rank sends 2(w-1)/w of the tensor, not w-1 times it); then two_shot, or nccl for a tensor that is not on
    the heap. The thresholds come from the graph-timed sweeps in results/current/collectives/ (collectives.csv,
    w4/push_two_shot.csv; docs/performance.md). The push variants' inboxes take 8 x world x (push) or
    8 x (push_two_shot) the tensor's bytes of heap: above 1 MiB they are picked only while that fits in half the
    heap's free space, and the pick is remembered per size, so a later call does not change its mind once the
    inboxes are allocated."""
    nbytes, w = tensor.numel() * tensor.element_size(), ctx.get_num_ranks()
    memo = _auto_picks.setdefault(ctx, {})
    key = (nbytes, ctx.is_symmetric(tensor))
    if key not in memo:
        if w >= 4 and 256 << 10 < nbytes <= 4 << 20 or w == 2 and 4 << 20 < nbytes <= 64 << 20:
            pick, inbox = "push_two_shot", 8 * nbytes
        elif nbytes <= (4 << 20 if w == 2 else PUSH_MAX_BYTES):
            pick, inbox = "push", 8 * w * nbytes
        else:
            pick, inbox = None, 0
        if pick is None or nbytes > PUSH_MAX_BYTES and inbox > ctx.heap.available // 2:
            pick = "two_shot" if key[1] else "nccl"
        memo[key] = pick
    return memo[key]


_auto_picks = weakref.WeakKeyDictionary()  # context -> {(bytes, on the heap): variant}


def _push_block(nbytes):
    """Elements per program of the push kernels on GPUs, by the bytes one tile-set covers: small blocks (many
    programs) for latency, then few large ones, which cost fewer fences and flags (measured in
    results/current/collectives/push_blocks*.csv)."""
    return 2048 if nbytes <= 512 << 10 else 16384


class _Launch:
    """One kernel launch of a collective: kernel[grid](*args, **meta), known to the replay cache as `key`;
    `tensors`: the caller's tensors it reads or writes (kept alive on a side stream)."""

    __slots__ = ("kernel", "grid", "args", "meta", "key", "tensors")

    def __init__(self, kernel, grid, args, meta, key, tensors):
        self.kernel, self.grid, self.args, self.meta, self.key, self.tensors = kernel, grid, args, meta, key, tensors

    def __call__(self):
        self.kernel[self.grid](*self.args, **self.meta)

    def direct(self):
        return _direct(self.kernel, self.grid, self.args, self.meta, *self.tensors)


def _direct(kernel, grid, args, meta, *tensors):
    """The `direct` launch of a prepared call (iris.relaunch), for calls of relaunch.MIN_BYTES and more."""
    if max(t.numel() * t.element_size() for t in tensors) >= relaunch.MIN_BYTES:
        return kernel, grid, args, meta
    return None


def _barrier_launch(ctx, kernel, data, n, config, async_op, **consts):
    """A launch of one of kernels.py's barrier kernels: `data` its arguments before the workspace (X, Y, then
    staging buffers and sizes), n the elements its programs walk, `consts` its compile-time choices. The workspace
    (flags and per-program call counts) is shared by every barrier kernel of one grid size, one for synchronous calls
    and one for async ones."""
    cfg = config or CollConfig()
    block = _block(cfg, 1024 if ctx.backend == "cpu" else 4096)
    programs = _programs(ctx, cfg, _cdiv(max(n, 1), block))
    ws = ctx.workspace(("collectives", "async" if async_op else "sync", programs), lambda c: dict(
        flags=c.zeros(2 * programs * c.get_num_ranks(), dtype=torch.int32),
        epochs=c.zeros(programs, dtype=torch.int32)))
    args = (*data, ws["flags"], ws["epochs"], ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases())
    meta = dict(consts, BLOCK=block, num_warps=_warps(cfg, block), **iris.pdl_launch())
    key = ("collective", kernel.__name__, *(tensor_key(a) if isinstance(a, torch.Tensor) else a for a in data),
           *consts.values(), block, programs, async_op)
    return _Launch(kernel, (programs,), args, meta, key, data[:2])


def _tile_workspace(ctx, tiles, block, dtype, async_op):
    """The iris.tile.Workspace of the push kernels with `tiles` tiles of `block` elements: one per size, dtype and
    stream kind, shared by every push kernel of those (their per-tile epochs advance alike on every rank)."""
    return ctx.workspace(("collectives", "tiles", "async" if async_op else "sync", tiles, block, dtype),
                         lambda c: tile.Workspace(c, tiles, block, dtype))


def _push_launch(ctx, kernel, x, y, n, config, async_op, extra=(), **consts):
    """A launch of one of kernels.py's push kernels over n elements (`extra`: arguments after n), one program per
    block, with an iris.tile.Workspace of that many tiles."""
    cfg = config or CollConfig()
    block = _block(cfg, 256 if ctx.backend == "cpu" else _push_block(n * x.element_size()))
    tiles = _cdiv(max(n, 1), block)
    ws = _tile_workspace(ctx, tiles, block, x.dtype, async_op)
    args = (x, y, n, *extra, *ws.args(), ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases())
    meta = dict(consts, BLOCK=block, num_warps=_warps(cfg, block), **iris.pdl_launch())
    key = ("tile", kernel.__name__, tensor_key(x), tensor_key(y), *consts.values(), block, async_op)
    return _Launch(kernel, (tiles,), args, meta, key, (x, y))


ROWS_MAX = 32768  # all_reduce_rmsnorm: the longest row one program holds (in registers)
ROWS_INBOX_BYTES = 32 << 20  # all_reduce_rmsnorm "push": the most heap its inboxes take by default (8 x world x row)


def _rows_launch(ctx, kernel, x, residual, weight, y, eps, config, async_op):
    """A launch of the row-wise push kernel (all_reduce_rmsnorm): one program per row up to what is resident and
    what ROWS_INBOX_BYTES of inboxes hold, each walking rows pid, pid + programs, ...; one row-wide tile per
    program (_tile_workspace: shared with all_reduce "push" calls of the same tiles, block and dtype)."""
    cfg = config or CollConfig()
    hidden = x.shape[-1]
    rows, block = x.numel() // hidden, max(16, 1 << (hidden - 1).bit_length())
    if cfg.block is not None and cfg.block != block:
        raise ValueError(f"all_reduce_rmsnorm: config.block={cfg.block}, but a program holds one row: the block is "
                         f"the row length {hidden} rounded up to a power of two, {block}; leave config.block unset")
    fit = max(1, ROWS_INBOX_BYTES // (8 * ctx.get_num_ranks() * block * x.element_size()))
    programs = _programs(ctx, cfg, min(rows, fit))
    ws = _tile_workspace(ctx, programs, block, x.dtype, async_op)
    args = (x, residual, weight, y, rows, hidden, float(eps), *ws.args(), ctx.get_rank(), ctx.get_num_ranks(),
            ctx.get_heap_bases())
    meta = dict(BLOCK=block, num_warps=_warps(cfg, block), **iris.pdl_launch())
    key = ("tile", kernel.__name__, *map(tensor_key, (x, residual, weight, y)), float(eps), block, programs, async_op)
    return _Launch(kernel, (programs,), args, meta, key, (x, y, residual))
