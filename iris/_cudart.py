"""The few CUDA runtime calls the heap needs, through ctypes on the libcudart that torch has already loaded."""

import ctypes
import glob
import os

IPC_HANDLE_BYTES = 64
_LAZY_ENABLE_PEER_ACCESS = 1
_PEER_ACCESS_ALREADY_ENABLED = 704


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
    def __init__(self):
        self.lib = _find_cudart()
        self.lib.cudaGetErrorString.restype = ctypes.c_char_p

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
