"""Cross-rank consistency checks: every rank must make the same collective calls with the same arguments.

Why: the heap is symmetric and the kernels trust it. A rank calling an op with M = 64 while its peer calls it with
M = 32 on the same buffers either waits out IRIS_WAIT_TIMEOUT_S on a flag that never comes, or returns a wrong
result silently. (PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL makes the same check for its collectives.)

What is checked: the first call of each *signature* (a catalog op, a host collective, an iris.tile workspace: its
name, variant, config, shapes, dtypes and the heap offsets of the operands that peers read or write) exchanges a
fingerprint with the peers of the context's group, and raises `ConsistencyError` on EVERY rank, naming each rank's
value, when they differ. Consistent programs see the same signatures in the same order on every rank, so every rank
makes the same exchanges. The context is then broken (iris/health.py): every later call raises at once.

    IRIS_DEBUG_CHECKS=1   check every call, prepared (replayed) calls included: one small host exchange per call
                          (tens of µs on GPUs), for debugging out-of-step ranks. Read at import.

Cost when off: the first call of a signature makes one host all-gather of 1 KiB (bounded by IRIS_WAIT_TIMEOUT_S and
by the rank pool's abort record, so a peer that never arrives fails the call within that time, or within
milliseconds when the pool saw it fail); later calls of that signature only look it up in a set (and prepared
calls on GPUs skip even that). Collective: every rank of the group must call it.

`check_heap_size` compares heap sizes across ranks before a heap is mapped (a clear error instead of an mmap or
IPC failure).
"""

import functools
import hashlib

import torch
import torch.distributed as dist

from . import health, settings
from .distributed import all_gather_single
from .health import ConsistencyError

EVERY_CALL = settings.value("IRIS_DEBUG_CHECKS")
TIMEOUT_S = settings.value("IRIS_WAIT_TIMEOUT_S")
_WIRE = 1024  # bytes per rank: an 8-byte digest, then the fingerprint's text (cut to fit)


def _encode(text):
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    body = text.encode()[:_WIRE - 8]
    return torch.frombuffer(bytearray((digest + body).ljust(_WIRE, b"\0")), dtype=torch.uint8)


def _gather(buf, world, group, what, device):
    if "gloo" not in str(dist.get_backend(group)).lower():  # a group without a CPU backend (NCCL only)
        buf = buf.to(device)
    out = torch.empty(world * buf.numel(), dtype=torch.uint8, device=buf.device)
    work = all_gather_single(out, buf, group=group, async_op=True)
    health.poll_until(work.is_completed, what, TIMEOUT_S)
    work.wait()
    return out.view(world, -1).cpu()


def agree(ctx, what, value, op=None):
    """Collective: raise ConsistencyError on every rank unless every rank of ctx's group passed an equal `value`
    (compared by its repr). Marks the context broken on a mismatch or a lost peer."""
    world = ctx.num_ranks
    if world == 1:
        return
    text = repr(value)
    op = op or what
    try:
        rows = _gather(_encode(text), world, getattr(ctx, "group", None),
                       f"rank {ctx.cur_rank}: consistency check of {op}", ctx.get_device())
    except BaseException as e:
        if isinstance(e, health.PeerFailed):
            ctx._host_abandoned = True  # its process group holds a half-finished exchange (health.resync)
        health.on_error(ctx, op, e)
        raise
    digests = {bytes(row[:8].tolist()) for row in rows}
    if len(digests) == 1:
        return
    values = [bytes(row[8:].tolist()).rstrip(b"\0").decode(errors="replace") for row in rows]
    lines = "\n".join(f"  rank {r}: {v}" for r, v in enumerate(values))
    err = ConsistencyError(f"{op}: ranks disagree on {what}; every rank must make the same call with the same "
                           f"arguments (and allocate the same sequence of heap tensors):\n{lines}")
    health.mark_broken(ctx, f"ConsistencyError({op}: ranks disagree on {what})", op)
    raise err


def first_call(ctx, fingerprint):
    """Collective on the first call of `fingerprint` (a tuple whose first item names the op): agree() on it. Later
    calls with the same fingerprint cost one set lookup, unless IRIS_DEBUG_CHECKS=1 checks them all."""
    seen = ctx.__dict__.get("_iris_agreed")
    if seen is None:
        seen = ctx.__dict__["_iris_agreed"] = set()
    try:
        known = fingerprint in seen
    except TypeError:  # something unhashable: compare its text
        fingerprint = repr(fingerprint)
        known = fingerprint in seen
    if known and not EVERY_CALL:
        return
    agree(ctx, "the call's signature (op, variant, config, shapes, dtypes, heap offsets)", fingerprint,
          fingerprint[0] if isinstance(fingerprint, tuple) else None)
    seen.add(fingerprint)


def offset(ctx, t):
    """Heap offset of tensor `t` on this rank, or None if it is not on the heap (peers must agree on offsets)."""
    if t is None or not isinstance(t, torch.Tensor) or not ctx.is_symmetric(t):
        return None
    return t.data_ptr() - ctx.heap.bases[ctx.cur_rank]


def describe(t):
    """Shape and dtype of a tensor argument (anything else as itself) for a fingerprint."""
    if isinstance(t, torch.Tensor):
        return tuple(t.shape), str(t.dtype).replace("torch.", "")
    return t


def check_heap_size(heap_size, rank, world, group=None):
    """Before a heap is mapped: heap_size must be a positive int number of bytes, the same on every rank.
    Collective (one host all-gather; blocking, as the bootstrap around it is)."""
    if isinstance(heap_size, bool) or not isinstance(heap_size, int):
        raise TypeError(f"heap_size must be an int number of bytes, got {heap_size!r} ({type(heap_size).__name__})"
                        f"; e.g. heap_size=1 << 30 or int(1e9)")
    if heap_size <= 0:
        raise ValueError(f"heap_size must be a positive number of bytes, got {heap_size}")
    if world == 1:
        return
    sizes = [None] * world
    dist.all_gather_object(sizes, heap_size, group=group)
    if len(set(sizes)) > 1:
        lines = ", ".join(f"rank {r}: {s}" for r, s in enumerate(sizes))
        raise ConsistencyError(f"rank {rank}: heap_size differs across ranks ({lines}); every rank must create its "
                               f"context with the same heap_size")


def guarded(op):
    """Decorator of a host front door `fn(ctx, ...)`: raise ContextBroken at once on a broken context, break it on a
    fault passing through (iris/health.py), and with IRIS_DEBUG_CHECKS=1 compare the call's arguments (shapes,
    dtypes, plain values) across ranks on every call, prepared calls included. Off, it costs an attribute test and
    a call frame (well under a microsecond)."""

    def wrap(fn):
        def checked(ctx, args, kwargs):
            if getattr(ctx, "_broken", None) is not None:
                health.raise_broken(ctx, op)
            if EVERY_CALL and ctx.get_num_ranks() > 1:
                agree(ctx, "the call's arguments", (op, *map(describe, args),
                                                     *sorted((k, describe(v)) for k, v in kwargs.items())), op)

        @functools.wraps(fn)
        def call(ctx, *args, **kwargs):
            try:
                if EVERY_CALL or ctx._broken is not None:
                    checked(ctx, args, kwargs)
                return fn(ctx, *args, **kwargs)
            except BaseException as e:
                health.on_error(ctx, op, e)
                raise

        return call

    return wrap
