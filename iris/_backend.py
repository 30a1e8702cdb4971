"""Backend choice, made once at import time.

Triton decides between compiling and interpreting when a kernel is *decorated*, so the CPU backend must switch the
interpreter on before any `@triton.jit` runs: `import iris` first, then define kernels.
"""

import os

from . import settings

BACKEND_ENV = "IRIS_BACKEND"


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # pragma: no cover - torch always importable in practice
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


BACKEND = _choose()
if BACKEND == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"

INTERPRET = BACKEND == "cpu"
