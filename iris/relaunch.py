"""One Triton kernel launch, repeated with a single cuLaunchKernelEx on arguments packed once.

An eager call of a one-kernel collective used to replay a captured CUDA graph of its launch. A graph launch cannot
overlap the previous one: each replay waited for the last to drain, 1.5-2 µs per call on top of the kernel. A direct
launch with programmatic dependent launch (PDL) can: the next call's kernel is launched while this one runs and waits
in launched_early() for it. Triton's own launch path costs 15-25 µs of host time, its compiled launcher alone 5-7
µs; this one is a ctypes call into the driver (benchmarks/launch_paths.py; results/current/host/eager_launch/).

The arguments are bound when the call is prepared (pointers, sizes, the kernel's specialization), so a Relaunch
repeats exactly one call: iris.replay keys it by everything those arguments depend on, as it keys graphs. Only plain
kernels qualify (pointer and scalar arguments, one CTA per program, no scratch, no launch hooks); `build` says why
any other does not, and the caller keeps replaying a graph.
"""

import ctypes

import torch

from . import settings

ENABLED = settings.value("IRIS_RELAUNCH")
# Calls moving fewer bytes replay a graph instead: there the host is the bottleneck of back-to-back eager calls, and
# a kernel launch costs the host more than a graph launch (docs/performance.md, "Floors"); from about 1 MiB a
# collective's kernel runs longer than the host takes to issue the next call, and the overlap pays
# (results/current/host/eager_launch/).
MIN_BYTES = settings.value("IRIS_RELAUNCH_MIN_BYTES")

_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
_SCALARS = {"i1": ctypes.c_int8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
            "i64": ctypes.c_int64, "u1": ctypes.c_uint8, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
            "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float, "f32": ctypes.c_float,
            "fp64": ctypes.c_double}


class _AttributeValue(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("pad", ctypes.c_char * 64)]


class _Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttributeValue)]


class _Config(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attribute)), ("numAttrs", ctypes.c_uint)]


_driver = None


def _launch_fn():
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        lib.cuLaunchKernelEx.restype = ctypes.c_int
        _driver = lib
    return _driver.cuLaunchKernelEx


def _hooked(hook):
    """A launch hook is set: Triton 3.6 keeps a HookChain there, empty unless a profiler added to it."""
    return hook is not None and bool(getattr(hook, "calls", True))


def pack(compiled, args):
    """(ctypes values of the kernel's parameters, in its order) for `args` by parameter name, or None where the
    kernel takes something other than pointers and scalars. Constexpr (and specialized) parameters take no slot;
    the two trailing slots are Triton's global and profile scratch pointers, null for kernels that use none."""
    if getattr(compiled.metadata, "global_scratch_size", 0) or getattr(compiled.metadata, "profile_scratch_size", 0):
        return None
    values = []
    for name, ty in compiled.src.signature.items():
        if ty == "constexpr":
            continue
        v = args[name]
        if not isinstance(ty, str):
            return None
        if ty.startswith("*"):
            values.append(ctypes.c_uint64(v.data_ptr() if isinstance(v, torch.Tensor) else int(v)))
        elif ty in _SCALARS:
            values.append(_SCALARS[ty](v))
        else:  # fp16/bf16 scalars, tensor descriptors, tuples
            return None
    return values + [ctypes.c_uint64(0), ctypes.c_uint64(0)]


def _current_device():
    return torch.cuda.current_device()


def _current_stream():
    """device index -> the raw handle of its current stream (what Triton's launch path asks torch for)."""
    return torch._C._cuda_getCurrentRawStream


class Relaunch:
    """launch(): the bound call again, on the current stream."""

    __slots__ = ("function", "config", "attrs", "params", "values", "keep", "device", "compiled", "_launch",
                 "_stream")

    def __init__(self, compiled, grid, values, keep, device, launch=None, stream=None):
        md = compiled.metadata
        self.compiled, self.keep, self.device, self.values = compiled, keep, device, values
        self.function = ctypes.c_void_p(compiled.function)
        self.attrs = (_Attribute * 1)()
        self.attrs[0].id, self.attrs[0].value.i = _PROGRAMMATIC_STREAM_SERIALIZATION, 1
        g = tuple(grid) + (1,) * (3 - len(grid))
        self.config = _Config(g[0], g[1], g[2], 32 * md.num_warps, 1, 1, md.shared, None, self.attrs,
                              1 if md.launch_pdl else 0)
        self.params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        self._launch = launch or _launch_fn()
        self._stream = stream or _current_stream()

    @classmethod
    def build(cls, kernel, grid, args, meta):
        """(Relaunch or None, why not). Triton launch hooks keep the Triton path: a profiler expects its launches."""
        import triton

        knobs = triton.knobs.runtime
        if not ENABLED:
            return None, "IRIS_RELAUNCH=0"
        if not isinstance(kernel, triton.runtime.JITFunction):
            return None, f"{type(kernel).__name__} is not a compiled Triton kernel (the CPU backend interprets)"
        if _hooked(knobs.launch_enter_hook) or _hooked(knobs.launch_exit_hook):
            return None, "Triton launch hooks are set"
        compiled = kernel.warmup(*args, grid=grid, **meta)
        compiled = compiled.result() if hasattr(compiled, "result") else compiled
        if compiled is None:
            return None, "Triton returned no compiled kernel for these arguments"
        compiled.run  # noqa: B018 - loads the module (and its function handle) once
        md = compiled.metadata
        if getattr(md, "num_ctas", 1) != 1 or getattr(md, "launch_cooperative_grid", False):
            return None, "clusters or a cooperative launch"
        names = kernel.arg_names
        bound = dict(zip(names, args))
        bound.update({k: v for k, v in meta.items() if k in names})
        values = pack(compiled, bound)
        if values is None:
            return None, (f"a parameter other than pointers and scalars, or scratch memory: signature "
                          f"{dict(compiled.src.signature)}, scratch {getattr(md, 'global_scratch_size', 0)} + "
                          f"{getattr(md, 'profile_scratch_size', 0)} bytes")
        return cls(compiled, grid, values, tuple(args), _current_device()), ""

    def __call__(self):
        self.config.hStream = self._stream(self.device)
        code = self._launch(ctypes.byref(self.config), self.function, self.params, None)
        if code != 0:
            raise RuntimeError(f"relaunching {self.compiled.name}: cuLaunchKernelEx failed with CUDA driver error "
                               f"{code}; IRIS_RELAUNCH=0 replays a graph instead")
