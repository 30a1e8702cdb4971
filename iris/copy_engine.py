"""Host-driven transfers on the copy engines, ordered with running kernels through flags, without an SM.

    with ctx.copy_engine() as ce:               # a side stream that starts after the current stream's work so far
        ce.get(dst, a, from_rank=1, flag=flags[3:4])  # dst <- rank 1's copy of `a`; then flags[3] = 1 (here)
        consumer[grid](...)                     # runs meanwhile, waits on / counts the flags
        ce.wait(ready[0:1], 8)                  # the stream waits until ready[0] >= 8 (the kernel counts it up)
        ce.put(inbox, part, to_rank=1, flag=inflags[0:1])  # rank 1's inbox <- part; then rank 1's inflags[0] = 1
    # on leaving the block the current stream waits for all of it (ce.join())

Why: a persistent kernel that holds every SM cannot leave one free for a communication kernel, and if it waits on
that kernel's flags it deadlocks. The copy engines move memory between GPUs without SMs, and stream memory
operations (cuStreamWriteValue32 / cuStreamWaitValue32) raise and await flags from the stream itself, so a kernel can
keep all SMs and consume each chunk as it lands, or hand each chunk it finishes to the copy engine. Everything is
enqueued on streams: it runs eagerly and inside CUDA graph capture alike.

Flags are int32 tensors on the symmetric heap (one element each). A stream write stores a constant (a captured graph
replays it unchanged), so flags hold 0/1 or counts, and whoever consumes a flag lowers it again for the next call.
A stream wait has no timeout of its own: wait only on flags that the local kernels raise (their own waits are
bounded, and they raise the flag even after a timed-out wait), so a stream wait always ends. It also holds back
whatever shares its hardware queue: CUDA spreads streams over CUDA_DEVICE_MAX_CONNECTIONS queues (default 8), so
with 1 (as some training frameworks set) a wait for a kernel launched after it would block that kernel; wait()
refuses to run then. And launch a kernel that a stream wait waits for before enqueuing the wait: on an H200 the
other order hung at the kernel's first launch (scripts/copy_engine_check.py --handshake --wait-first), while the
CopyEngine can be created (forked) before the launch as usual. For the same reason, enqueue the waits before
launching anything that cannot start until that kernel ends (a kernel after it on its stream): waits queued behind
such a launch deadlocked the copy-engine all-reduce across two GPUs (fused_ops/copy_reduce.py). Captured into a
CUDA graph, the side stream becomes a branch of the graph: CUDA then picks the order and promises no concurrency
between branches, so a kernel and a stream wait that wait on each other's flags may deadlock there (a captured
tensor-parallel MLP step with the catalog's copy-engine variants did); the catalog refuses to capture them.

On the CPU backend a worker thread plays the side stream: it runs the same operations in order, polling flags with
a deadline (IRIS_WAIT_TIMEOUT_S), concurrently with the interpreter's kernels; join() waits for it and re-raises
what went wrong there.
"""

import functools
import queue
import threading
import time

import torch

from . import device as _dev, replay as _replay, settings

_DRIVER = None
_STREAMS = {}


def _driver():
    global _DRIVER
    if _DRIVER is None:
        from ._cudart import CudaDriver

        _DRIVER = CudaDriver()
    return _DRIVER


class CopyEngine:
    def __init__(self, ctx):
        self.ctx = ctx
        self.cuda = ctx.backend == "cuda"
        self._then, self._done, self._record = None, False, None
        if self.cuda:
            self.main = torch.cuda.current_stream(ctx.device)
            key = (ctx.device, ctx.handle)  # per context: two contexts' copies never queue behind each other
            if key not in _STREAMS:
                _STREAMS[key] = torch.cuda.Stream(ctx.device)
            self.stream = _STREAMS[key]
            self.handle = self.stream.cuda_stream  # one side stream per device and context: plans hold its handle
            self.stream.wait_stream(self.main)
        else:
            self._ops, self._error, self._stopping = queue.Queue(), [], False
            self._worker = threading.Thread(target=self._work, daemon=True)
            self._worker.start()

    # -------------------------------------------------------------------------------------------- operations
    def get(self, dst, src, from_rank, flag=None):
        """dst (a contiguous tensor of this rank, anywhere in device memory) <- `from_rank`'s copy of `src` (a
        contiguous tensor on the symmetric heap, same dtype and size); then, if given, this rank's one-element
        int32 `flag` <- 1."""
        self._check_copy("get", dst, src, from_rank, src)
        self._copy(dst.data_ptr(), self._address(src, from_rank), dst, self._peer(src, from_rank))
        if flag is not None:
            self.write(flag, 1)

    def put(self, dst, src, to_rank, flag=None):
        """`to_rank`'s copy of `dst` (contiguous, on the symmetric heap) <- src (a contiguous tensor of this rank,
        same dtype and size); then, if given, `to_rank`'s copy of the one-element int32 `flag` <- 1."""
        self._check_copy("put", dst, src, to_rank, dst)
        self._copy(self._address(dst, to_rank), src.data_ptr(), self._peer(dst, to_rank), src)
        if flag is not None:
            self.write(flag, 1, to_rank)

    def write(self, flag, value, rank=None):
        """`rank`'s (default: this rank's) copy of the one-element int32 heap tensor `flag` <- value, after every
        operation enqueued before it."""
        rank = self.ctx.cur_rank if rank is None else rank
        self._check_flag("write", flag, rank)
        if self.cuda:
            address = self._address(flag, rank)
            self._issue(lambda stream: _driver().stream_write_value32_call(stream, address, value))
        else:
            self._issue(("_fill", self._peer(flag, rank), value))

    def wait(self, flag, value):
        """Operations enqueued after this one start once this rank's one-element int32 heap tensor `flag` >= value
        (raised by a kernel of this rank: see the module's note on timeouts)."""
        self._check_flag("wait", flag, self.ctx.cur_rank)
        if self.cuda and settings.value("CUDA_DEVICE_MAX_CONNECTIONS") == "1":
            raise RuntimeError("CopyEngine.wait: CUDA_DEVICE_MAX_CONNECTIONS=1 puts every stream on one hardware "
                               "queue, where a stream wait for a concurrently running kernel would block that kernel; "
                               "unset it or raise it (the default is 8)")
        if self.cuda:
            address = flag.data_ptr()
            self._issue(lambda stream: _driver().stream_wait_value32_call(stream, address, value))
        else:
            self._issue(("_poll", flag, value))

    def plan(self, key, enqueue):
        """enqueue() makes this call's get/put/write/wait; `key` names everything they depend on (pointers, sizes,
        ranks, values), or is None. The first call with a key records the operations resolved (addresses, ctypes
        arguments), and later calls issue the record: no checks, no slicing, no address arithmetic, which cost
        the catalog's eager copy-engine calls most of their host time
        (results/current/host/eager_host_profile_182b854.log).
        Records are kept per context, cleared with its replay cache (heap memory released); IRIS_PREPARED=0 turns
        them off."""
        if key is None or not _replay.PREPARED:
            enqueue()
            return
        plans = self.ctx.replay.plans
        ops = plans.get(key)
        if ops is not None:
            plans.move_to_end(key)
            self._check_open_for("operation")
            for op in ops:
                self._dispatch(op)
            return
        self._record = []
        try:
            enqueue()
            _replay.bounded_put(plans, key, self._record, self.ctx.replay.capacity)
        finally:
            self._record = None

    def then(self, launch):
        """launch() enqueues kernels that follow every operation enqueued so far and run alongside the current
        stream's work: a GEMM over the rows the copies brought, say, which then starts on the SMs that the current
        stream's kernel frees instead of after it ends. Nothing may be enqueued after it. CPU: launch() runs in
        join(), once the worker has finished (the interpreter runs one kernel at a time)."""
        self._check_open_for("then")
        if self.cuda:
            with torch.cuda.stream(self.stream):
                launch()
        else:
            self._then = launch
        self._done = True

    def join(self):
        """The current stream waits for every operation enqueued so far (CPU: the worker finishes them, then what
        then() was given runs)."""
        if self.cuda:
            self.main.wait_stream(self.stream)
            return
        self._ops.put(None)
        self._worker.join()
        if self._error:
            raise self._error[0]
        if self._then is not None:
            self._then()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        """join() on a normal exit. After an exception (a kernel launch or wait that failed) the CPU worker stops
        polling and ends without raising, so the first error is the one reported and no thread is left behind."""
        if exc_type is None:
            self.join()
        elif not self.cuda:
            self._stopping = True
            self._ops.put(None)
            self._worker.join()

    # -------------------------------------------------------------------------------------------- internals
    def _check_open_for(self, what):
        if self._done:
            raise RuntimeError(f"CopyEngine.{what}: nothing may be enqueued after then()")

    def _issue(self, op):
        """Enqueue one operation. GPUs: op(the side stream's handle) makes its driver call (_cudart.prepared), which
        runs now; CPU: op is (method, *arguments) for the worker. What is issued is recorded while plan() records."""
        self._check_open_for("operation")
        if self.cuda:
            op = op(self.handle)
        self._dispatch(op)
        if self._record is not None:
            self._record.append(op)

    def _dispatch(self, op):
        """A resolved operation: GPUs, its driver call now; CPU, (method, *arguments) onto the worker's queue."""
        if self.cuda:
            op()
        else:
            method, *args = op
            self._ops.put(functools.partial(getattr(self, method), *args))

    def _copy(self, dst_address, src_address, dst, src):
        """dst_address <- src_address on GPUs; on the CPU the same bytes as tensors of this process (dst <- src)."""
        if self.cuda:
            nbytes = src.numel() * src.element_size()
            rt = self.ctx.heap.rt
            self._issue(lambda stream: rt.memcpy_async_call(dst_address, src_address, nbytes, stream))
        else:
            self._issue(("_copy_tensor", dst.view(-1), src.view(-1)))

    @staticmethod
    def _copy_tensor(dst, src):
        dst.copy_(src)

    @staticmethod
    def _fill(target, value):
        target.fill_(value)

    def _work(self):
        while True:
            op = self._ops.get()
            if op is None:
                return
            if self._error or self._stopping:
                continue  # drain after a failure (join() raises it) or an abandoned call
            try:
                op()
            except Exception as err:  # noqa: BLE001 - handed to join()
                self._error.append(err)

    def _poll(self, flag, value):
        deadline = time.monotonic() + _dev.WAIT_TIMEOUT_S
        while int(flag.item()) < value and not self._stopping:
            if time.monotonic() > deadline:
                offset = flag.data_ptr() - self.ctx.heap.bases[self.ctx.cur_rank]
                raise _dev.DeviceWaitTimeout(
                    f"rank {self.ctx.cur_rank}, copy engine: wait on the flag at heap offset {offset} for a value >= "
                    f"{value} timed out after {_dev.WAIT_TIMEOUT_S:g} s (last seen {int(flag.item())})")
            time.sleep(0.0002)

    def _address(self, t, rank):
        heap = self.ctx.heap
        return heap.bases[rank] + t.data_ptr() - heap.bases[self.ctx.cur_rank]

    def _peer(self, t, rank):
        """CPU: `rank`'s copy of heap tensor t as a tensor of this process (the worker copies through it)."""
        if self.cuda or rank == self.ctx.cur_rank:
            return t
        heap = self.ctx.heap
        offset = t.data_ptr() - heap.bases[self.ctx.cur_rank]
        return heap.views[rank][offset:offset + t.numel() * t.element_size()].view(t.dtype)

    def _check_copy(self, what, dst, src, rank, on_heap):
        ctx = self.ctx
        if not ctx.is_symmetric(on_heap):
            side = "src" if on_heap is src else "dst"
            raise ValueError(f"CopyEngine.{what}: {side} must live on the symmetric heap (peers' copies are reached "
                             f"through it)")
        if not (src.is_contiguous() and dst.is_contiguous()) or src.dtype != dst.dtype or src.numel() != dst.numel():
            raise ValueError(f"CopyEngine.{what}: src and dst must be contiguous with the same dtype and size, got "
                             f"{src.dtype} {tuple(src.shape)} and {dst.dtype} {tuple(dst.shape)}")
        self._check_rank(what, rank)

    def _check_flag(self, what, flag, rank):
        if flag.dtype != torch.int32 or flag.numel() != 1 or not self.ctx.is_symmetric(flag):
            raise ValueError(f"CopyEngine.{what}: a flag must be a one-element int32 tensor on the symmetric heap, got "
                             f"{flag.dtype} {tuple(flag.shape)}")
        self._check_rank(what, rank)

    def _check_rank(self, what, rank):
        if not 0 <= rank < self.ctx.num_ranks:
            raise ValueError(f"CopyEngine.{what}: rank {rank} is not a rank of this world of {self.ctx.num_ranks}")
