"""Host API: `iris.iris(heap_size, group=None)` returns an `Iris` context, a torch-like allocator over the symmetric
heap plus rank queries and barriers. Names and argument order follow the reference (Iris).

A context spans one torch.distributed process group (`ctx.group`; default the world) on one host: ranks are group
ranks (`ctx.global_ranks[r]` is group rank r's global rank), every host exchange runs over the group, and several
contexts may live in one process (a TP context and an EP one, say), each with its own heap, workspaces, replay cache
and prepared calls. Heaps never collide: each context allocates its own block (CUDA) or shared-memory segments named
by its group rank 0 (CPU), whatever groups overlap."""

import atexit
import contextlib
import functools
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


class DeviceMismatchError(RuntimeError, ValueError):
    """An allocation asked for a device other than the heap's (RuntimeError as in the reference)."""


def _size_of(size):
    while len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):  # (2, 3), ((2, 3),), [[2, 3]]
        size = tuple(size[0])
    if not all(isinstance(s, int) and s >= 0 for s in size):
        raise ValueError(f"size must be non-negative integers, got {size!r}")
    return tuple(size)


class Iris:
    """One rank's view of the symmetric heap of its group. Create it on every rank of the group with the same
    heap_size, and allocate the same sequence of tensors on every rank: that is what makes offsets agree."""

    _broken = None  # (cause, op) once a fault left the ranks out of step: every later call raises (iris/health.py)
    _host_abandoned = False  # a host exchange was given up: resync() cannot repair the process group

    def resync(self):
        """Collective: repair this context in place after a one-sided device fault (a wait that timed out because a
        rank raised, skipped or repeated a call); see iris/health.py for what it clears and when it refuses."""
        return health.resync(self)

    def __init__(self, heap_size=1 << 30, backend=None, group=None):
        backend = (backend or _backend.BACKEND).lower()
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend={backend!r}: expected 'cpu' or 'cuda'")
        if backend != _backend.BACKEND:
            raise RuntimeError(
                f"backend={backend!r} but iris was imported with the {_backend.BACKEND!r} backend; Triton picks "
                f"interpreter or compiler when a kernel is defined, so set IRIS_BACKEND={backend} before importing")
        self.backend = backend
        use_cuda = backend == "cuda"
        self.global_rank, world, local_rank = distributed.init(use_cuda)
        self.group = distributed.resolve_group(group)
        self.global_ranks = dist.get_process_group_ranks(self.group)  # group rank -> global rank
        self.cur_rank, self.num_ranks = self.global_ranks.index(self.global_rank), len(self.global_ranks)
        if self.num_ranks == world:
            set_rank(self.cur_rank, self.num_ranks)
        consistency.check_heap_size(heap_size, self.cur_rank, 1)  # its type; agreement: _check_agreement
        if use_cuda:
            self.device = torch.device("cuda", torch.cuda.current_device())
            if "LOCAL_RANK" in os.environ or not torch.cuda.current_device():
                self.device = torch.device("cuda", distributed.device_index(local_rank))
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        # One exchange over the group (collective over it only) settles everything the ranks must agree on.
        self.peers = distributed.all_gather_object(self._describe(heap_size, use_cuda), self.group)
        self.hosts = [p["host"] for p in self.peers]
        self._check_agreement(heap_size)
        if use_cuda:
            exchange = functools.partial(distributed.all_gather_object, group=self.group)
            self.heap = CudaHeap(heap_size, self.cur_rank, self.num_ranks, self.device, exchange)
        else:
            # Segment names are picked on group rank 0 (unique per context) and travelled with the exchange above.
            self.heap = ShmHeap(heap_size, self.cur_rank, self.num_ranks, self.peers[0]["prefix"],
                                lambda: dist.barrier(group=self.group))
        # Ranks sharing one GPU must split its SMs between persistent grids: this group's ranks on my GPU, or all of
        # the host's ranks (LOCAL_WORLD_SIZE) over its GPUs where more (other groups' ranks run on it at the same time).
        mine = (self.hosts[self.cur_rank], self.peers[self.cur_rank]["device"])
        self.ranks_per_device = 1
        if use_cuda:
            local = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
            self.ranks_per_device = max(sum((p["host"], p["device"]) == mine for p in self.peers),
                                        -(-local // torch.cuda.device_count()))
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
        logger.info(f"{backend} heap of {heap_size} bytes mapped from {self.num_ranks} ranks "
                    f"(global ranks {self.global_ranks})")

    def _describe(self, heap_size, use_cuda):
        """What this rank tells the group at creation: host identity, heap size, device and its peer access, and (on
        group rank 0) the name prefix of the CPU backend's shared-memory segments."""
        info = {"host": distributed.hostname(), "heap_size": heap_size, "global_rank": self.global_rank,
                "device": self.device.index if use_cuda else None, "prefix": None}
        if use_cuda:
            count = torch.cuda.device_count()
            info["access"] = [j == self.device.index or torch.cuda.can_device_access_peer(self.device.index, j)
                              for j in range(count)]
        if self.cur_rank == 0 and not use_cuda:
            session = os.environ.get("IRIS_SESSION") or uuid.uuid4().hex[:12]
            info["prefix"] = f"iris-{session}-{uuid.uuid4().hex[:8]}"
        return info

    def _check_agreement(self, heap_size):
        """Raise the same error on every rank of the group (all hold the same exchange) when the heap cannot be built:
        different heap sizes, ranks on several hosts, GPUs without peer access."""
        def who(ranks):
            return ", ".join(f"group rank {r} (global {self.global_ranks[r]})" for r in ranks)

        sizes = [p["heap_size"] for p in self.peers]
        if len(set(sizes)) > 1:
            detail = ", ".join(f"rank {r}: {size}" for r, size in enumerate(sizes))
            raise consistency.ConsistencyError(
                f"rank {self.cur_rank}: heap_size differs across ranks ({detail}; group ranks); every rank must create "
                f"its context with the same heap_size")
        hosts = {}
        for r, h in enumerate(self.hosts):
            hosts.setdefault(h, []).append(r)
        if len(hosts) > 1:
            detail = "; ".join(f"host {h!r}: {who(rs)}" for h, rs in hosts.items())
            raise RuntimeError(
                f"iris.iris: the group spans {len(hosts)} hosts ({detail}). A symmetric heap is mapped with CUDA IPC, "
                f"which works only within one host. Build the context over a node-local group (local, cross = "
                f"iris.node_groups(); ctx = iris.iris(heap_size, group=local)) and communicate across nodes through "
                f"torch.distributed on the cross-node group, or use iris.multi_node(heap_size, group) for collectives "
                f"over the whole group (hierarchical: heap inside each node, NCCL/gloo across)")
        if self.backend == "cuda":
            bad = [(r, q) for r, p in enumerate(self.peers) for q, o in enumerate(self.peers)
                   if r != q and not p["access"][o["device"]]]
            if bad:
                r, q = bad[0]
                raise RuntimeError(
                    f"iris.iris: GPU {self.peers[r]['device']} of {who([r])} cannot access GPU "
                    f"{self.peers[q]['device']} of {who([q])} (torch.cuda.can_device_access_peer is False; "
                    f"{len(bad)} pair(s) in all): the heap needs peer access between every pair of the group's GPUs; "
                    f"build the context over GPUs that share an NVLink/PCIe peer domain")

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
    # Signatures follow torch's factories and the reference's (out=, layout=, memory_format=, pin_memory=). Local,
    # not collective, but every rank must make the same sequence of allocations (that is what makes offsets agree).
    def _check_device(self, device):
        if device is None:
            return
        kind = torch.device(device).type
        # "cuda" is accepted on the CPU backend so that GPU scripts run unchanged on the simulator.
        if kind != self.device.type and not (self.backend == "cpu" and kind == "cuda"):
            raise DeviceMismatchError(f"device={device!r}: the symmetric heap lives on {self.device}")
        if kind == "cuda" and self.backend == "cuda" and torch.device(device).index not in (None, self.device.index):
            raise DeviceMismatchError(f"device={device!r}: the symmetric heap lives on {self.device}")

    @staticmethod
    def _check_options(layout=torch.strided, memory_format=torch.contiguous_format, pin_memory=False):
        if layout not in (None, torch.strided):
            raise ValueError(f"layout={layout}: the symmetric heap holds dense tensors only (torch.strided)")
        if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
            raise ValueError(f"memory_format={memory_format}: heap tensors are contiguous (torch.contiguous_format)")
        if pin_memory:
            raise ValueError("pin_memory=True: the symmetric heap is device memory, it cannot be pinned host memory")

    def _check_out(self, out, size, dtype):
        """The reference's checks and messages for out=; returns out viewed as `size`."""
        numel = 1
        for s in size:
            numel *= s
        if not self.is_symmetric(out):
            raise RuntimeError("The output tensor is not on the symmetric heap")
        if out.numel() != numel:
            raise RuntimeError(f"The output tensor has {out.numel()} elements, but {numel} are required")
        if out.dtype != dtype:
            raise RuntimeError(f"The output tensor has dtype {out.dtype}, but {dtype} is required")
        return out if tuple(out.shape) == tuple(size) else out.view(size)

    def _allocate(self, size, dtype, device=None, requires_grad=False, out=None, layout=torch.strided,
                  memory_format=torch.contiguous_format, pin_memory=False):
        self._check_open("allocation")
        self._check_device(device)
        self._check_options(layout, memory_format, pin_memory)
        dtype = dtype or torch.get_default_dtype()
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
        size = _size_of(size)
        if out is not None:
            return self._check_out(out, size, dtype), requires_grad
        numel = 1
        for s in size:
            numel *= s
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        offset = self.heap.allocate(nbytes)
        tensor = self.heap.buffer[offset:offset + nbytes].view(dtype).view(size)
        return tensor, requires_grad

    def allocate(self, num_elements, dtype):
        """A flat uninitialized heap tensor of `num_elements` elements (the reference's low-level allocator)."""
        return self._allocate((num_elements,), dtype)[0]

    @staticmethod
    def _finish(tensor, requires_grad):
        return tensor.requires_grad_(True) if requires_grad else tensor

    def empty(self, *size, out=None, dtype=None, layout=torch.strided, device=None, requires_grad=False,
              pin_memory=False, memory_format=torch.contiguous_format):
        return self._finish(*self._allocate(size, dtype, device, requires_grad, out, layout, memory_format,
                                            pin_memory))

    def zeros(self, *size, out=None, dtype=None, layout=torch.strided, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad, out, layout)
        return self._finish(t.zero_(), rg)

    def ones(self, *size, out=None, dtype=None, layout=torch.strided, device=None, requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad, out, layout)
        return self._finish(t.fill_(1), rg)

    def full(self, size, fill_value, *, out=None, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
        if dtype is None:
            dtype = torch.full((), fill_value).dtype  # bool, int64, default float or complex, as torch infers
        t, rg = self._allocate(size, dtype, device, requires_grad, out, layout)
        return self._finish(t.fill_(fill_value), rg)

    def zeros_like(self, input, *, dtype=None, layout=None, device=None, requires_grad=False,
                   memory_format=torch.preserve_format):
        return self.zeros(input.shape, dtype=dtype or input.dtype, layout=layout or input.layout,
                          device=device, requires_grad=requires_grad)

    def _from_values(self, values, requires_grad, out=None):
        t, _ = self._allocate(values.shape, values.dtype, out=out)
        t.copy_(values)
        return self._finish(t, requires_grad)

    def arange(self, start=0, end=None, step=1, *, out=None, dtype=None, layout=torch.strided, device=None,
               requires_grad=False):
        self._check_device(device)
        self._check_options(layout)
        if end is None:
            start, end = 0, start
        return self._from_values(torch.arange(start, end, step, dtype=dtype, device=self.device), requires_grad,
                                 out)

    def linspace(self, start, end, steps, *, out=None, dtype=None, layout=torch.strided, device=None,
                 requires_grad=False):
        """`steps` is a count; a one-element sequence such as (5,), [5] or ((5,),) is read as that count, as the
        reference does."""
        self._check_device(device)
        self._check_options(layout)
        while isinstance(steps, (tuple, list, torch.Size)) and len(steps) == 1:
            steps = steps[0]
        if not isinstance(steps, int) or steps < 0:
            raise ValueError(f"linspace: steps must be a non-negative integer (or a one-element sequence of one), "
                             f"got {steps!r}")
        start, end = (v.item() if isinstance(v, torch.Tensor) else v for v in (start, end))
        if dtype is None and any(isinstance(v, complex) for v in (start, end)):
            dtype = torch.complex64 if torch.get_default_dtype() != torch.float64 else torch.complex128
        return self._from_values(torch.linspace(start, end, steps, dtype=dtype, device=self.device), requires_grad,
                                 out)

    def rand(self, *size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad, out, layout)
        return self._finish(t.uniform_(0, 1, generator=generator), rg)

    def randn(self, *size, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
              requires_grad=False):
        t, rg = self._allocate(size, dtype, device, requires_grad, out, layout)
        return self._finish(t.normal_(generator=generator), rg)

    def uniform(self, size, low=0.0, high=1.0, dtype=None, device=None, requires_grad=False):
        t, rg = self._allocate(size if isinstance(size, (tuple, list)) else (size,), dtype, device, requires_grad)
        return self._finish(t.uniform_(low, high), rg)

    def randint(self, *args, generator=None, out=None, dtype=None, layout=torch.strided, device=None,
                requires_grad=False):
        """randint(high, size) or randint(low, high, size), as torch.randint."""
        if len(args) == 2:
            (high, size), low = args, 0
        elif len(args) == 3:
            low, high, size = args
        else:
            raise TypeError(f"randint expects (high, size) or (low, high, size), got {len(args)} arguments")
        if high <= low:
            raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
        t, rg = self._allocate(size, dtype or torch.int64, device, requires_grad, out, layout)
        return self._finish(t.random_(low, high, generator=generator), rg)

    def as_symmetric(self, tensor):
        """A heap copy of `tensor` (from any device), same shape and dtype."""
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"as_symmetric expects a torch.Tensor, got {type(tensor).__name__}")
        t, _ = self._allocate(tensor.shape, tensor.dtype)
        return t.copy_(tensor)

    def is_symmetric(self, tensor):
        """Whether `tensor` lies in this context's heap (a 0-element view of the heap counts: it has no data
        pointer of its own, so its storage decides)."""
        if not isinstance(tensor, torch.Tensor):
            return False
        if tensor.numel() == 0:
            return (tensor.device == self.heap.buffer.device and
                    tensor.untyped_storage().data_ptr() == self.heap.buffer.untyped_storage().data_ptr())
        return self.heap.owns(tensor)

    __on_symmetric_heap = is_symmetric  # the reference's private name, which its tests call

    def get_device_context(self, workspace=None, *, tiles=None, block=None, dtype=torch.float32):
        """The device context (iris/device_context.py): one int64 tensor [rank, world, heap bases..., workspace] to
        pass to a kernel as one argument, read there by `iris.DeviceContext.initialize`. A tile workspace (an
        iris.tile.Workspace, or tiles=/block=/dtype= to create one: collective, once) adds the tile collectives.
        Otherwise local and cheap (cached)."""
        from .device_context import context_tensor
        return context_tensor(self, workspace, tiles=tiles, block=block, dtype=dtype)

    device_context = get_device_context

    def require_symmetric(self, tensor, what, hint=" (allocate it with ctx.zeros/empty)"):
        """Raise ValueError unless `tensor` lies on this context's heap; the message tells a tensor from another
        context's heap (a TP context's buffer passed to an EP context's op, say) from an ordinary tensor."""
        if self.is_symmetric(tensor):
            return
        other = next((c for c in list(_live) if c is not self and not c._closed and c.is_symmetric(tensor)), None)
        if other is not None:
            raise ValueError(f"{what} is from another context's heap (the context over global ranks "
                             f"{other.global_ranks}; this op's context spans global ranks {self.global_ranks}): "
                             f"allocate it from this context (ctx.zeros/empty) or copy it over (ctx.as_symmetric)")
        raise ValueError(f"{what} must live on the symmetric heap{hint}")

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
            health.host_barrier(self.group)  # dist.barrier, abortable by iris.RankPool
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

    def broadcast(self, value, source_rank=0, *, src=None):
        """`value` as held by `source_rank` (or `src`, torch.distributed's name), on every rank: tensors keep dtype
        and device, anything else is pickled (receivers may pass None). Collective; the first call from each
        source rank is compared across ranks (iris/consistency.py): ranks naming different sources would wait on
        each other until NCCL's watchdog ends the job."""
        source = source_rank if src is None else src
        self._check_open("broadcast")
        if isinstance(source, bool) or not isinstance(source, int) or not 0 <= source < self.num_ranks:
            raise ValueError(f"rank {self.cur_rank}: broadcast from source rank {source!r}; expected a group rank in "
                             f"0..{self.num_ranks - 1}")
        if self.num_ranks > 1:
            consistency.first_call(self, ("ctx.broadcast", source))
        return distributed.broadcast_value(value, source, self.group)

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
        dist.barrier(group=self.group)
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


ALLOCATOR_TYPES = ("torch", "vmem")


def iris(heap_size=1 << 30, backend=None, group=None, allocator_type="torch"):
    """Create the symmetric-heap context on this rank. Collective over `group` only: each of its ranks calls it with
    the same heap_size (other ranks need not). `group`: None (the whole torch.distributed world), a ProcessGroup, a
    1-D DeviceMesh, (mesh, dim name), or a list of global ranks. Ranks, barriers, broadcasts, collectives and every
    op of the context are in group coordinates (ctx.global_ranks maps them back). All ranks must be on one host.
    `allocator_type` is the reference's: "torch" and "vmem" are both served by one heap mapped at creation (no
    growth, as_symmetric copies); anything else is refused."""
    if allocator_type not in ALLOCATOR_TYPES:
        raise ValueError(f"allocator_type={allocator_type!r}: expected one of {ALLOCATOR_TYPES} (both give the "
                         f"fixed-size symmetric heap of heap_size bytes)")
    return Iris(heap_size, backend, group)
