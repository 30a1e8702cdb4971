"""Fault injection for rank functions: make rank r raise, die or stall at its n-th call of something.

    faults.point(ctx, rank=1, at=2)                          # in a loop: rank 1 raises InjectedFault at its 2nd pass
    faults.point(ctx, rank=1, at=2, action="kill")           # ... or dies (os._exit), or "stall"s for `stall_s`
    with faults.inside(iris.collectives, "_on_stream", rank=1, at=2):
        ...                                                   # rank 1's 2nd _on_stream call raises (inside a call)
    with faults.wait_timeout(2.0):                            # a short IRIS_WAIT_TIMEOUT_S for this block (CPU)
        ...

Counters are per process and per label; `reset()` clears them. Everything here runs inside rank processes.
"""

import contextlib
import functools
import os
import time

from iris import consistency, device

_counts = {}


class InjectedFault(RuntimeError):
    """The fault this module raised on purpose."""


def reset():
    _counts.clear()


def _fire(ctx_rank, rank, at, action, label, stall_s):
    n = _counts[label] = _counts.get(label, 0) + 1
    if ctx_rank != rank or n != at:
        return
    if action == "raise":
        raise InjectedFault(f"injected fault on rank {rank} at call {at} of {label}")
    if action == "kill":
        os._exit(17)
    if action == "stall":
        time.sleep(stall_s)
        return
    raise ValueError(f"action={action!r}: expected 'raise', 'kill' or 'stall'")


def point(ctx, rank, at, action="raise", label="point", stall_s=5.0):
    """Count a pass on this rank; on `rank`'s `at`-th pass (1-based), raise InjectedFault, die or stall."""
    _fire(ctx.get_rank(), rank, at, action, label, stall_s)


@contextlib.contextmanager
def inside(module, name, rank, at, action="raise", stall_s=5.0, cur_rank=None):
    """Within the block, `module.name` (a function the code under test calls) fires the fault on `rank`'s `at`-th
    call, then runs as usual. cur_rank: this process's rank (default: the RANK environment variable)."""
    original = getattr(module, name)
    me = int(os.environ.get("RANK", "0")) if cur_rank is None else cur_rank
    label = f"{module.__name__}.{name}"

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        _fire(me, rank, at, action, label, stall_s)
        return original(*args, **kwargs)

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)
        _counts.pop(label, None)


@contextlib.contextmanager
def wait_timeout(seconds):
    """IRIS_WAIT_TIMEOUT_S for interpreter waits and host consistency exchanges within the block (CPU backend: the
    interpreter reads it at every wait; GPU kernels bake it in when they compile)."""
    saved = device.WAIT_TIMEOUT_S, consistency.TIMEOUT_S
    device.WAIT_TIMEOUT_S = consistency.TIMEOUT_S = seconds
    try:
        yield
    finally:
        device.WAIT_TIMEOUT_S, consistency.TIMEOUT_S = saved


def unbreak(ctx):
    """Test-only: clear a context's broken mark after a fault the test KNOWS left the ranks in step (a mismatch
    caught by the consistency check, before anything was exchanged on the device), so one context serves many
    cases. Real code creates a new context instead."""
    ctx._broken = None
