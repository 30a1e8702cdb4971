"""Host-callable collectives on the symmetric heap, each one Triton kernel with its own entry and exit barriers.

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
The other collectives have one kernel each, or "nccl".
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
"""

import weakref
from dataclasses import dataclass

import torch
import torch.distributed as dist
import triton
import triton.language as tl

from . import consistency, relaunch, tile
from . import device as iris
from .distributed import all_gather_single
from .replay import tensor_key

OPS = ("sum", "max", "min")
VARIANTS = {"all_reduce": ("auto", "push", "push_two_shot", "ring", "one_shot", "two_shot", "atomic", "nccl",
                           "hierarchical"),
            "all_gather": ("auto", "push", "direct", "nccl", "hierarchical"),
            "reduce_scatter": ("auto", "push", "pull", "nccl", "hierarchical"), "all_to_all": ("auto", "nccl"),
            "broadcast": ("auto", "nccl")}
PUSH_MAX_BYTES = 1 << 20  # "auto": push (latency; inboxes of 8 x world x size) up to here, two_shot/pull above
_TILE_VARIANTS = {"push": "one_shot", "push_two_shot": "two_shot", "ring": "ring"}  # all_reduce through iris.tile


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


@triton.jit
def _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP: tl.constexpr, ACC: tl.constexpr):
    """The block at X + offs combined over every rank (own copy first), in ACC precision."""
    acc = tl.load(X + offs, mask=m).to(ACC)
    for i in range(1, world_size):
        acc = tile._combine(acc, iris.load(X + offs, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m).to(ACC),
                       OP)
    return acc


@triton.jit
def _all_arrive(flags, e, cur_rank, world_size, heap_bases):
    """Set my slot of `flags` to e on every rank, then wait until every rank's slot here is >= e."""
    for i in range(world_size):
        iris.signal(flags + cur_rank, e, cur_rank, (cur_rank + i) % world_size, heap_bases)
    for src in range(world_size):
        iris.wait(flags + src, e, cur_rank, heap_bases, cmp="ge")


@triton.jit
def collective_kernel(X, Y, S, n, root, FLAGS, EPOCHS, cur_rank, world_size, heap_bases, KIND: tl.constexpr,
                      OP: tl.constexpr, STAGED: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                      PDL: tl.constexpr = tl.constexpr(False)):
    """n: elements per rank-slice (the tensor for all_reduce/broadcast, one slice for the others)."""
    iris.launched_early(PDL)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    e = tl.load(EPOCHS + pid) + 1
    _all_arrive(FLAGS + pid * world_size, e, cur_rank, world_size, heap_bases)  # everyone's inputs are ready
    blocks = tl.cdiv(n, BLOCK)
    if KIND == "two_shot":  # rank r owns blocks r, r + w, ...: every program walks owned blocks only
        steps, stride, first = tl.cdiv(blocks - cur_rank, world_size), world_size, cur_rank
    else:
        steps, stride, first = blocks, 1, 0
    for j in range(pid, steps, programs):
        b = first + j * stride
        offs = b * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        if KIND == "one_shot":
            acc = _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP, ACC)
            tl.store((S if STAGED else Y) + offs, acc.to(Y.dtype.element_ty), mask=m)
        elif KIND == "two_shot":
            acc = _reduce_all(X, offs, m, cur_rank, world_size, heap_bases, OP, ACC).to(Y.dtype.element_ty)
            for i in range(world_size):
                iris.store((S if STAGED else Y) + offs, acc, cur_rank, (cur_rank + i) % world_size, heap_bases,
                           mask=m)
        elif KIND == "atomic":
            v = tl.load(X + offs, mask=m)
            for i in range(world_size):
                iris.atomic_add(S + offs, v, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m,
                                sem="relaxed", scope="sys")
        elif KIND == "all_gather":
            v = tl.load(X + offs, mask=m)
            for i in range(world_size):
                iris.store(Y + cur_rank * n + offs, v, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=m)
        elif KIND == "reduce_scatter":
            acc = _reduce_all(X + cur_rank * n, offs, m, cur_rank, world_size, heap_bases, OP, ACC)
            tl.store(Y + offs, acc.to(Y.dtype.element_ty), mask=m)
        elif KIND == "all_to_all":
            for i in range(world_size):
                dst = (cur_rank + i) % world_size
                iris.store(Y + cur_rank * n + offs, tl.load(X + dst * n + offs, mask=m), cur_rank, dst, heap_bases,
                           mask=m)
        else:  # broadcast
            if cur_rank != root:
                tl.store(Y + offs, iris.load(X + offs, cur_rank, root, heap_bases, mask=m), mask=m)
            elif STAGED:
                tl.store(Y + offs, tl.load(X + offs, mask=m), mask=m)
    _all_arrive(FLAGS + (programs + pid) * world_size, e, cur_rank, world_size, heap_bases)  # all reads/writes done
    if STAGED:
        if KIND == "two_shot":  # the blocks that programs `pid` of all ranks wrote (their exit barrier covers those)
            for j in range(pid, tl.cdiv(blocks, world_size), programs):
                for r in range(world_size):
                    offs = (r + j * world_size) * BLOCK + tl.arange(0, BLOCK)
                    m = offs < n
                    tl.store(Y + offs, tl.load(S + offs, mask=m), mask=m)
        elif KIND == "one_shot" or KIND == "atomic":
            for b in range(pid, blocks, programs):
                offs = b * BLOCK + tl.arange(0, BLOCK)
                m = offs < n
                tl.store(Y + offs, tl.load(S + offs, mask=m), mask=m)
                if KIND == "atomic":
                    tl.store(S + offs, tl.zeros((BLOCK,), S.dtype.element_ty), mask=m)  # ready for the next call
    tl.store(EPOCHS + pid, e)


@triton.jit
def tile_collective_kernel(X, Y, n, TOTAL, WS, FLAGS, EPOCHS, cur_rank, world_size, heap_bases, KIND: tl.constexpr,
                           OP: tl.constexpr, VARIANT: tl.constexpr, BLOCK: tl.constexpr,
                           PDL: tl.constexpr = tl.constexpr(False)):
    """One tile of n elements per program through iris.tile (n: all_reduce's tensor, or one rank's slice of it for
    the two-shot; all_gather's input; reduce_scatter's output; TOTAL: X's elements): values travel through the
    receivers' inboxes, so there is no entry or exit barrier and no input or output needs to be on the heap."""
    iris.launched_early(PDL)
    t = tl.program_id(0)
    ws, flags, e = tile.begin(WS, FLAGS, EPOCHS, t, world_size, BLOCK)
    first = t * BLOCK
    offs = first + tl.arange(0, BLOCK)
    m = offs < n
    if KIND == "reduce_scatter":  # X: world slices of n elements
        acc = tile.reduce_scatter_strided(X, first, n, world_size * n, ws, flags, e, cur_rank, world_size,
                                          heap_bases, OP, BLOCK)
        tl.store(Y + offs, acc, mask=m)
    elif KIND == "all_gather":  # Y: world slices of n elements
        x = tl.load(X + offs, mask=m, other=0)
        tile.all_gather_strided(x, Y, first, n, world_size * n, ws, flags, e, cur_rank, world_size, heap_bases)
    elif VARIANT == "two_shot":  # n: one slice; X and Y: TOTAL elements in world slices (the last ones short)
        acc = tile.reduce_scatter_strided(X, first, n, TOTAL, ws, flags, e, cur_rank, world_size, heap_bases, OP,
                                          BLOCK)
        e += 1
        tile.all_gather_strided(acc, Y, first, n, TOTAL, ws, flags, e, cur_rank, world_size, heap_bases)
    else:
        x = tl.load(X + offs, mask=m, other=0)
        tl.store(Y + offs, tile.all_reduce(x, ws, flags, e, cur_rank, world_size, heap_bases, OP, VARIANT), mask=m)
    tile.end(EPOCHS, t, e)


# ---------------------------------------------------------------------------------------------- host side
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


_side_streams = {}


def _launch(ctx, kind, x, y, n, op="sum", staged=False, root=0, config=None, async_op=False, scratch=None,
            prepare=None):
    cfg = config or CollConfig()
    block = _block(cfg, 1024 if ctx.backend == "cpu" else 4096)
    blocks = _cdiv(max(n, 1), block)
    limit = 2 if ctx.backend == "cpu" else ctx.get_cu_count() // ctx.ranks_per_device
    programs = cfg.programs or max(1, min(blocks, limit))
    if not 1 <= programs <= limit and ctx.backend == "cuda":
        raise ValueError(f"config.programs={programs}: expected 1..{limit} (every program must be resident: the "
                         f"kernel spins on flags)")
    key = "async" if async_op else "sync"
    ws = ctx.workspace(("collectives", key, programs), lambda c: dict(
        flags=c.zeros(2 * programs * c.get_num_ranks(), dtype=torch.int32),
        epochs=c.zeros(programs, dtype=torch.int32)))
    # float64 sums in float64; integers as torch sums them: int64 in int64, narrower ones wrap at their width
    acc = {torch.float64: tl.float64, torch.int64: tl.int64}.get(x.dtype,
                                                               tl.float32 if x.dtype.is_floating_point else tl.int32)
    s = scratch if scratch is not None else y
    args = (x, y, s, n, root, ws["flags"], ws["epochs"], ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases())
    meta = dict(KIND=kind, OP=op, STAGED=staged, ACC=acc, BLOCK=block, num_warps=_warps(cfg, block))
    key = ("collective", kind, tensor_key(x), tensor_key(y), tensor_key(s), n, root, op, staged, block, programs,
           async_op)
    meta.update(iris.pdl_launch())
    return _run(ctx, key, lambda: collective_kernel[(programs,)](*args, **meta), (x, y), async_op, prepare,
                _direct(collective_kernel, (programs,), args, meta, x, y))


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


def _check(ctx, name, variant, op, tensors, heap, extra=()):
    if variant not in VARIANTS[name]:
        raise ValueError(f"{name}: unknown variant {variant!r}; expected one of {', '.join(VARIANTS[name])}")
    if op not in OPS:
        raise ValueError(f"{name}: op={op!r}; expected one of {', '.join(OPS)}")
    for label, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: {label} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_contiguous():
            raise ValueError(f"{name}: {label} must be contiguous")
        if t.device.type != ctx.get_device().type:
            raise ValueError(f"{name}: {label} is on {t.device}, the heap is on {ctx.get_device()}")
        if variant != "nccl" and label in heap and not ctx.is_symmetric(t):
            ctx.require_symmetric(t, f"{name}: {label}",
                                  f" (peers {heap[label]} it); allocate it with ctx.empty/zeros, or use variant='nccl'")
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1:
        raise TypeError(f"{name}: tensors must share one dtype, got {sorted(map(str, dtypes))}")
    if ctx.get_num_ranks() > 1:  # the first call of a signature compares it across ranks (iris/consistency.py)
        consistency.first_call(ctx, (name, variant, op, *((label, consistency.describe(t), consistency.offset(
            ctx, t) if label in heap and variant != "nccl" else None) for label, t in tensors.items()), *extra))


def _hierarchical():
    """iris.hierarchical (imported late: it builds on this module). Its variants run on an iris.multi_node context
    (a group over several hosts: "auto" picks them there) and on a node-local context (one level)."""
    from . import hierarchical

    return hierarchical


def _nccl_op(op):
    return {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op]


def _scratch(ctx, numel, dtype):
    return ctx.workspace(("collectives", "scratch", numel, dtype), lambda c: c.zeros(numel, dtype=dtype))


@consistency.guarded("all_reduce")
def all_reduce(ctx, tensor, op="sum", variant="auto", out=None, config=None, async_op=False):
    """Reduce `tensor` over ranks into `out` (default: in place). Returns `out` (or a Work with async_op)."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().all_reduce(ctx, tensor, op, variant, out, config, async_op)
    sig, call = ctx.replay.lookup(("all_reduce", tensor_key(tensor), tensor_key(out), op, variant, config, async_op))
    if call is not None:
        return call()
    out = tensor if out is None else out
    if variant == "auto" and isinstance(tensor, torch.Tensor):
        variant = _auto_all_reduce(ctx, tensor)
    heap = {} if variant in _TILE_VARIANTS else {"tensor": "read"}
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
        return work if async_op else out
    n = tensor.numel()
    if variant in _TILE_VARIANTS:
        # push_two_shot's programs cover one rank's slice, 16-element aligned; the others cover the whole tensor
        span = _cdiv(_cdiv(n, ctx.get_num_ranks()), 16) * 16 if variant == "push_two_shot" else n
        work = _tile_launch(ctx, "all_reduce", tensor, out, span, op, _TILE_VARIANTS[variant], config, async_op,
                            prepare=(sig, out))
        return work if async_op else out
    if variant == "one_shot":
        staged = out.data_ptr() == tensor.data_ptr()  # in place: peers still read what we would overwrite
    else:
        staged = variant == "atomic" or not ctx.is_symmetric(out) or out.data_ptr() != tensor.data_ptr() and \
            _overlaps(out, tensor)
    scratch = _scratch(ctx, n, tensor.dtype) if staged else None
    work = _launch(ctx, variant, tensor, out, n, op, staged, config=config, async_op=async_op, scratch=scratch,
                   prepare=(sig, out))
    return work if async_op else out


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


def _tile_launch(ctx, kind, tensor, out, n, op, variant, config, async_op, prepare=None):
    """tile_collective_kernel over n elements, one program per block; returns a Work with async_op, else None."""
    cfg = config or CollConfig()
    block = _block(cfg, 256 if ctx.backend == "cpu" else _push_block(n * tensor.element_size()))
    tiles = _cdiv(max(n, 1), block)
    ws = ctx.workspace(("collectives", "tiles", "async" if async_op else "sync", tiles, block, tensor.dtype),
                       lambda c: tile.Workspace(c, tiles, block, tensor.dtype))
    args = (tensor, out, n, tensor.numel(), *ws.args(), ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases())
    meta = dict(KIND=kind, OP=op, VARIANT=variant, BLOCK=block, num_warps=_warps(cfg, block))
    key = ("tile", kind, tensor_key(tensor), tensor_key(out), op, variant, block, async_op)
    meta.update(iris.pdl_launch())
    return _run(ctx, key, lambda: tile_collective_kernel[(tiles,)](*args, **meta), (tensor, out), async_op, prepare,
                _direct(tile_collective_kernel, (tiles,), args, meta, tensor, out))


def _direct(kernel, grid, args, meta, *tensors):
    """The `direct` launch of a prepared call (iris.relaunch), for calls of relaunch.MIN_BYTES and more."""
    if max(t.numel() * t.element_size() for t in tensors) >= relaunch.MIN_BYTES:
        return kernel, grid, args, meta
    return None


def _push_block(nbytes):
    """Elements per program of the push kernels on GPUs, by the bytes one tile-set covers: small blocks (many
    programs) for latency, then few large ones, which cost fewer fences and flags (measured in
    results/current/collectives/push_blocks*.csv)."""
    return 2048 if nbytes <= 512 << 10 else 16384


def _run(ctx, key, launch, tensors, async_op, prepare, direct=None):
    """launch() through the replay cache under `key`, on the current stream or a side stream (_on_stream). With
    prepare=(signature, result) remember the call, so that the next call with the same signature skips the checks
    and the argument set-up (about 12 µs of host time) and becomes a direct relaunch of its one kernel
    (direct=(kernel, grid, args, meta), iris.relaunch), or else a bare graph replay."""
    call = lambda: _on_stream(ctx, lambda: ctx.replay(key, launch), tensors, async_op)  # noqa: E731
    if prepare is not None and prepare[0] is not None:
        sig, result = prepare
        if async_op:
            ctx.replay.prepare(sig, call)
        else:
            ctx.replay.prepare(sig, lambda: call() or result, key=key, result=result, direct=direct)
    return call()


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


def _overlaps(a, b):
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


@consistency.guarded("all_gather")
def all_gather(ctx, output, input, variant="auto", config=None, async_op=False):
    """output (world * input.numel() elements) <- every rank's input, rank r's at slice r. "direct": peers store
    into `output`, which must be on the heap; "push": through inboxes (output anywhere; the latency variant)."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().all_gather(ctx, output, input, variant, config, async_op)
    sig, call = ctx.replay.lookup(("all_gather", tensor_key(output), tensor_key(input), variant, config, async_op))
    if call is not None:
        return call()
    w = ctx.get_num_ranks()
    if variant == "auto" and isinstance(input, torch.Tensor):
        variant = "push" if input.numel() * input.element_size() * w <= PUSH_MAX_BYTES else "direct"
    _check(ctx, "all_gather", variant, "sum", {"output": output, "input": input},
           {"output": "write into"} if variant == "direct" else {}, (config, async_op))
    if output.numel() != w * input.numel():
        raise ValueError(f"all_gather: output has {output.numel()} elements, expected world * input = {w} * "
                         f"{input.numel()}")
    if variant == "nccl":
        work = all_gather_single(output.view(-1), input.reshape(-1), group=ctx.group, async_op=async_op)
        return work if async_op else output
    if variant == "push":
        work = _tile_launch(ctx, "all_gather", input, output, input.numel(), "sum", "one_shot", config, async_op,
                            prepare=(sig, output))
    else:
        work = _launch(ctx, "all_gather", input, output, input.numel(), config=config, async_op=async_op,
                       prepare=(sig, output))
    return work if async_op else output


@consistency.guarded("reduce_scatter")
def reduce_scatter(ctx, output, input, op="sum", variant="auto", config=None, async_op=False):
    """output (this rank's slice) <- slice `rank` of input (world * output.numel()) reduced over ranks. "pull":
    every rank reads its slice from every rank's input, which must be on the heap; "push": every rank sends slice r
    to rank r's inbox (input anywhere; the latency variant); "auto" pushes up to 1 MiB of input."""
    if variant == "hierarchical" or getattr(ctx, "multi_node", False):
        return _hierarchical().reduce_scatter(ctx, output, input, op, variant, config, async_op)
    sig, call = ctx.replay.lookup(("reduce_scatter", tensor_key(output), tensor_key(input), op, variant, config,
                                   async_op))
    if call is not None:
        return call()
    if variant == "auto" and isinstance(input, torch.Tensor):
        variant = "push" if input.numel() * input.element_size() <= PUSH_MAX_BYTES else "pull"
    _check(ctx, "reduce_scatter", variant, op, {"output": output, "input": input},
           {"input": "read"} if variant == "pull" else {}, (config, async_op))
    w = ctx.get_num_ranks()
    if input.numel() != w * output.numel():
        raise ValueError(f"reduce_scatter: input has {input.numel()} elements, expected world * output = {w} * "
                         f"{output.numel()}")
    if variant == "nccl":
        work = dist.reduce_scatter_tensor(output.view(-1), input.reshape(-1), op=_nccl_op(op), group=ctx.group,
                                          async_op=async_op)
        return work if async_op else output
    if variant == "push":
        work = _tile_launch(ctx, "reduce_scatter", input, output, output.numel(), op, "one_shot", config, async_op,
                            prepare=(sig, output))
    else:
        work = _launch(ctx, "reduce_scatter", input, output, output.numel(), op, config=config, async_op=async_op,
                       prepare=(sig, output))
    return work if async_op else output


@consistency.guarded("all_to_all")
def all_to_all(ctx, output, input, variant="auto", config=None, async_op=False):
    """Slice c of input (world equal slices) goes to rank c, where it lands at slice `rank` of output (on the heap)."""
    if getattr(ctx, "multi_node", False):  # no heap spans the hosts: torch.distributed over the group
        variant = _hierarchical()._levels(ctx, "all_to_all", variant) and "nccl"
    sig, call = ctx.replay.lookup(("all_to_all", tensor_key(output), tensor_key(input), variant, config, async_op))
    if call is not None:
        return call()
    _check(ctx, "all_to_all", variant, "sum", {"output": output, "input": input}, {"output": "write into"},
           (config, async_op))
    w = ctx.get_num_ranks()
    if input.numel() != output.numel() or input.numel() % w:
        raise ValueError(f"all_to_all: input and output need the same number of elements, divisible by the world "
                         f"size {w}; got {input.numel()} and {output.numel()}")
    if variant == "nccl":
        work = dist.all_to_all_single(output.view(-1), input.reshape(-1), group=ctx.group, async_op=async_op)
        return work if async_op else output
    work = _launch(ctx, "all_to_all", input, output, input.numel() // w, config=config, async_op=async_op,
                   prepare=(sig, output))
    return work if async_op else output


@consistency.guarded("broadcast")
def broadcast(ctx, tensor, src=0, variant="auto", out=None, config=None, async_op=False):
    """out (default: tensor, in place) <- rank src's tensor (on the heap)."""
    if getattr(ctx, "multi_node", False):  # no heap spans the hosts: torch.distributed over the group
        variant = _hierarchical()._levels(ctx, "broadcast", variant) and "nccl"
    sig, call = ctx.replay.lookup(("broadcast", tensor_key(tensor), src, tensor_key(out), variant, config, async_op))
    if call is not None:
        return call()
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
        return work if async_op else out
    staged = out.data_ptr() != tensor.data_ptr()
    work = _launch(ctx, "broadcast", tensor, out, tensor.numel(), staged=staged, root=src, config=config,
                   async_op=async_op, prepare=(sig, out))
    return work if async_op else out


def all_to_all_v(ctx, output, input, in_splits, out_splits=None, variant="auto", config=None):
    """Uneven all-to-all with device-side split sizes (iris/all_to_all_v.py): returns (output, out_splits)."""
    from .all_to_all_v import all_to_all_v as impl
    return impl(ctx, output, input, in_splits, out_splits, variant, config)
