"""FP8 (e4m3) GEMM through the catalog's tile loop: `scaled_mm(a, b, scale_a, scale_b)` computes
(a.float() * scale_a) @ (b.float() * scale_b) with an fp32 accumulator and a bf16 (or fp16/fp32) result, the contract
of torch._scaled_mm: per-tensor scales (one fp32 each) or row-wise ones (scale_a M x 1, scale_b 1 x N), a row-major,
b column-major (b = w.t() of an N x K row-major weight: Hopper's FP8 tensor cores read both operands K-major).

One GPU, not collective; one kernel launch (persistent grid, split-K where tiles are few), host cost: validation and
two TMA descriptors. On the CPU backend it runs under the Triton interpreter (which computes FP8 dots exactly: the CPU
tests check the tile loop's edges against float64 there).
"""

import os

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from . import config as _config
from .gemm import scaled_gemm_kernel, store_vec

FP8 = torch.float8_e4m3fn
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_workspaces = {}


class _Device:
    """What config.default_config reads off a context, for a plain one-GPU call."""

    def __init__(self, device):
        self.backend = device.type
        self.ranks_per_device = 1
        self.sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4

    def get_cu_count(self):
        return self.sms


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


def plan(a, b, config=None):
    """(Config, TMA mode) scaled_mm would run for these operands: the device defaults for FP8 merged with `config`."""
    m, k = a.shape
    n = b.shape[1]
    dev = _Device(a.device)
    defaults = _config.default_config(dev, m, n, k, FP8, split=True)
    cfg = _config.resolve((config or _config.Config()).merged(defaults), config, m, n, k)
    _config.check(cfg, dev, None)
    aligned = all(t.data_ptr() % 16 == 0 for t in (a, b)) and (a.stride(0) % 16 == 0) and (b.stride(1) % 16 == 0)
    tma = (2 if aligned else 0) if cfg.tma is None else (2 if cfg.tma else 0)
    if tma and not aligned:
        raise ValueError(f"scaled_mm: config.tma=True, but TMA needs 16-byte aligned addresses and row strides "
                         f"(a: {a.stride(0)} B, b: {b.stride(1)} B)")
    return cfg, tma


def scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, out=None, config=None, use_fast_accum=False):
    """(a * scale_a) @ (b * scale_b) on FP8 e4m3 operands, fp32 accumulation, `out_dtype` result (a new M x N tensor,
    or `out`). Same operands, scales and use_fast_accum as torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...):
    without fast accumulation the tensor cores' partial sums are promoted to fp32 once per block of K (at K = 131072
    the relative error was 1.1e-2 without, torch's 1.7e-3). config (fused_ops.Config): tiles, stages, warps,
    programs, split_k (None: the FP8 defaults of config.default_config). One GPU, not collective."""
    m, n, k, row = check(a, b, scale_a, scale_b, out_dtype, out)
    if a.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise NotImplementedError("scaled_mm: FP8 operands on the CPU run only under the Triton interpreter "
                                  "(TRITON_INTERPRET=1, the iris CPU backend); on GPUs it needs FP8 tensor cores")
    if a.device.type == "cuda" and torch.cuda.get_device_capability(a.device) < (8, 9):
        raise NotImplementedError(f"scaled_mm: {torch.cuda.get_device_name(a.device)} has no FP8 tensor cores "
                                  f"(compute capability 8.9 or newer needed)")
    cfg, tma = plan(a, b, config)
    c = out if out is not None else torch.empty(m, n, device=a.device, dtype=out_dtype)
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    if tma:
        ops = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b.t(), [bn, bk]))
    else:
        ops = (a, b)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg.group_m, TMA=tma, ROW_SCALES=row,
                num_warps=cfg.num_warps, num_stages=cfg.num_stages, C_VEC=store_vec(c, c.stride(0), n),
                MAX_IMPRECISE=None if use_fast_accum else bk)
    programs = min(cfg.gemm_sms, tiles)
    if cfg.split_k > 1:
        s = cfg.split_k
        whole = 0
        if cfg.split_tail:
            waves, tail = divmod(tiles, cfg.gemm_sms)
            whole = tiles - tail if waves and tail else tiles
        split = tiles - whole
        key = (a.device, split * s * bm * bn, split)
        if key not in _workspaces:
            _workspaces[key] = (torch.zeros(max(1, split * s * bm * bn), device=a.device, dtype=torch.float32),
                                torch.zeros(max(1, split), device=a.device, dtype=torch.int32))
        partials, counts = _workspaces[key]
        units = whole + split * s
        programs = cfg.gemm_sms if whole else max(s, min(cfg.gemm_sms, units) // s * s)
        meta.update(SPLIT_K=s, WHOLE=whole, PARTIALS=partials, COUNTS=counts)
    scaled_gemm_kernel[(programs,)](*ops, scale_a, scale_b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                    b.stride(1), c.stride(0), c.stride(1), **meta)
    return c
