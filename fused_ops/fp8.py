"""FP8 (e4m3) GEMM through the catalog's tile loop: `scaled_mm(a, b, scale_a, scale_b)` computes
(a.float() * scale_a) @ (b.float() * scale_b) with an fp32 accumulator and a bf16 (or fp16/fp32) result, the contract
of torch._scaled_mm: per-tensor scales (one fp32 each) or row-wise ones (scale_a M x 1, scale_b 1 x N), a row-major,
b column-major (b = w.t() of an N x K row-major weight: Hopper's FP8 tensor cores read both operands K-major).

The four catalog ops take FP8 operands too (scale_a=, scale_b=: fused_ops/ops.py): check_operands and check_scale
are their host checks, scale_mode the tile loop's SCALES constexpr (gemm.gemm_k_blocks scales each tile), matmul
their baselines' local GEMM (torch._scaled_mm), WITH_FP8 the registry dtypes of the variants that take them.

scaled_mm: one GPU, not collective; one kernel launch (persistent grid, split-K where tiles are few), host cost:
validation and two TMA descriptors. On the CPU backend it runs under the Triton interpreter (which computes FP8 dots
exactly: the CPU tests check the tile loop's edges against float64 there).
"""

import os

import torch

from . import config as _config
from . import local_gemm as _mm

FP8 = torch.float8_e4m3fn
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def check(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, out=None):
    """Validate a scaled_mm call on the host; returns (m, n, k, row_scales). Raises TypeError/ValueError that say what
    was wrong and what was expected."""
    for name, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"scaled_mm: {name} must be a torch.Tensor, got {type(t).__name__}")
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"scaled_mm: {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype != FP8:
            raise TypeError(f"scaled_mm: {name} has dtype {t.dtype}; expected torch.float8_e4m3fn (e4m3)")
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise ValueError(f"scaled_mm: inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if min(m, n, k) < 1:
        raise ValueError(f"scaled_mm: empty operands: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if a.stride(1) != 1:
        raise ValueError(f"scaled_mm: a must be row-major (stride(1) == 1), got strides {a.stride()}")
    if b.stride(0) != 1:
        raise ValueError(f"scaled_mm: b must be column-major (stride(0) == 1; pass w.t() of an N x K row-major "
                         f"weight, as torch._scaled_mm requires), got strides {b.stride()}")
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"scaled_mm: out_dtype {out_dtype}; expected one of bfloat16, float16, float32")
    for name, t in (("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        if t.device != a.device:
            raise ValueError(f"scaled_mm: {name} is on {t.device}, a on {a.device}")
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        if t.dtype != torch.float32:
            raise TypeError(f"scaled_mm: {name} has dtype {t.dtype}; expected torch.float32")
    tensor_wise = scale_a.numel() == 1 and scale_b.numel() == 1
    row_wise = (tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n) and scale_a.is_contiguous() and
                scale_b.is_contiguous())
    if not (tensor_wise or row_wise):
        raise ValueError(f"scaled_mm: scales of shapes {tuple(scale_a.shape)} and {tuple(scale_b.shape)}; expected "
                         f"one element each (per-tensor) or contiguous ({m}, 1) and (1, {n}) (row-wise)")
    if out is not None:
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n) or out.dtype != out_dtype:
            raise ValueError(f"scaled_mm: out must be a {m} x {n} {out_dtype} tensor, got "
                             f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}"
                             f"{' ' + str(out.dtype) if isinstance(out, torch.Tensor) else ''}")
        if out.stride(1) != 1 or out.device != a.device:
            raise ValueError(f"scaled_mm: out must be row-major (stride(1) == 1) on {a.device}")
    return m, n, k, not tensor_wise


def defaults(dev, m, n, k, use_fast_accum=False):
    """scaled_mm's default Config of the tile loop on `dev` (config.default_config; on GPUs config.fp8_defaults's
    tiles). Host only, free."""
    cfg = _config.default_config(dev, m, n, k, FP8, split=True)
    return _config.fp8_defaults(cfg, m, n, k, use_fast_accum, alone=True) if dev.backend == "cuda" else cfg


def plan(a, b, config=None, use_fast_accum=False):
    """(Config, TMA mode) of the tile loop for these operands: the device defaults for FP8 (defaults()) merged with
    `config` (pick_kernel: whether the Gluon kernel runs instead)."""
    return _mm.tile_loop_plan(a, b, config, lambda dev, m, n, k: defaults(dev, m, n, k, use_fast_accum), "scaled_mm")


def pick_kernel(a, b, c, cfg, config, use_fast_accum, kernel, row_scales=False):
    """(kernel, Config) scaled_mm runs (local_gemm.pick_kernel): the Gluon kernel of fused_ops/wgmma.py where
    config.wgmma_config picks it, else the tile loop. row_scales: either scale is row-wise."""
    return _mm.pick_kernel(a, b, c, cfg, config, use_fast_accum, kernel, "scaled_mm", row_scales)


def scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, out=None, config=None, use_fast_accum=False,
              kernel=None):
    """(a * scale_a) @ (b * scale_b) on FP8 e4m3 operands, fp32 accumulation, `out_dtype` result (a new M x N tensor,
    or `out`). Same operands, scales and use_fast_accum as torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...):
    without fast accumulation the tensor cores' partial sums are promoted to fp32 once per block of K (128 or 256
    products; at K = 131072 the relative error was 1.1e-2 without, torch's 1.7e-3). config (fused_ops.Config): tiles,
    stages, warps, programs, split_k (None: the FP8 defaults of config.default_config, config.fp8_defaults without
    fast accumulation). kernel: None (on Hopper, the warp-specialized Gluon kernel of fused_ops/wgmma.py where its
    tiles fill most SMs: config.wgmma_config; else the catalog's tile loop), "wgmma" or "tile_loop". Where the rows
    of b, or of a without fast accumulation (K bytes), are not 32-byte aligned and the GEMM is large against the
    operand, the Gluon kernel reads a copy of it in aligned rows made per call (local_gemm.sector_copies;
    fused_ops.pad_weight(b) once per weight avoids B's). One GPU, not collective."""
    m, n, k, row = check(a, b, scale_a, scale_b, out_dtype, out)
    if a.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise NotImplementedError("scaled_mm: FP8 operands on the CPU run only under the Triton interpreter "
                                  "(TRITON_INTERPRET=1, the iris CPU backend); on GPUs it needs FP8 tensor cores")
    if a.device.type == "cuda" and torch.cuda.get_device_capability(a.device) < (8, 9):
        raise NotImplementedError(f"scaled_mm: {torch.cuda.get_device_name(a.device)} has no FP8 tensor cores "
                                  f"(compute capability 8.9 or newer needed)")
    cfg, tma = plan(a, b, config, use_fast_accum)
    c = out if out is not None else torch.empty(m, n, device=a.device, dtype=out_dtype)
    kernel, cfg = pick_kernel(a, b, c, cfg, config, use_fast_accum, kernel, scale_mode(scale_a, scale_b) > 1)
    if kernel == "wgmma" and _mm.ALIGN_OPERANDS:  # rows off 32 bytes copied aligned, per call (sector_copies)
        a, b = _mm.sector_copied(m, n, k, a, b, use_fast_accum)
    return _mm.launch(a, b, c, cfg, tma, kernel, scale_a, scale_b, promote=not use_fast_accum)


# ------------------------------------------------------------------------------------------- the catalog ops
def scale_mode(scale_a, scale_b):
    """The SCALES constexpr of the tile loop (gemm.gemm_k_blocks, gemm.scale_tile): 0 not FP8, else 1 + (scale_a per
    row of A) + 2 * (scale_b per column of B): 1 both per-tensor, 4 both row-wise, 2 and 3 one of each."""
    if scale_a is None:
        return 0
    return 1 + (scale_a.numel() > 1) + 2 * (scale_b.numel() > 1)


def check_operands(where, a, b, c):
    """FP8 operand rules of a catalog op, on the host: False when neither a nor b is FP8 (the caller's own dtype
    rules apply); True for a valid FP8 call: a and b both float8_e4m3fn, c bfloat16/float16/float32 (the result,
    which the communication moves), a row-major and b column-major (b = w.t() of an N x K row-major weight, as
    torch._scaled_mm and Hopper's FP8 tensor cores want them). Raises TypeError/ValueError saying what was expected."""
    if a.dtype != FP8 and b.dtype != FP8:
        return False
    if a.dtype != b.dtype:
        raise TypeError(f"{where} FP8 needs a and b both torch.float8_e4m3fn, got {a.dtype}, {b.dtype}")
    if c.dtype not in OUT_DTYPES:
        raise TypeError(f"{where} c has dtype {c.dtype}; with FP8 operands c holds the result: expected one of "
                        f"bfloat16, float16, float32")
    if b.stride(0) != 1:
        raise ValueError(f"{where} FP8 b must be column-major (stride(0) == 1: pass w.t() of an N x K row-major "
                         f"weight, as torch._scaled_mm requires), got strides {b.stride()}")
    if a.stride(1) != 1:
        raise ValueError(f"{where} FP8 a must be row-major (stride(1) == 1), got strides {a.stride()}")
    return True


def check_scale(name, op, s, a, b, dims):
    """scale_a / scale_b of a catalog op (ops.Operand check): given iff a is FP8; an fp32 tensor on a's device with
    one element (per-tensor) or one per row of this rank's a (scale_a: a.shape[0] x 1) / per column of this rank's b
    (scale_b: 1 x b.shape[1]), contiguous."""
    where = f"{op}:"
    if a.dtype != FP8:
        if s is not None:
            raise TypeError(f"{where} {name} is for FP8 operands only; a and b are {a.dtype}, {b.dtype} (pass "
                            f"float8_e4m3fn a and b with scale_a and scale_b, or no scales)")
        return
    want = (a.shape[0], 1) if name == "scale_a" else (1, b.shape[1])
    if s is None:
        raise TypeError(f"{where} FP8 operands need {name}: an fp32 tensor of one element (per-tensor) or "
                        f"{want[0]} x {want[1]} (row-wise), got None")
    if not isinstance(s, torch.Tensor):
        raise TypeError(f"{where} {name} must be a torch.Tensor, got {type(s).__name__}")
    if s.dtype != torch.float32:
        raise TypeError(f"{where} {name} has dtype {s.dtype}; expected torch.float32")
    if s.device != a.device:
        raise ValueError(f"{where} {name} is on {s.device}, a on {a.device}")
    if s.numel() != 1 and (tuple(s.shape) != want or not s.is_contiguous()):
        per = "row of this rank's a" if name == "scale_a" else "column of this rank's b"
        raise ValueError(f"{where} {name} has shape {tuple(s.shape)}; expected one element (per-tensor) or a "
                         f"contiguous {want} (row-wise: one per {per})")


def one_kind(a, b, scale_a, scale_b):
    """(scale_a, scale_b), both per-tensor or both row-wise, as torch's scaled GEMMs take them: a per-tensor scale
    paired with a row-wise one is expanded to rows (M x 1 or 1 x N)."""
    if (scale_a.numel() == 1) != (scale_b.numel() == 1):
        scale_a = scale_a.reshape(-1, 1).expand(a.shape[0], 1).contiguous()
        scale_b = scale_b.reshape(1, -1).expand(1, b.shape[1]).contiguous()
    return scale_a, scale_b


def matmul(a, b, scale_a, scale_b, out_dtype, out=None):
    """The baselines' local GEMM: torch.matmul, or torch._scaled_mm (fp32 accumulation, use_fast_accum=False) for FP8
    operands. A per-tensor scale paired with a row-wise one is expanded to rows (torch takes one kind for both)."""
    if scale_a is None:
        return torch.matmul(a, b, out=out)
    scale_a, scale_b = one_kind(a, b, scale_a, scale_b)
    if scale_a.numel() == scale_b.numel() == 1 or out_dtype == torch.bfloat16 or a.device.type != "cuda":
        r = torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=out_dtype)
    else:  # torch's row-wise scaling on GPUs writes bfloat16 only: fp32 product, then the scales
        one = torch.ones((), device=a.device)
        r = (torch._scaled_mm(a, b, one, one, out_dtype=torch.float32) * scale_a * scale_b).to(out_dtype)
    return r if out is None else out.copy_(r)


# registry dtypes of the variants that take FP8 operands (registry.Variant.dtypes)
WITH_FP8 = ("float16", "bfloat16", "float32", "float8_e4m3fn")
