"""Local rank processes for scripts, examples and tests.

`spawn(fn, world_size, *args)` starts `world_size` processes, each builds an `iris.iris()` context and runs
`fn(ctx, *args)`; the return values come back as a list indexed by rank. `RankPool` keeps the processes (and their
torch/triton imports and heaps) alive across many calls, which is what keeps the test suite fast.

Failure is reported, never waited on forever: a rank's exception comes back as `RankError` naming the rank with its
traceback; a rank that dies (signal, os._exit) or a call that outlives its timeout kills the whole pool. Children
get SIGKILL if the parent dies, and the parent removes any /dev/shm segment of its session when the pool closes.

When a rank fails while its peers are still in the call, the pool writes it into an abort record shared with the
ranks (iris/health.py): their interpreter waits and host consistency exchanges give up within milliseconds (the
context is then broken), instead of waiting out IRIS_WAIT_TIMEOUT_S. `RankError` puts the root cause first (the first
rank that failed on its own, with its traceback), then the ranks that failed as a consequence (timed out, gave up
waiting on it, or found their context broken). Ctrl-C in the parent kills the ranks at once (they ignore SIGINT).

heap_size: a positive int number of bytes, the same on every rank; None runs `fn(None, ...)` without a context (for
functions that set up their own process group and context); 0 is refused.
"""

import contextlib
import ctypes
import glob
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import signal
import socket
import threading
import time
import traceback
import uuid

from . import settings
from .distributed import free_port

DEFAULT_TIMEOUT_S = settings.value("IRIS_RANK_TIMEOUT_S")
_env_lock = threading.Lock()


class RankError(RuntimeError):
    """A rank raised, died or timed out. `.rank` is the root cause's rank (the first to fail on its own), `.ranks`
    every failed rank, root causes first."""

    def __init__(self, rank, message, ranks=None):
        super().__init__(message)
        self.rank = rank
        self.ranks = ranks if ranks is not None else [rank]


# Failures that follow from another rank's: a wait or exchange that gave up, a context already broken, no answer.
_CONSEQUENCES = ("DeviceWaitTimeout", "PeerFailed", "ContextBroken", "gave no answer")


def _is_consequence(text):
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return any(word in last for word in _CONSEQUENCES)


def _check_heap_size(heap_size):
    if heap_size is None:
        return
    if isinstance(heap_size, bool) or not isinstance(heap_size, int):
        raise TypeError(f"heap_size must be an int number of bytes, got {heap_size!r} ({type(heap_size).__name__}); "
                        f"e.g. heap_size=1 << 30 or int(1e9)")
    if heap_size <= 0:
        raise ValueError(f"heap_size must be a positive number of bytes, got {heap_size}; pass heap_size=None to run "
                         f"fn(None, ...) without an Iris context")


def _die_with_parent(parent_pid):
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _worker(rank, conn, parent_pid, heap_size, backend, abort, nodes=1):
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it kills the ranks
    try:
        import iris
        from iris import health

        health.install_abort(abort)
        make = iris.multi_node if nodes > 1 else iris.iris  # simulated hosts: no heap may span them
        ctx = make(heap_size, backend=backend) if heap_size is not None else None
        conn.send_bytes(pickle.dumps(("ready", None)))
    except BaseException:
        conn.send_bytes(pickle.dumps(("error", traceback.format_exc())))
        return
    while True:
        try:
            msg = conn.recv_bytes()
        except EOFError:
            return
        if msg == b"stop":
            return
        try:
            fn, args, kwargs = pickle.loads(msg)
            reply = ("ok", fn(ctx, *args, **kwargs))
        except BaseException:
            reply = ("error", traceback.format_exc())
        try:
            conn.send_bytes(pickle.dumps(reply))
        except Exception:  # an unpicklable result is the caller's bug: say so instead of dying silently
            conn.send_bytes(pickle.dumps(("error", traceback.format_exc())))


@contextlib.contextmanager
def _environ(values):
    with _env_lock:
        saved = {k: os.environ.get(k) for k in values}
        os.environ.update({k: str(v) for k, v in values.items()})
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class RankPool:
    """`world_size` live rank processes, each holding an Iris context; `run(fn, *args)` calls `fn(ctx, *args)` on
    every rank at once and returns the results by rank."""

    def __init__(self, world_size, heap_size=1 << 30, backend=None, env=None, timeout=DEFAULT_TIMEOUT_S, nodes=1):
        if not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world_size must be a positive integer, got {world_size!r}")
        if not isinstance(nodes, int) or nodes < 1 or world_size % nodes:
            raise ValueError(f"nodes={nodes!r}: expected a positive integer that divides world_size={world_size}")
        _check_heap_size(heap_size)
        self._args = (world_size, heap_size, backend, env, timeout, nodes)
        self.world_size, self.session = world_size, uuid.uuid4().hex[:12]
        self.procs, self.conns, self.broken = [], [], None
        mpctx = mp.get_context("spawn")
        self.abort = mpctx.Array("q", 2, lock=False)  # [failed rank + 1, 0]: read by the ranks (iris/health.py)
        per_node = world_size // nodes
        common = {"WORLD_SIZE": world_size, "LOCAL_WORLD_SIZE": per_node, "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": free_port(),
                  "IRIS_SESSION": self.session, **(env or {})}
        if backend:
            common["IRIS_BACKEND"] = backend
        try:
            for rank in range(world_size):
                parent_end, child_end = mpctx.Pipe()
                proc = mpctx.Process(target=_worker, args=(rank, child_end, os.getpid(), heap_size, backend,
                                                           self.abort, nodes),
                                     name=f"iris-rank{rank}", daemon=True)
                # nodes > 1 simulates hosts (consecutive ranks per node, as torchrun numbers them): a host identity
                # (IRIS_HOSTNAME), local rank and node rank of their own, and an iris.multi_node context per rank
                node = {"IRIS_HOSTNAME": f"{socket.gethostname()}-sim{rank // per_node}",
                        "GROUP_RANK": rank // per_node, "IRIS_DEVICE": rank} if nodes > 1 else {}
                with _environ({**common, "RANK": rank, "LOCAL_RANK": rank % per_node, **node}):
                    proc.start()
                child_end.close()
                self.procs.append(proc)
                self.conns.append(parent_end)
            self._collect("start-up", timeout)
        except BaseException as e:
            self.close(grace=0 if isinstance(e, KeyboardInterrupt) else 10.0)
            raise

    def _collect(self, what, timeout):
        """Wait for one reply per rank; on a failure tell the others (abort record), give them a short grace, then
        kill the pool. Ctrl-C kills the ranks at once."""
        try:
            return self._collect_replies(what, timeout)
        except KeyboardInterrupt:
            self.broken = f"interrupted during {what}"
            self.close(grace=0)
            raise

    def _collect_replies(self, what, timeout):
        results, errors = [None] * self.world_size, {}
        pending = set(range(self.world_size))
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if errors:
                left = min(left, 15.0)
            waitables = {self.conns[r]: r for r in pending}
            waitables.update({self.procs[r].sentinel: r for r in pending})
            ready = mpc.wait(list(waitables), timeout=max(left, 0))
            if not ready:
                break
            for obj in ready:
                rank = waitables[obj]
                if rank not in pending:
                    continue
                reply = self._receive(rank)
                if reply is not None:
                    pending.discard(rank)
                    status, value = reply
                    if status in ("ok", "ready"):
                        results[rank] = value
                    else:
                        errors[rank] = value
                elif not self.procs[rank].is_alive():
                    pending.discard(rank)
                    self.procs[rank].join(timeout=5)
                    errors[rank] = f"rank {rank} exited with code {self.procs[rank].exitcode} during {what}\n"
                if rank in errors and pending and not self.abort[0]:
                    self.abort[0] = rank + 1  # peers still in the call stop waiting on this rank
        if pending or errors:
            if pending:
                for rank in pending:
                    errors.setdefault(rank, f"rank {rank} gave no answer to {what} within its time "
                                            f"({timeout:g} s, or 15 s after another rank failed)\n")
            if pending or any(not p.is_alive() for p in self.procs):
                self.broken = f"a previous call failed ({what})"
                self.close()
            raise _rank_error(what, errors)
        return results

    def _receive(self, rank):
        """The rank's reply, or None if it has none (yet, or ever: a dead rank's pipe reads EOF)."""
        conn = self.conns[rank]
        try:
            return pickle.loads(conn.recv_bytes()) if conn.poll() else None
        except (EOFError, OSError):
            self.procs[rank].join(timeout=5)
            return None

    def run(self, fn, *args, timeout=DEFAULT_TIMEOUT_S, **kwargs):
        if self.broken or not self.procs:
            raise RuntimeError(f"this RankPool is closed ({self.broken or 'closed'}); RankPool.restart() starts new "
                               f"ranks")
        payload = pickle.dumps((fn, args, kwargs))
        self.abort[0] = 0  # the ranks are idle: a failure reported in an earlier call is not this call's
        for conn in self.conns:
            conn.send_bytes(payload)
        return self._collect(getattr(fn, "__name__", "call"), timeout)

    def restart(self):
        """Close the ranks and start new ones with the same arguments: the way back from a broken context (every
        rank gets a fresh process group and heap)."""
        self.close()
        self.__init__(*self._args)

    def close(self, grace=10.0):
        """Stop the ranks: each may finish its current call for up to `grace` seconds in all (not per rank), then
        the rest are killed."""
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.send_bytes(b"stop")
        deadline = time.monotonic() + grace
        for proc in self.procs:
            proc.join(timeout=max(deadline - time.monotonic(), 0))
        for proc in self.procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []
        for path in glob.glob(f"/dev/shm/iris-{self.session}-*"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(grace=0 if exc[0] is not None and issubclass(exc[0], KeyboardInterrupt) else 10.0)


def _rank_error(what, errors):
    """RankError with the root causes first (ranks that failed on their own, in rank order), then the ranks that
    failed as a consequence of them (gave up waiting, found their context broken, gave no answer)."""
    causes = [r for r in sorted(errors) if not _is_consequence(errors[r])]
    others = [r for r in sorted(errors) if r not in causes]
    if not causes:  # all of them waited: the earliest-numbered is as good a root as any
        causes, others = others[:1], others[1:]
    report = "".join(f"--- rank {r} (root cause) ---\n{errors[r]}" for r in causes)
    if others:
        report += (f"=== then, as a consequence, rank(s) {others} failed (gave up waiting on it, or found their "
                   f"context broken) ===\n")
        report += "".join(f"--- rank {r} ---\n{errors[r]}" for r in others)
    return RankError(causes[0], f"{what} failed on rank {causes[0]}"
                     f"{f' (and {len(causes) + len(others) - 1} more rank(s))' if len(errors) > 1 else ''}:\n{report}",
                     causes + others)


def spawn(fn, world_size, *args, heap_size=1 << 30, backend=None, env=None, timeout=DEFAULT_TIMEOUT_S, nodes=1,
          **kwargs):
    """Run `fn(ctx, *args, **kwargs)` on `world_size` fresh local ranks; return the results by rank. nodes=k
    simulates k hosts of world_size/k consecutive ranks each: fn then gets an iris.multi_node context (ctx.local: the
    node's heap context, ctx.cross: the cross-node group), as a job over k machines would build. heap_size=None:
    `fn(None, ...)`, no context (fn sets up its own)."""
    with RankPool(world_size, heap_size=heap_size, backend=backend, env=env, timeout=timeout, nodes=nodes) as pool:
        return pool.run(fn, *args, timeout=timeout, **kwargs)
