"""The few CUDA calls the heap and the copy engine need, through ctypes: the runtime that torch has already loaded,
and the driver for what the runtime lacks (stream memory writes and waits)."""

import ctypes
import glob
import os

IPC_HANDLE_BYTES = 64
_LAZY_ENABLE_PEER_ACCESS = 1
_PEER_ACCESS_ALREADY_ENABLED = 704
_MEMCPY_DEFAULT = 4  # cudaMemcpyDefault: the direction (and the peer) follows from the unified addresses


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_byte * IPC_HANDLE_BYTES)]


def _find_cudart():
    import torch

    torch.cuda.init()
    with open("/proc/self/maps") as maps:
        loaded = sorted({line.split()[-1] for line in maps if "libcudart.so" in line})
    candidates = loaded + ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    candidates += sorted(glob.glob(os.path.join(torch_lib, "libcudart*.so*")))
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
            lib.cudaIpcGetMemHandle  # noqa: B018 - probe the symbol
            return lib
        except (OSError, AttributeError):
            continue
    raise RuntimeError(f"could not load the CUDA runtime (tried {candidates})")


class CudaRuntime:
    _shared = None

    def __init__(self):
        self.lib = _find_cudart()
        self.lib.cudaGetErrorString.restype = ctypes.c_char_p
        self.lib.cudaGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    @classmethod
    def shared(cls):
        """One instance per process (loading the library is not free)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def _check(self, code, what):
        if code != 0:
            msg = self.lib.cudaGetErrorString(code).decode()
            raise RuntimeError(f"{what} failed: CUDA error {code} ({msg})")

    def malloc(self, nbytes):
        ptr = ctypes.c_void_p()
        self._check(self.lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), f"cudaMalloc({nbytes})")
        return ptr.value

    def free(self, ptr):
        self._check(self.lib.cudaFree(ctypes.c_void_p(ptr)), "cudaFree")

    def memset(self, ptr, value, nbytes):
        self._check(self.lib.cudaMemset(ctypes.c_void_p(ptr), value, ctypes.c_size_t(nbytes)), "cudaMemset")

    def memcpy_async(self, dst, src, nbytes, stream):
        """Enqueue a copy of nbytes from src to dst (device addresses, a peer's mapping included: the copy engine
        moves it over NVLink) on `stream` (a cudaStream_t); capturable."""
        self.memcpy_async_call(dst, src, nbytes, stream)()

    def memcpy_async_call(self, dst, src, nbytes, stream):
        """memcpy_async as a call that can be made again (prepared())."""
        return prepared(self._check, f"cudaMemcpyAsync({nbytes} bytes)", self.lib.cudaMemcpyAsync, ctypes.c_void_p(dst),
                        ctypes.c_void_p(src), ctypes.c_size_t(nbytes), ctypes.c_int(_MEMCPY_DEFAULT),
                        ctypes.c_void_p(stream))

    def ipc_handle(self, ptr):
        """Bytes of the IPC handle of a cudaMalloc'd block. string_at, not the field: a c_char field stops at NUL."""
        handle = _IpcHandle()
        self._check(self.lib.cudaIpcGetMemHandle(ctypes.byref(handle), ctypes.c_void_p(ptr)), "cudaIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(handle), IPC_HANDLE_BYTES)

    def ipc_open(self, handle_bytes):
        handle = _IpcHandle.from_buffer_copy(handle_bytes)
        ptr = ctypes.c_void_p()
        self._check(self.lib.cudaIpcOpenMemHandle(ctypes.byref(ptr), handle, _LAZY_ENABLE_PEER_ACCESS),
                    "cudaIpcOpenMemHandle")
        return ptr.value

    def ipc_close(self, ptr):
        self._check(self.lib.cudaIpcCloseMemHandle(ctypes.c_void_p(ptr)), "cudaIpcCloseMemHandle")

    def enable_peer_access(self, peer):
        """Let the current device dereference `peer`'s memory (one process, several GPUs); idempotent."""
        code = self.lib.cudaDeviceEnablePeerAccess(ctypes.c_int(peer), ctypes.c_uint(0))
        if code == _PEER_ACCESS_ALREADY_ENABLED:
            self.lib.cudaGetLastError()  # clear the sticky-free error so later checks do not see it
            return
        self._check(code, f"cudaDeviceEnablePeerAccess({peer})")


_WAIT_VALUE_GEQ = 0x0


class CudaDriver:
    """Stream memory operations, performed by the GPU's front end, not by an SM: cuStreamWriteValue32 stores a 32-bit
    value after the stream's earlier work (with a system-scope fence before it), cuStreamWaitValue32 holds the
    stream's later work until a 32-bit value is >= a bound. A kernel that holds every SM still meets them."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        for name in ("cuStreamWriteValue32_v2", "cuStreamWaitValue32_v2"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]

    def _check(self, code, what):
        if code != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(code, ctypes.byref(msg))
            raise RuntimeError(f"{what} failed: CUDA driver error {code} ({(msg.value or b'?').decode()})")

    def stream_write_value32(self, stream, address, value):
        self.stream_write_value32_call(stream, address, value)()

    def stream_wait_value32(self, stream, address, value):
        self.stream_wait_value32_call(stream, address, value)()

    def stream_write_value32_call(self, stream, address, value):
        return prepared(self._check, "cuStreamWriteValue32", self.lib.cuStreamWriteValue32_v2, ctypes.c_void_p(stream),
                        ctypes.c_uint64(address), ctypes.c_uint32(value), 0)

    def stream_wait_value32_call(self, stream, address, value):
        return prepared(self._check, "cuStreamWaitValue32", self.lib.cuStreamWaitValue32_v2, ctypes.c_void_p(stream),
                        ctypes.c_uint64(address), ctypes.c_uint32(value), _WAIT_VALUE_GEQ)


def prepared(check, what, fn, *args):
    """fn(*args) as a call without arguments, its ctypes arguments converted once, raising through check(code, what)
    on an error: the copy engine replays such calls (iris/copy_engine.py: plans)."""
    def call():
        code = fn(*args)
        if code != 0:
            check(code, what)

    return call
