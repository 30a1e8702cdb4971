"""Backend choice, made once at import time.

Triton decides between compiling and interpreting when a kernel is *decorated*, so the CPU backend must switch the
interpreter on before any `@triton.jit` runs. Importing iris first is simplest; a program that imports triton first
(as the reference's quick start and tests do) works too: if triton is already imported when the CPU backend is
chosen, Triton's own library functions (tl.zeros, tl.sum, tl.cdiv, ..., compiled-mode objects created at triton's
import) are swapped for their interpreter twins. Kernels the program defined *before* importing iris cannot be
rescued: a warning names them.
"""

import os
import sys
import warnings

from . import settings

BACKEND_ENV = "IRIS_BACKEND"


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001  (pragma: no cover - torch always importable in practice)
        return False


def _choose():
    asked = settings.value(BACKEND_ENV).lower()
    if asked not in ("", "cpu", "cuda"):
        raise ValueError(f"{BACKEND_ENV}={asked!r}: expected 'cpu' or 'cuda' (or unset to choose automatically)")
    if settings.value("IRIS_COMPILE_ONLY") == "1":  # compile sm_90 kernels on a machine without a GPU
        return "cuda"
    if asked == "cuda" and not _cuda_available():
        raise RuntimeError(f"{BACKEND_ENV}=cuda but torch sees no CUDA device")
    if settings.value("TRITON_INTERPRET") not in ("", "0") and asked != "cuda":
        return "cpu"
    return asked or ("cuda" if _cuda_available() else "cpu")


def _interpret_imported_triton():
    """Triton was imported before the interpreter was switched on: its `@jit` library functions were built for the
    compiler and raise "Cannot call @triton.jit'd outside of the scope of a kernel" inside an interpreted kernel.
    Replace each by an interpreter twin wherever triton's modules (and tl.tensor's methods) refer to it. Kernels of
    other modules decorated already are reported, not changed."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    twins = {}

    def twin(f):
        if id(f) not in twins:
            twins[id(f)] = InterpretedFunction(f.fn, version=f.version, do_not_specialize=f.do_not_specialize,
                                               debug=f.debug, noinline=f.noinline)
        return twins[id(f)]

    stale = []
    for name, mod in list(sys.modules.items()):
        if mod is None:
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for key, value in items:
            if type(value) is not JITFunction:
                continue
            if name == "triton" or name.startswith("triton."):
                setattr(mod, key, twin(value))
            elif not name.startswith("torch") and all(v is not value for _, v in stale):  # not torch's own
                stale.append((f"{name}.{key}", value))
    import triton.language as tl

    for cls in (tl.tensor,):
        for key, value in list(vars(cls).items()):
            if type(value) is JITFunction:
                setattr(cls, key, twin(value))
    if stale:
        names = sorted(n for n, _ in stale)
        warnings.warn(f"iris switched Triton's interpreter on (CPU backend) after these kernels were defined: "
                      f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''}. They will not run on the "
                      f"CPU backend; import iris (or set TRITON_INTERPRET=1) before defining them.", stacklevel=3)


BACKEND = _choose()
if BACKEND == "cpu":
    _switch = os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    os.environ["TRITON_INTERPRET"] = "1"
    if _switch and "triton" in sys.modules:
        _interpret_imported_triton()

INTERPRET = BACKEND == "cpu"
