"""The device context: everything a kernel needs to talk to its peers, passed as ONE argument.

    dctx = ctx.get_device_context()                                   # host, local: an int64 tensor
    kernel[grid](x, y, dctx, BLOCK=...)

    @triton.jit
    def kernel(x, y, context, BLOCK: tl.constexpr):
        dctx = iris.DeviceContext.initialize(context)                 # rank, world, heap bases, workspace
        peer = (dctx.rank + 1) % dctx.world
        v = dctx.load(x + offs, peer)                                 # read the peer's copy of x
        dctx.store(y + offs, v, peer)                                 # write into the peer's copy of y
        dctx.atomic_add(counter, 1, peer, sem="release", scope="sys")
        s = dctx.all_reduce(v)                                        # tile collectives (needs a workspace)

Host side, `ctx.get_device_context()` returns an int64 tensor on the heap's device laid out as
[rank, world, heap_base_0 .. heap_base_{world-1}, workspace data address, flags address, epochs address, workspace
slot bytes] (the reference's layout for its first 2 + world entries, so its kernels read it too). With a tile
workspace (`ctx.get_device_context(tiles=T, block=B)`, or an iris.tile.Workspace) the tile collectives become
methods and their epoch bookkeeping is hidden: each call reads the tile's epoch from the workspace, uses the next one
and stores it back (one local load and store per call). Program t uses tile t unless `tile=` says otherwise; every
rank's program on a tile makes the same calls in the same order with blocks of B elements of the workspace's element
size (checked by a device assertion, which the compiler drops unless Triton's debug mode is on).

Device side, `DeviceContext.initialize(context)` loads rank and world from the tensor; pass them as constexprs
(`initialize(context, rank, world_size)`, the reference's form) and they fold into the code. Methods follow the
reference's DeviceContext: the current rank is implicit, so `load(ptr, from_rank)`, `store(ptr, v, to_rank)`,
`get(from_ptr, to_ptr, from_rank)` (reads from_rank's copy into local to_ptr), `put(from_ptr, to_ptr, to_rank)`,
`copy(src, dst, from_rank, to_rank)`, `atomic_*(ptr, val, to_rank, ...)`, plus `signal/wait` and the collectives.

Cost: compiled, the context is Triton's aggregate type: its fields are SSA values, methods inline, and unused fields'
loads are removed; the RMA instructions are those of the functional API (scripts/device_context_ptx.py compares the
sm_90 PTX and SASS of one kernel written both ways). Under the interpreter (CPU backend) it is a plain Python object
with the same methods, since the interpreter cannot run aggregates' methods.
"""

import functools

import torch
import triton
import triton.language as tl
from triton.language.core import _aggregate

from . import device as _dev
from . import tile as _tile
from ._backend import INTERPRET

# Offsets of the words after the heap bases.
WS_DATA, WS_FLAGS, WS_EPOCHS, WS_SLOT_BYTES = (tl.constexpr(i) for i in range(4))
EXTRA_WORDS = 4
# constexpr defaults of methods (compiled aggregate methods need constexpr objects, not str)
_SUM, _ONE_SHOT, _SET, _GE = tl.constexpr("sum"), tl.constexpr("one_shot"), tl.constexpr("set"), tl.constexpr("ge")


def _layout(rank, world, bases, workspace):
    """The context tensor's values (host side, any device)."""
    if workspace is None:
        extra = [0, 0, 0, 0]
    else:
        elem = workspace.data.element_size()
        extra = [workspace.data.data_ptr(), workspace.flags.data_ptr(), workspace.epochs.data_ptr(),
                 workspace.block * elem]
    return [rank, world, *bases, *extra]


def context_tensor(ctx, workspace=None, *, tiles=None, block=None, dtype=torch.float32):
    """See Iris.get_device_context. Local unless it has to create the workspace (tiles=..., block=...: collective,
    once per (tiles, block, dtype))."""
    if tiles is not None or block is not None:
        if workspace is not None:
            raise ValueError("get_device_context: pass either workspace= or tiles=/block=, not both")
        if tiles is None or block is None:
            raise ValueError(f"get_device_context: tiles= and block= go together (got tiles={tiles}, block={block})")
        workspace = ctx.workspace(("device_context", int(tiles), int(block), dtype),
                                  lambda c: _tile.Workspace(c, tiles, block, dtype))
    if workspace is not None and not isinstance(workspace, _tile.Workspace):
        raise TypeError(f"workspace must be an iris.tile.Workspace, got {type(workspace).__name__}")
    values = _layout(ctx.get_rank(), ctx.get_num_ranks(), ctx.heap.bases, workspace)
    cache = ctx.__dict__.setdefault("_device_contexts", {})
    key = tuple(values)  # a workspace re-created at the same addresses gives the same tensor: still valid
    t = cache.get(key)
    if t is None:
        t = cache[key] = torch.tensor(values, dtype=torch.int64, device=ctx.get_device())
    return t


def _method(fn):
    return triton.jit(fn)


if INTERPRET:
    def _constructor(fn):
        return fn
else:
    _constructor = triton.constexpr_function


if INTERPRET:
    def _check_block(ws_bytes, nbytes):
        """Interpreter: a plain Python check, raised at once."""
        have = int(ws_bytes.handle.data) if hasattr(ws_bytes, "handle") else int(ws_bytes)
        need = int(nbytes.value) if hasattr(nbytes, "value") else int(nbytes)
        if have == 0:
            raise ValueError("iris DeviceContext: a tile collective needs a workspace: "
                             "ctx.get_device_context(tiles=..., block=..., dtype=...)")
        if have != need:
            raise ValueError(f"iris DeviceContext: a collective's block is {need} bytes but the workspace's slots "
                             f"are {have} bytes (get_device_context(block=, dtype=))")
else:
    @triton.jit
    def _check_block(ws_bytes, nbytes: tl.constexpr):
        """Compiled: a device assertion, kept only in Triton's debug mode (TRITON_DEBUG=1)."""
        tl.device_assert(ws_bytes == nbytes, "iris DeviceContext: collective block differs from the workspace's")


class DeviceContext:
    """One rank's view of its peers inside a kernel; see the module docstring. Fields: rank, world (== world_size),
    heap_bases (int64 pointer), and the tile workspace (ws_addr, flags, epochs, ws_bytes)."""

    rank: tl.tensor
    world: tl.tensor
    world_size: tl.tensor
    heap_bases: tl.tensor
    ws_addr: tl.tensor
    flags: tl.tensor
    epochs: tl.tensor
    ws_bytes: tl.tensor

    @_constructor
    def __init__(self, rank, world, heap_bases, ws_addr, flags, epochs, ws_bytes):
        self.rank = rank
        self.world = world
        self.world_size = world
        self.heap_bases = heap_bases
        self.ws_addr = ws_addr
        self.flags = flags
        self.epochs = epochs
        self.ws_bytes = ws_bytes

    @staticmethod
    @triton.jit
    def initialize(context, rank=None, world_size=None, tracing: tl.constexpr = False):
        """The context from `ctx.get_device_context()`'s tensor. rank / world_size: pass constexprs to fold them
        (the reference's signature; `tracing` is accepted and ignored: see iris.tracing)."""
        if rank is None:
            r = tl.load(context).to(tl.int32)
        else:
            r = tl.full((), rank, tl.int32)
        if world_size is None:
            w = tl.load(context + 1).to(tl.int32)
        else:
            w = tl.full((), world_size, tl.int32)
        bases = context + 2
        extra = bases + w
        ws_addr = tl.load(extra + WS_DATA)
        flags = tl.cast(tl.load(extra + WS_FLAGS), tl.pointer_type(tl.int32))
        epochs = tl.cast(tl.load(extra + WS_EPOCHS), tl.pointer_type(tl.int32))
        ws_bytes = tl.load(extra + WS_SLOT_BYTES)
        return DeviceContext(r, w, bases, ws_addr, flags, epochs, ws_bytes)

    # ------------------------------------------------------------------------------------------ RMA
    @_method
    def translate(self, ptr, to_rank):
        """ptr (this rank's heap) as an address in to_rank's mapping."""
        return _dev.translate(ptr, self.rank, to_rank, self.heap_bases)

    @_method
    def load(self, pointer, from_rank, mask=None, other=None, cache_modifier=None, volatile=False,
             hint: tl.constexpr = None):
        """from_rank's copy of *pointer."""
        return _dev.load(pointer, self.rank, from_rank, self.heap_bases, mask, other, cache_modifier, volatile, hint)

    @_method
    def store(self, pointer, value, to_rank, mask=None, cache_modifier=None, hint: tl.constexpr = None):
        """value into to_rank's copy of *pointer."""
        _dev.store(pointer, value, self.rank, to_rank, self.heap_bases, mask, cache_modifier, hint)

    @_method
    def get(self, from_ptr, to_ptr, from_rank, mask=None, other=None, load_cache_modifier=None,
            store_cache_modifier=None, hint: tl.constexpr = None):
        """Local to_ptr[i] = from_rank's from_ptr[i]."""
        _dev.get(from_ptr, to_ptr, self.rank, from_rank, self.heap_bases, mask, other, load_cache_modifier,
                 store_cache_modifier, hint)

    @_method
    def put(self, from_ptr, to_ptr, to_rank, mask=None, other=None, load_cache_modifier=None,
            store_cache_modifier=None, hint: tl.constexpr = None):
        """to_rank's to_ptr[i] = local from_ptr[i]."""
        _dev.put(from_ptr, to_ptr, self.rank, to_rank, self.heap_bases, mask, other, load_cache_modifier,
                 store_cache_modifier, hint)

    @_method
    def copy(self, src_ptr, dst_ptr, from_rank, to_rank, mask=None, other=None, load_cache_modifier=None,
             store_cache_modifier=None, hint: tl.constexpr = None):
        """to_rank's dst_ptr[i] = from_rank's src_ptr[i] (either may be this rank)."""
        _dev.copy(src_ptr, dst_ptr, from_rank, to_rank, self.rank, self.heap_bases, mask, other,
                  load_cache_modifier, store_cache_modifier, hint)

    # ------------------------------------------------------------------------------------------ atomics
    @_method
    def atomic_add(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_add(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_sub(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_sub(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_cas(self, pointer, cmp, val, to_rank, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_cas(pointer, cmp, val, self.rank, to_rank, self.heap_bases, sem, scope, hint)

    @_method
    def atomic_xchg(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_xchg(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_and(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_and(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_or(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_or(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_xor(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_xor(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_min(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_min(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    @_method
    def atomic_max(self, pointer, val, to_rank, mask=None, sem=None, scope=None, hint: tl.constexpr = None):
        return _dev.atomic_max(pointer, val, self.rank, to_rank, self.heap_bases, mask, sem, scope, hint)

    # ------------------------------------------------------------------------------------------ flags
    @_method
    def signal(self, flag_ptr, value, to_rank, op: tl.constexpr = _SET):
        """Publish everything this program stored, then set (or add to, op="add") to_rank's int32 flag; release,
        system scope. Returns the old value."""
        return _dev.signal(flag_ptr, value, self.rank, to_rank, self.heap_bases, op)

    @_method
    def wait(self, flag_ptr, value, cmp: tl.constexpr = _GE):
        """Until the local int32 flag >= value (cmp="ge") or == value (cmp="eq"); acquire; bounded
        (IRIS_WAIT_TIMEOUT_S). Returns the value seen."""
        return _dev.wait(flag_ptr, value, self.rank, self.heap_bases, cmp)

    # ------------------------------------------------------------------------------------------ tile collectives
    @_method
    def _epoch(self, tile):
        """(this tile, its flags, the epoch of this call); the epoch is stored back for the next call."""
        t = tl.program_id(0) if tile is None else tile
        e = tl.load(self.epochs + t) + 1
        _tile.end(self.epochs, t, e)
        tl.debug_barrier()  # every thread has read this epoch before any thread stores the next call's
        return t, self.flags + t * _tile.FLAG_REGIONS * self.world, e

    @_method
    def _begin(self, x_dtype: tl.constexpr, BLOCK: tl.constexpr, tile):
        """(inbox of this tile as an x_dtype pointer, its flags, the epoch of this call)."""
        _check_block(self.ws_bytes, BLOCK * x_dtype.primitive_bitwidth // 8)
        t, flags, e = self._epoch(tile)
        ws = tl.cast(self.ws_addr, tl.pointer_type(x_dtype)) + t * 2 * _tile.SLOTS * self.world * BLOCK
        return ws, flags, e

    @_method
    def all_reduce(self, x, op: tl.constexpr = _SUM, variant: tl.constexpr = _ONE_SHOT, tile=None):
        """x combined over ranks, on every rank (variant: one_shot, two_shot, ring, atomic). Collective."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        return _tile.all_reduce(x, ws, flags, e, self.rank, self.world, self.heap_bases, op, variant)

    @_method
    def all_gather(self, x, out, tile=None):
        """Local out[r * BLOCK + i] <- rank r's x[i], for every rank r. Collective."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        _tile.all_gather(x, out, ws, flags, e, self.rank, self.world, self.heap_bases)

    @_method
    def reduce_scatter(self, x, out, op: tl.constexpr = _SUM, tile=None):
        """Local out <- chunk `rank` of x combined over ranks (see iris.tile.reduce_scatter). Collective."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        _tile.reduce_scatter(x, out, ws, flags, e, self.rank, self.world, self.heap_bases, op)

    @_method
    def broadcast(self, x, root, tile=None):
        """Rank root's x, on every rank. Collective."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        return _tile.broadcast(x, root, ws, flags, e, self.rank, self.world, self.heap_bases)

    @_method
    def reduce(self, x, root, op: tl.constexpr = _SUM, tile=None):
        """x combined over ranks on root (others get their x back). Collective."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        return _tile.reduce(x, root, ws, flags, e, self.rank, self.world, self.heap_bases, op)

    @_method
    def send(self, x, dst, tile=None):
        """x to rank dst, whose matching recv returns it. Point to point: send and recv each take the tile's next
        epoch on their own rank, so a pair matches only if both ranks made the same number of calls on the tile
        before (give one-way traffic tiles of its own; use sendrecv for exchanges where every rank sends)."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        _tile.send(x, dst, ws, flags, e, self.rank, self.world, self.heap_bases)

    @_method
    def recv(self, src, BLOCK: tl.constexpr, dtype: tl.constexpr = tl.float32, tile=None):
        """The block of BLOCK `dtype` elements that rank src sent on this tile (see send)."""
        ws, flags, e = self._begin(dtype, BLOCK, tile)
        return _tile.recv(src, ws, flags, e, self.rank, self.world, self.heap_bases, BLOCK)

    @_method
    def sendrecv(self, x, dst, src, tile=None):
        """x to rank dst, and the block rank src sent to this rank, in one call (one epoch): ring shifts and
        pairwise exchanges where every rank of the tile calls it. Collective over the tile's ranks."""
        ws, flags, e = self._begin(x.dtype, x.shape[0], tile)
        _tile.send(x, dst, ws, flags, e, self.rank, self.world, self.heap_bases)
        return _tile.recv(src, ws, flags, e, self.rank, self.world, self.heap_bases, x.shape[0])

    @_method
    def barrier(self, tile=None):
        """Every rank's program on this tile has arrived here; everything each stored before is visible to all.
        Flags only (no data moves): any workspace serves. Collective."""
        _t, flags, e = self._epoch(tile)
        _tile._arrive_peers(flags, 0, e, self.rank, self.world, self.heap_bases)
        for i in range(1, self.world):
            _tile._wait_from(flags, 0, e, (self.rank + i) % self.world, self.rank, self.world, self.heap_bases)

if INTERPRET:
    # The interpreter does not bind jit functions as methods: wrap each so that dctx.load(...) passes self.
    def _bind(fn):
        @functools.wraps(fn.fn)
        def method(self, *args, **kwargs):
            return fn(self, *args, **kwargs)
        return method

    for _name, _value in list(vars(DeviceContext).items()):
        if _name != "initialize" and hasattr(_value, "rewrite") and hasattr(_value, "fn"):
            setattr(DeviceContext, _name, _bind(_value))
else:
    DeviceContext = _aggregate(DeviceContext)
