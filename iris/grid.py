"""A device grid: several devices driven from one Python process, one kernel launched on all of them at once.

    group = iris.DeviceGroup()                         # every visible GPU (CPU backend: 2 simulated devices)
    x = group.partitioned((4096, 1024), dim=0)         # a shard on each device (iris.Partitioned)
    flags = group.zeros(group.num_devices, dtype=torch.int32)   # symmetric: same offset on every device

    @iris.jit
    def kernel(x, flags, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr): ...

    kernel[iris.Grid((programs,), devices=group)](x, flags, iris.DEVICE_ID, iris.NUM_DEVICES, iris.HEAP_BASES,
                                                  BLOCK=128)

Inside, the kernel is an ordinary iris kernel: `cur_rank` is its device's index in the group and the device API
(iris.load/store/put/get/atomics/signal/wait with cur_rank and heap_bases) is the multi-process one, so a kernel runs
unchanged under either launch. Per device, sharded arguments (iris.Partitioned, iris.Symmetric) become that device's
shard and the markers DEVICE_ID, NUM_DEVICES, HEAP_BASES become its values; everything else is passed as is.

On GPUs each device has its own heap block and peer access is enabled between all of them (one process: no IPC),
and the launches are asynchronous, so every device's programs run concurrently. On the CPU backend the devices are
simulated, each with its own heap in this process, and the interpreter runs the launches one device after the
other: a kernel may only wait on flags that lower-numbered devices set (the same rule that makes the catalog's
kernels interpreter-safe within one grid).
"""

import torch
import triton

from . import _backend
from . import device as _dev
from .heap import ALIGNMENT, _SymmetricHeap
from .partition import Partitioned, Symmetric


class _Marker:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"iris.{self.name}"


DEVICE_ID, NUM_DEVICES, HEAP_BASES = _Marker("DEVICE_ID"), _Marker("NUM_DEVICES"), _Marker("HEAP_BASES")
DEVICE_CONTEXT = _Marker("DEVICE_CONTEXT")  # each device's iris.DeviceContext tensor (RMA, atomics, flags)


class DeviceGroup:
    """Symmetric heaps on several devices of this process, allocated in lockstep (same offsets everywhere)."""

    def __init__(self, devices=None, heap_size=1 << 28, backend=None):
        self.backend = (backend or _backend.BACKEND).lower()
        if self.backend == "cuda":
            visible = torch.cuda.device_count()
            devices = list(range(visible)) if devices is None else list(devices)
            if not devices or any(not 0 <= d < visible for d in devices):
                raise ValueError(f"devices={devices}: expected indices of the {visible} visible GPUs")
            self.devices = [torch.device("cuda", d) for d in devices]
            self._enable_peer_access(devices)
        else:
            count = 2 if devices is None else (devices if isinstance(devices, int) else len(devices))
            if count < 1:
                raise ValueError(f"devices={devices}: expected at least one simulated device")
            self.devices = [torch.device("cpu")] * count
        self.num_devices = len(self.devices)
        self._bump = _SymmetricHeap(heap_size)  # one offset for all devices: the same bump allocation everywhere
        self.buffers = [self._aligned(heap_size, d) for d in self.devices]
        bases = [b.data_ptr() for b in self.buffers]
        self.heap_bases = [torch.tensor(bases, dtype=torch.int64, device=d) for d in self.devices]
        self._errors = self.zeros(_dev.ERR_WORDS, dtype=torch.int64)  # heap offset 0: device.wait relies on it

    @staticmethod
    def _aligned(size, device):
        raw = torch.zeros(size + ALIGNMENT, dtype=torch.uint8, device=device)
        skip = -raw.data_ptr() % ALIGNMENT
        return raw[skip:skip + size]

    @staticmethod
    def _enable_peer_access(devices):
        from ._cudart import CudaRuntime

        rt = CudaRuntime()
        for d in devices:
            for peer in devices:
                if d != peer:
                    if not torch.cuda.can_device_access_peer(d, peer):
                        raise RuntimeError(f"GPU {d} cannot access GPU {peer} directly (no P2P): a device grid "
                                           f"needs peer access between all its devices")
                    with torch.cuda.device(d):
                        rt.enable_peer_access(peer)

    # ------------------------------------------------------------------------------------------ allocation
    def _allocate(self, shape, dtype):
        dtype = dtype or torch.float32
        n = int(torch.Size(shape).numel())
        nbytes = max(1, n) * torch.empty((), dtype=dtype).element_size()
        start = self._bump.allocate(nbytes)
        return [b[start:start + nbytes].view(dtype)[:n].view(shape) for b in self.buffers]

    def zeros(self, *shape, dtype=None):
        """A Symmetric tensor: one zeroed copy per device at the same heap offset."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        shards = self._allocate(shape, dtype)
        for s in shards:
            s.zero_()
        return Symmetric(shards)

    def partitioned(self, global_shape, dim=0, dtype=None):
        """A tensor of `global_shape` split along `dim` across the devices (iris.Partitioned)."""
        return Partitioned.allocate(lambda shape: self._allocate(shape, dtype), global_shape, dim, self.num_devices,
                                    zero=True)

    # ------------------------------------------------------------------------------------------ launch
    def launch(self, kernel, grid, args, kwargs):
        """kernel[grid](...) on every device, arguments resolved per device (see the module docstring)."""
        for rank, dev in enumerate(self.devices):
            a = [self._resolve(v, rank) for v in args]
            kw = {k: self._resolve(v, rank) for k, v in kwargs.items()}
            if self.backend == "cuda":
                with torch.cuda.device(dev):
                    kernel[grid](*a, **kw)
            else:
                kernel[grid](*a, **kw)

    def _resolve(self, value, rank):
        if value is DEVICE_ID:
            return rank
        if value is NUM_DEVICES:
            return self.num_devices
        if value is HEAP_BASES:
            return self.heap_bases[rank]
        if value is DEVICE_CONTEXT:
            return self.get_device_context(rank)
        if isinstance(value, (Partitioned, Symmetric)):
            return value.shards[rank]
        return value

    def get_device_context(self, device_index):
        """The iris.DeviceContext tensor of one device of the group (no tile workspace: RMA, atomics, signal/wait).
        Kernels on an iris.Grid get it by passing iris.DEVICE_CONTEXT."""
        from .device_context import _layout
        cache = self.__dict__.setdefault("_contexts", {})
        if device_index not in cache:
            bases = self.heap_bases[device_index].tolist()
            cache[device_index] = torch.tensor(_layout(device_index, self.num_devices, bases, None), dtype=torch.int64,
                                               device=self.devices[device_index])
        return cache[device_index]

    def synchronize(self):
        """Wait for every device; raise DeviceWaitTimeout if a kernel gave up waiting on a flag."""
        if self.backend == "cuda":
            for d in self.devices:
                torch.cuda.synchronize(d)
        for err in self._errors.shards:  # the record's rank is the device's index (kernels get it as cur_rank)
            _dev.raise_recorded_timeout(err)


class Grid:
    """A launch grid over devices: `kernel[iris.Grid(grid, devices=group)](...)` for kernels made with iris.jit,
    or `iris.Grid(grid, devices=group).launch(kernel, ...)` for any triton.jit kernel."""

    def __init__(self, grid, devices):
        if not isinstance(devices, DeviceGroup):
            raise TypeError(f"devices must be an iris.DeviceGroup (it holds the devices' heaps), got "
                            f"{type(devices).__name__}")
        self.grid, self.group = grid, devices

    def launch(self, kernel, *args, **kwargs):
        self.group.launch(kernel, self.grid, args, kwargs)


class _Kernel:
    """A triton.jit kernel that can also be indexed by an iris.Grid. Device-side helpers keep using triton.jit:
    only launchable kernels need this."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        if isinstance(grid, Grid):
            return lambda *args, **kwargs: grid.launch(self.fn, *args, **kwargs)
        return self.fn[grid]

    def __getattr__(self, name):
        return getattr(self.fn, name)


def jit(fn=None, **kwargs):
    """triton.jit, plus launches over an iris.Grid of devices."""
    if fn is None:
        return lambda f: _Kernel(triton.jit(f, **kwargs))
    return _Kernel(triton.jit(fn, **kwargs))
