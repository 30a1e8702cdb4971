"""Host API: `iris.iris(heap_size)` returns an `Iris` context, a torch-like allocator over the symmetric heap plus
rank queries and barriers. Names and argument order follow the reference (Iris)."""

import atexit
import contextlib
import itertools
import os
import uuid
import weakref

import torch
import torch.distributed as dist
import triton
import triton.language as tl

from . import _backend, consistency, device as _dev, distributed, health, replay as _replay
from .copy_engine import CopyEngine
from .heap import CudaHeap, ShmHeap
from .logging import logger, set_rank

CPU_CU_COUNT = int(os.environ.get("IRIS_CPU_CU_COUNT", "4"))
_instances = itertools.count()
_live = weakref.WeakSet()
_by_handle = weakref.WeakValueDictionary()  # small ints stand for contexts where only plain values fit (torch ops)
_handles = itertools.count(1)


@triton.jit
def _device_barrier_kernel(flags, epoch_ptr, cur_rank, world_size, heap_bases, PDL: tl.constexpr = tl.constexpr(False)):
    """flags[p] on rank r counts the barriers rank p has entered; the epoch lives on the device, so the kernel can
    be captured in a CUDA graph and replayed any number of times."""
    _dev.launched_early(PDL)
    epoch = tl.load(epoch_ptr) + 1
    tl.store(epoch_ptr, epoch)
    for peer in range(world_size):
        _dev.signal(flags + cur_rank, 1, cur_rank, peer, heap_bases, op="add")
    for peer in range(world_size):
        _dev.wait(flags + peer, epoch, cur_rank, heap_bases, cmp="ge")


def _size_of(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    if not all(isinstance(s, int) and s >= 0 for s in size):
        raise ValueError(f"size must be non-negative integers, got {size!r}")
    return tuple(size)


class Iris:
    """One rank's view of the symmetric heap. Create it on every rank with the same heap_size, and allocate the same
    sequence of tensors on every rank: that is what makes offsets agree."""

    _broken = None  # (cause, op) once a fault left the ranks out of step: every later call raises (iris/health.py)
    _host_abandoned = False  # a host exchange was given up: resync() cannot repair the process group

    def resync(self):
        """Collective: repair this context in place after a one-sided device fault (a wait that timed out because a
        rank raised, skipped or repeated a call); see iris/health.py for what it clears and when it refuses."""
        return health.resync(self)

    def __init__(self, heap_size=1 << 30, backend=None):
        backend = (backend or _backend.BACKEND).lower()
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend={backend!r}: expected 'cpu' or 'cuda'")
        if backend != _backend.BACKEND:
            raise RuntimeError(
                f"backend={backend!r} but iris was imported with the {_backend.BACKEND!r} backend; Triton picks "
                f"interpreter or compiler when a kernel is defined, so set IRIS_BACKEND={backend} before importing")
        self.backend = backend
        use_cuda = backend == "cuda"
        self.cur_rank, self.num_ranks, local_rank = distributed.init(use_cuda)
        set_rank(self.cur_rank, self.num_ranks)
        consistency.check_heap_size(heap_size, self.cur_rank, self.num_ranks, getattr(self, "group", None))
        if use_cuda:
            self.device = torch.device("cuda", torch.cuda.current_device())
            if "LOCAL_RANK" in os.environ or not torch.cuda.current_device():
                self.device = torch.device("cuda", local_rank % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
            self.heap = CudaHeap(heap_size, self.cur_rank, self.num_ranks, self.device, distributed.all_gather_object)
        else:
            self.device = torch.device("cpu")
            session = os.environ.get("IRIS_SESSION")
            if self.cur_rank == 0 and not session:
                session = uuid.uuid4().hex[:12]
            session = distributed.all_gather_object(session)[0]
            prefix = f"iris-{session}-{next(_instances)}"
            self.heap = ShmHeap(heap_size, self.cur_rank, self.num_ranks, prefix, dist.barrier)
        # Ranks sharing one GPU (more local ranks than devices) must split its SMs between persistent grids.
        local = int(os.environ.get("LOCAL_WORLD_SIZE", self.num_ranks))
        self.ranks_per_device = -(-local // torch.cuda.device_count()) if use_cuda else 1
        self.heap_bases = torch.tensor(self.heap.bases, dtype=torch.int64, device=self.device)
        self._errors = self.zeros(_dev.ERR_WORDS, dtype=torch.int64)  # heap offset 0: device.wait relies on it
        assert self._errors.data_ptr() == self.heap.bases[self.cur_rank]
        self._barrier_flags = self.zeros(self.num_ranks, dtype=torch.int32)
        self._barrier_epoch = self.zeros(1, dtype=torch.int32)
        self._closed = False
        self._workspaces = {}
        self.tracer = None  # an active iris.Tracer: catalog kernels record events into it
        self.replay = _replay.ReplayCache(_replay.ENABLED and use_cuda)  # eager calls replay captured launches
        _live.add(self)
        self.handle = next(_handles)
        _by_handle[self.handle] = self
        self.barrier()
        logger.info(f"{backend} heap of {heap_size} bytes mapped from {self.num_ranks} ranks")

    # ------------------------------------------------------------------------------------------------ queries
    def get_rank(self):
        return self.cur_rank

    def get_num_ranks(self):
        return self.num_ranks

    def get_heap_bases(self):
        """int64 tensor (on the heap's device) of every rank's heap base as mapped in this process."""
        return self.heap_bases

    def get_device(self):
        return self.device

    def get_cu_count(self):
        """SMs of this rank's GPU; on the CPU backend a fixed IRIS_CPU_CU_COUNT (default 4) for persistent grids."""
        if self.backend == "cuda":
            return torch.cuda.get_device_properties(self.device).multi_processor_count
        return CPU_CU_COUNT

    def info(self, msg):
        logger.info(msg)

    def debug(self, msg):
        logger.debug(msg)

    def warning(self, msg):
        logger.warning(msg)

    def error(self, msg):
        logger.error(msg)

    # ------------------------------------------------------------------------------------------------ allocation
    def _check_device(self, device):
        if device is None:
            return
        kind = torch.device(device).type
        # "cuda" is accepted on the CPU backend so that GPU scripts run unchanged on the simulator.
        if kind != self.device.type and not (self.backend == "cpu" and kind == "cuda"):
            raise ValueError(f"device={device!r}: the symmetric heap lives on {self.device}")

    def _allocate(self, size, dtype, device=None, requires_grad=False):
        self._check_open("allocation")
        self._check_device(device)
        dtype = dtype or torch.get_default_dtype()
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
        size = _size_of(size)
        numel = 1
        for s in size:
            numel *= s
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        offset = self.heap.allocate(nbytes)
        tensor = self.heap.buffer[offset:offset + nbytes].view(dtype).view(size)
        return tensor, requires_grad

    @staticmethod
    def _finish(tensor, requires_grad):
        return tensor.requires_grad_(True) if requires_grad else tensor

    def empty(self, *size, dtype=None, device=None, requires_grad=False):
        return self._finish(*self._allocate(size, dtype, device, requires_grad))

    def zeros(self, *size, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad)
        return self._finish(t.zero_(), rg)

    def ones(self, *size, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad)
        return self._finish(t.fill_(1), rg)

    def full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        if dtype is None and isinstance(fill_value, bool):
            dtype = torch.bool
        elif dtype is None and isinstance(fill_value, int):
            dtype = torch.int64
        t, rg = self._allocate(size, dtype, device, requires_grad)
        return self._finish(t.fill_(fill_value), rg)

    def zeros_like(self, input, dtype=None, device=None, requires_grad=False):
        return self.zeros(input.shape, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad)

    def _from_values(self, values, requires_grad):
        t, rg = self._allocate(values.shape, values.dtype)
        t.copy_(values)
        return self._finish(t, requires_grad)

    def arange(self, start=0, end=None, step=1, dtype=None, device=None, requires_grad=False):
        self._check_device(device)
        if end is None:
            start, end = 0, start
        return self._from_values(torch.arange(start, end, step, dtype=dtype, device=self.device), requires_grad)

    def linspace(self, start, end, steps, dtype=None, device=None, requires_grad=False):
        self._check_device(device)
        return self._from_values(torch.linspace(start, end, steps, dtype=dtype, device=self.device), requires_grad)

    def rand(self, *size, generator=None, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad)
        return self._finish(t.uniform_(0, 1, generator=generator), rg)

    def randn(self, *size, generator=None, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad)
        return self._finish(t.normal_(generator=generator), rg)

    def uniform(self, size, low=0.0, high=1.0, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size if isinstance(size, (tuple, list)) else (size,), dtype, device, requires_grad)
        return self._finish(t.uniform_(low, high), rg)

    def randint(self, *args, generator=None, dtype=None, device=None, requires_grad=False):
        """randint(high, size) or randint(low, high, size), as torch.randint."""
        if len(args) == 2:
            (high, size), low = args, 0
        elif len(args) == 3:
            low, high, size = args
        else:
            raise TypeError(f"randint expects (high, size) or (low, high, size), got {len(args)} arguments")
        if high <= low:
            raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
        t, rg = self._allocate(size, dtype or torch.int64, device, requires_grad)
        return self._finish(t.random_(low, high, generator=generator), rg)

    def as_symmetric(self, tensor):
        """A heap copy of `tensor` (from any device), same shape and dtype."""
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"as_symmetric expects a torch.Tensor, got {type(tensor).__name__}")
        t, _ = self._allocate(tensor.shape, tensor.dtype)
        return t.copy_(tensor)

    def is_symmetric(self, tensor):
        return isinstance(tensor, torch.Tensor) and self.heap.owns(tensor)

    @contextlib.contextmanager
    def scratch(self):
        """Collective: heap allocations made inside are released on a normal exit (after a barrier), so loops,
        tests and benchmarks can allocate freely. Nothing allocated inside may be used afterwards."""
        mark = self.heap.offset
        try:
            yield self
        except BaseException:
            # No barrier here: a peer may not reach one (it may have failed, or be waiting on this rank in a kernel).
            # Released on this rank only; if a peer still uses the memory, the ranks are out of step and the fault
            # that caused it breaks the context (iris/health.py).
            self.replay.clear()
            self.heap.offset = mark
            self._workspaces = {k: v for k, v in self._workspaces.items() if v[0] < mark}
            raise
        self.barrier()
        self.replay.clear()  # captured launches may point into what is released here
        self.heap.offset = mark
        self._workspaces = {k: v for k, v in self._workspaces.items() if v[0] < mark}

    def workspace(self, key, factory):
        """Collective: `factory(ctx)` (heap allocations: flags, partial buffers) run once per key and cached. The
        barrier after creation keeps a fast rank from signalling into a peer's flags before the peer zeroed them."""
        entry = self._workspaces.get(key)
        if entry is None:
            if self.backend == "cuda" and torch.cuda.is_current_stream_capturing():
                raise RuntimeError(f"rank {self.cur_rank}: workspace {key!r} does not exist yet, and creating it needs "
                                   f"a host barrier, which CUDA graph capture forbids; call the op once with the same "
                                   f"shapes before capturing it")
            entry = self._workspaces[key] = (self.heap.offset, factory(self))
            self.barrier()
        return entry[1]

    # ------------------------------------------------------------------------------------------------ sync
    def barrier(self):
        """Wait for this rank's device work, then for every rank; raise any device-side wait timeout."""
        self._check_open("barrier")
        if self.backend == "cuda":
            torch.cuda.synchronize(self.device)
        try:
            health.host_barrier(getattr(self, "group", None))  # dist.barrier, abortable by iris.RankPool
            self.check_device_errors()
        except (_dev.DeviceWaitTimeout, _dev.PeerFailed) as e:
            self._host_abandoned = self._host_abandoned or isinstance(e, _dev.PeerFailed)
            health.mark_broken(self, e, "barrier")
            raise

    def device_barrier(self):
        """All ranks' preceding work on the current stream, on the device; no host sync, CUDA-graph capturable."""
        if self._broken is not None:
            health.raise_broken(self, "device_barrier")
        try:
            _device_barrier_kernel[(1,)](self._barrier_flags, self._barrier_epoch, self.cur_rank, self.num_ranks,
                                         self.heap_bases, num_warps=1, **_dev.pdl_launch())
        except BaseException as e:
            health.on_error(self, "device_barrier", e)
            raise

    def copy_engine(self):
        """Copies to and from peers' heaps on the copy engines, on a side stream forked off the current one, ordered
        with running kernels by flags that the stream raises and awaits: no SM needed (iris/copy_engine.py)."""
        self._check_open()
        return CopyEngine(self)

    def check_device_errors(self):
        """Raise DeviceWaitTimeout if a kernel of this rank gave up waiting on a flag (and clear the record)."""
        _dev.raise_recorded_timeout(self._errors)

    def broadcast(self, value, source_rank=0):
        """`value` as held by `source_rank`, on every rank: tensors keep dtype and device, anything else is pickled."""
        if isinstance(value, torch.Tensor):  # through the host: works for any backend and GPU sharing
            box = [value.detach().cpu() if self.cur_rank == source_rank else None]
            dist.broadcast_object_list(box, source_rank)
            return box[0].to(value.device)
        box = [value]
        dist.broadcast_object_list(box, source_rank)
        return box[0]

    # ------------------------------------------------------------------------------------------------ teardown
    def _check_open(self, op="this call"):
        if getattr(self, "_closed", False):
            raise RuntimeError("this Iris context is closed")
        if self._broken is not None:
            health.raise_broken(self, op)

    def close(self):
        """Collective: unmap every peer and free the heap. Heap tensors are invalid afterwards."""
        if self._closed:
            return
        if self._broken is not None:  # peers may be gone or out of step: no collective teardown
            self.replay.clear()
            self.heap.close_peers()
            self._closed = True
            return
        self.barrier()
        self.replay.clear()
        self.heap.close_peers()
        dist.barrier()
        self.heap.free()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self.heap.close_peers()
            self._closed = True


@atexit.register
def _unmap_at_exit():
    """Local, not collective: peers may already be gone. The process's own heap goes with the process."""
    for ctx in list(_live):
        if not ctx._closed:
            ctx.heap.close_peers()


def context(handle):
    """The open context whose `handle` this is (torch custom ops carry contexts as ints)."""
    ctx = _by_handle.get(handle)
    if ctx is None or ctx._closed:
        raise RuntimeError(f"no open Iris context has handle {handle}; pass ctx.handle of a live context")
    return ctx


def iris(heap_size=1 << 30, backend=None):
    """Create the symmetric-heap context on this rank (collective: every rank calls it with the same size)."""
    return Iris(heap_size, backend)
