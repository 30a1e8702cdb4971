"""A context that fails fast once its ranks are out of step.

Why: after a device wait timed out, a cross-rank mismatch was found, or a rank failed, the ranks' call counters,
epochs and heap offsets no longer agree, so every later collective call would wait out IRIS_WAIT_TIMEOUT_S again
(or, worse, return a wrong result). Such an event marks the context *broken*; every later call on it (catalog ops,
host collectives, barrier, device_barrier, allocation) raises `ContextBroken` at once:

    context broken by <cause> at <op>; create a new one

Recovery:
- `ctx.resync()` (collective: every rank of the context calls it) repairs a context in place after a one-sided
  device fault (a wait timed out because a rank raised, skipped or repeated a call): it waits for this rank's device
  work, lines the heap offsets up (the largest), clears the error record, the device barrier's flags and epoch, drops
  every workspace (their flags and epochs restart from zero in fresh memory; the old memory stays allocated, the same
  on every rank), the replay cache and the consistency cache, and unbreaks the context. It is refused when a host
  exchange of this process was abandoned (a timed-out or aborted barrier or consistency check): the process group
  then holds a half-finished operation, so only new processes help.
- Otherwise close the context (`ctx.close()` is local once broken) and create a new one; under `iris.RankPool` /
  `iris.spawn`, `RankPool.restart()` starts new ranks (a new process group).

Rank failures seen by a pool: `iris.RankPool` shares an abort record with its ranks. When a rank raises or dies while
its peers are still in the call, the pool writes the failed rank there; under the interpreter the peers' device waits
and every host exchange of iris.consistency poll it and raise `PeerFailed` within milliseconds instead of waiting out
their timeout, and every rank's context is marked broken before its next call. (GPU kernels cannot see it: a GPU
wait still runs to IRIS_WAIT_TIMEOUT_S, but the host exchanges and the next calls fail fast.)

Cost: one attribute test per call (`ctx._broken is None`), and a try/except that costs nothing unless it raises.
"""

import sys
import time

from . import device as _device
from .device import DeviceWaitTimeout, PeerFailed

# Exceptions that say "bad input, found on the host before anything was exchanged or launched": they leave the
# context in step on this rank (a peer that went on without this rank times out and is broken by that).
_INPUT_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError, MemoryError)


class ContextBroken(RuntimeError):
    """The context saw a fault that leaves its ranks out of step; it refuses every later call. Create a new one."""


class ConsistencyError(RuntimeError):
    """Ranks made different calls (or the same call with different arguments) where they must agree."""


def _short(exc):
    text = str(exc).strip().splitlines()
    text = text[0] if text else ""
    return f"{type(exc).__name__}({text[:300]})"


def mark_broken(ctx, cause, op):
    """Mark `ctx` broken by `cause` (an exception or a sentence) at `op`; the first cause is kept."""
    if getattr(ctx, "_broken", None) is None:
        ctx._broken = (cause if isinstance(cause, str) else _short(cause), op)


def is_broken(ctx):
    return getattr(ctx, "_broken", None) is not None


def raise_broken(ctx, op):
    cause, where = ctx._broken
    raise ContextBroken(f"rank {ctx.cur_rank}: context broken by {cause} at {where}; create a new one (this call: "
                        f"{op}; see iris/health.py)")


def check(ctx, op):
    """Raise ContextBroken if `ctx` is broken (cheap: one attribute test)."""
    if getattr(ctx, "_broken", None) is not None:
        raise_broken(ctx, op)


def breaks(exc):
    """Whether `exc`, passing through a collective call, leaves the ranks out of step."""
    if isinstance(exc, (DeviceWaitTimeout, PeerFailed, ConsistencyError)):
        return True
    if isinstance(exc, ContextBroken):
        return False  # already broken, with its first cause
    if isinstance(exc, _INPUT_ERRORS):
        return False
    # anything else mid-call (a failed launch, a lost peer, Ctrl-C): not known to be in step
    return isinstance(exc, (Exception, KeyboardInterrupt))


def on_error(ctx, op, exc):
    """Called by the front doors with an exception that passes through `op`: mark the context broken if it should."""
    if breaks(exc):
        mark_broken(ctx, exc, op)


# ---------------------------------------------------------------------------------------------- pool abort record
_abort = None  # a shared int64 array [failed rank + 1, generation] set by iris.launch's worker


def install_abort(record):
    """Worker side of iris.RankPool: the shared record that the pool writes a failed rank into."""
    global _abort
    _abort = record


def aborted_by():
    """The rank whose failure the pool reported, or None."""
    if _abort is None:
        return None
    failed = _abort[0]
    return failed - 1 if failed else None


def raise_if_aborted(what):
    """Raise PeerFailed if the pool reported a failed rank (polled by waits and host exchanges)."""
    failed = aborted_by()
    if failed is not None:
        raise PeerFailed(f"{what}: gave up because rank {failed} failed (its error is reported by the rank pool); "
                         f"the context is now broken")


def poll_until(done, what, timeout_s, interval_s=0.0005):
    """Spin on `done()` with a wall-clock bound and the pool's abort record; raise PeerFailed on either."""
    deadline = time.monotonic() + timeout_s
    i = 0
    while not done():
        if i % 64 == 0:
            raise_if_aborted(what)
            if time.monotonic() > deadline:
                raise PeerFailed(f"{what}: no answer from every peer within {timeout_s:g} s (IRIS_WAIT_TIMEOUT_S): a "
                                 f"peer failed, is stuck, or makes another call; the context is now broken")
        time.sleep(interval_s if i > 16 else 0)
        i += 1


def host_barrier(group=None):
    """dist.barrier(group), given up as soon as the rank pool reports a failed peer (a blocked gloo barrier would
    otherwise hold this rank until the pool kills it). Outside a pool: a plain dist.barrier."""
    import torch.distributed as dist

    if _abort is None:
        dist.barrier(group=group)
        return
    raise_if_aborted("barrier")
    work = dist.barrier(group=group, async_op=True)
    poll_until(work.is_completed, "barrier", float("inf"))  # raises PeerFailed: the caller marks the context
    work.wait()


def _gather_ints(ctx, values, what):
    """Bounded all-gather of a few int64 values per rank over ctx's group (rows by rank)."""
    import torch
    import torch.distributed as dist

    from .distributed import all_gather_single

    group = getattr(ctx, "group", None)
    mine = torch.tensor(values, dtype=torch.int64)
    if "gloo" not in str(dist.get_backend(group)).lower():
        mine = mine.to(ctx.get_device())
    out = torch.empty(ctx.num_ranks * len(values), dtype=torch.int64, device=mine.device)
    work = all_gather_single(out, mine, group=group, async_op=True)
    try:
        poll_until(work.is_completed, what, _timeout())
    except PeerFailed:
        ctx._host_abandoned = True
        raise
    work.wait()
    return out.view(ctx.num_ranks, -1).tolist()


def _timeout():
    from . import consistency

    return consistency.TIMEOUT_S


def resync(ctx):
    """Collective: repair a context after a one-sided device fault (see the module docstring). Returns what was
    cleared. Bounded: raises PeerFailed if a peer does not call it within IRIS_WAIT_TIMEOUT_S."""
    import torch

    from . import heap as _heap

    if getattr(ctx, "_closed", False):
        raise RuntimeError("resync: this Iris context is closed")
    if getattr(ctx, "_host_abandoned", False):
        raise ContextBroken(f"rank {ctx.cur_rank}: resync refused: a host exchange of this process was abandoned "
                            f"(context broken by {ctx._broken[0] if ctx._broken else '?'}), so its process group is "
                            f"out of step; start new processes (RankPool.restart())")
    if ctx.backend == "cuda":
        torch.cuda.synchronize(ctx.device)
    what = f"rank {ctx.cur_rank}: resync"
    offsets = [row[0] for row in _gather_ints(ctx, [ctx.heap.offset], what)]  # every rank is here: kernels are done
    top = -(-max(offsets) // _heap.ALIGNMENT) * _heap.ALIGNMENT
    ctx.heap.offset = top
    ctx._errors.zero_()
    ctx._barrier_flags.zero_()
    ctx._barrier_epoch.zero_()
    dropped = len(ctx._workspaces)
    ctx._workspaces = {}
    ctx.replay.clear()
    ctx.__dict__.pop("_iris_agreed", None)
    cause = ctx._broken
    ctx._broken = None
    _gather_ints(ctx, [0], what)  # nobody signals into a peer's flags before the peer has zeroed them
    return {"cause": cause, "heap_offsets": offsets, "workspaces_dropped": dropped}


if hasattr(_device, "_health"):  # the interpreter's waits poll the abort record through this module
    _device._health[0] = sys.modules[__name__]
