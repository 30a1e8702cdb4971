"""Symmetric heaps: one allocation per rank, mapped into every peer, handed out by an aligned bump allocator.

Because every rank allocates the same sequence of sizes, a tensor lives at the same heap offset on every rank; a
kernel reaches a peer's copy by adding (base[peer] - base[me]) to its pointer.

- `CudaHeap`: its own cudaMalloc block (offset 0 of the block, so the caching allocator's sub-allocation offset never
  enters IPC handles), handles exchanged, peers opened with cudaIpcOpenMemHandle.
- `ShmHeap`: a POSIX shared-memory file per rank in /dev/shm, mmapped by every rank. The owner unlinks its file as
  soon as every peer has mapped it, so no segment outlives the processes, however they exit.
"""

import mmap
import os

import torch

from .logging import logger

ALIGNMENT = 256


class HeapExhausted(MemoryError):
    pass


class _SymmetricHeap:
    """Bump allocation over `self.buffer` (a uint8 tensor) plus the per-rank base table."""

    def __init__(self, size):
        if not isinstance(size, int) or size <= 0:
            raise ValueError(f"heap_size must be a positive number of bytes, got {size!r}")
        self.size = size
        self.offset = 0

    @property
    def available(self):
        """Bytes that an allocation can still take (the same on every rank: allocations are symmetric)."""
        return max(self.size - -(-self.offset // ALIGNMENT) * ALIGNMENT, 0)

    def allocate(self, nbytes):
        start = -(-self.offset // ALIGNMENT) * ALIGNMENT
        if start + nbytes > self.size:
            raise HeapExhausted(
                f"symmetric heap exhausted: requested {nbytes} bytes, {self.available} bytes free of {self.size} "
                f"(pass a larger heap_size to iris.iris())")
        self.offset = start + nbytes
        return start

    def owns(self, tensor):
        ptr, base = tensor.data_ptr(), self.buffer.data_ptr()
        end = ptr + tensor.untyped_storage().nbytes() - tensor.storage_offset() * tensor.element_size()
        return tensor.device == self.buffer.device and base <= ptr and end <= base + self.size

    def check_alignment(self):
        bad = [hex(b) for b in self.bases if b % ALIGNMENT]
        if bad:
            raise RuntimeError(f"heap bases {bad} are not {ALIGNMENT}-byte aligned")


class _DevicePointer:
    """Exposes a raw CUDA pointer to torch.as_tensor without copying; keeps the heap owner alive."""

    def __init__(self, ptr, nbytes, owner):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


class CudaHeap(_SymmetricHeap):
    def __init__(self, size, rank, world, device, exchange):
        super().__init__(size)
        from ._cudart import CudaRuntime

        self.rt = CudaRuntime()
        self.rank, self.device = rank, device
        self.ptr = self.rt.malloc(size)
        self.rt.memset(self.ptr, 0, size)
        torch.cuda.synchronize(device)
        self.buffer = torch.as_tensor(_DevicePointer(self.ptr, size, self), device=device)
        handles = exchange(self.rt.ipc_handle(self.ptr))
        self.peer_ptrs = {}
        try:
            for peer, handle in enumerate(handles):
                if peer != rank:
                    self.peer_ptrs[peer] = self.rt.ipc_open(handle)
        except Exception:
            self.close_peers()
            raise
        self.bases = [self.ptr if p == rank else self.peer_ptrs[p] for p in range(world)]
        self.check_alignment()

    def close_peers(self):
        for ptr in self.peer_ptrs.values():
            try:
                self.rt.ipc_close(ptr)
            except RuntimeError as err:  # the process may be exiting with the driver half torn down
                logger.warning(str(err))
        self.peer_ptrs = {}

    def free(self):
        """Call only once every peer has closed its mapping (Iris.close() barriers around it)."""
        self.close_peers()
        if self.ptr:
            self.rt.free(self.ptr)
            self.ptr = 0


class ShmHeap(_SymmetricHeap):
    def __init__(self, size, rank, world, name_prefix, barrier):
        super().__init__(size)
        self.rank = rank
        own = f"/dev/shm/{name_prefix}-r{rank}"
        fd = os.open(own, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self.maps = {}
        try:
            try:
                os.ftruncate(fd, size)
                self.maps[rank] = mmap.mmap(fd, size)
            finally:
                os.close(fd)
            barrier()  # every file exists
            for peer in range(world):
                if peer != rank:
                    pfd = os.open(f"/dev/shm/{name_prefix}-r{peer}", os.O_RDWR)
                    try:
                        self.maps[peer] = mmap.mmap(pfd, size)
                    finally:
                        os.close(pfd)
            barrier()  # every rank holds every mapping: the names are no longer needed
        finally:
            os.unlink(own)
        self.views = {p: torch.frombuffer(m, dtype=torch.uint8) for p, m in self.maps.items()}
        self.buffer = self.views[rank]
        self.bases = [self.views[p].data_ptr() for p in range(world)]
        self.check_alignment()

    def close_peers(self):
        pass  # the mappings go with the process; torch views may still reference them

    def free(self):
        pass
