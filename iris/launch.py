"""Local rank processes for scripts, examples and tests.

`spawn(fn, world_size, *args)` starts `world_size` processes, each builds an `iris.iris()` context and runs
`fn(ctx, *args)`; the return values come back as a list indexed by rank. `RankPool` keeps the processes (and their
torch/triton imports and heaps) alive across many calls, which is what keeps the test suite fast.

Failure is reported, never waited on forever: a rank's exception comes back as `RankError` naming the rank with its
traceback; a rank that dies (signal, os._exit) or a call that outlives its timeout kills the whole pool. Children
get SIGKILL if the parent dies, and the parent removes any /dev/shm segment of its session when the pool closes.
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

from .distributed import free_port

DEFAULT_TIMEOUT_S = float(os.environ.get("IRIS_RANK_TIMEOUT_S", "900"))
_env_lock = threading.Lock()


class RankError(RuntimeError):
    """A rank raised, died or timed out. `.rank` is the first failing rank."""

    def __init__(self, rank, message):
        super().__init__(message)
        self.rank = rank


def _die_with_parent(parent_pid):
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _worker(rank, conn, parent_pid, heap_size, backend, nodes=1):
    _die_with_parent(parent_pid)
    try:
        import iris

        make = iris.multi_node if nodes > 1 else iris.iris  # simulated hosts: no heap may span them
        ctx = make(heap_size, backend=backend) if heap_size else None
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
        self.world_size, self.session = world_size, uuid.uuid4().hex[:12]
        self.procs, self.conns, self.broken = [], [], None
        mpctx = mp.get_context("spawn")
        per_node = world_size // nodes
        common = {"WORLD_SIZE": world_size, "LOCAL_WORLD_SIZE": per_node, "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": free_port(),
                  "IRIS_SESSION": self.session, **(env or {})}
        if backend:
            common["IRIS_BACKEND"] = backend
        try:
            for rank in range(world_size):
                parent_end, child_end = mpctx.Pipe()
                proc = mpctx.Process(target=_worker, args=(rank, child_end, os.getpid(), heap_size, backend, nodes),
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
        except BaseException:
            self.close()
            raise

    def _collect(self, what, timeout):
        """Wait for one reply per rank; on a failure give the other ranks a short grace, then kill the pool."""
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
        if pending or errors:
            if pending:
                for rank in pending:
                    errors.setdefault(rank, f"rank {rank} gave no answer to {what} within its time "
                                            f"({timeout:g} s, or 15 s after another rank failed)\n")
            first = min(errors)
            report = "".join(f"--- rank {r} ---\n{errors[r]}" for r in sorted(errors))
            if pending or any(not p.is_alive() for p in self.procs):
                self.broken = f"a previous call failed ({what})"
                self.close()
            raise RankError(first, f"{what} failed on rank(s) {sorted(errors)}:\n{report}")
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
            raise RuntimeError(f"this RankPool is closed ({self.broken or 'closed'})")
        payload = pickle.dumps((fn, args, kwargs))
        for conn in self.conns:
            conn.send_bytes(payload)
        return self._collect(getattr(fn, "__name__", "call"), timeout)

    def close(self):
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.send_bytes(b"stop")
        for proc in self.procs:
            proc.join(timeout=10)
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
        self.close()


def spawn(fn, world_size, *args, heap_size=1 << 30, backend=None, env=None, timeout=DEFAULT_TIMEOUT_S, nodes=1,
          **kwargs):
    """Run `fn(ctx, *args, **kwargs)` on `world_size` fresh local ranks; return the results by rank. nodes=k
    simulates k hosts of world_size/k consecutive ranks each: fn then gets an iris.multi_node context (ctx.local: the
    node's heap context, ctx.cross: the cross-node group), as a job over k machines would build."""
    with RankPool(world_size, heap_size=heap_size, backend=backend, env=env, timeout=timeout, nodes=nodes) as pool:
        return pool.run(fn, *args, timeout=timeout, **kwargs)
