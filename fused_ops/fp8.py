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
from dataclasses import replace

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from . import config as _config
from . import wgmma
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


def plan(a, b, config=None, use_fast_accum=False):
    """(Config, TMA mode) scaled_mm would run for these operands: the device defaults for FP8 (without fast
    accumulation, on GPUs: config.fp8_precise's tiles) merged with `config`."""
    m, k = a.shape
    n = b.shape[1]
    dev = _Device(a.device)
    defaults = _config.default_config(dev, m, n, k, FP8, split=True)
    if dev.backend == "cuda" and not use_fast_accum:
        defaults = _config.fp8_precise(defaults, m)
    cfg = _config.resolve((config or _config.Config()).merged(defaults), config, m, n, k)
    _config.check(cfg, dev, None)
    aligned = all(t.data_ptr() % 16 == 0 for t in (a, b)) and (a.stride(0) % 16 == 0) and (b.stride(1) % 16 == 0)
    tma = (2 if aligned else 0) if cfg.tma is None else (2 if cfg.tma else 0)
    if tma and not aligned:
        raise ValueError(f"scaled_mm: config.tma=True, but TMA needs 16-byte aligned addresses and row strides "
                         f"(a: {a.stride(0)} B, b: {b.stride(1)} B)")
    return cfg, tma


KERNELS = ("wgmma", "tile_loop")


def pick_kernel(a, b, c, cfg, config, use_fast_accum, kernel):
    """(kernel, Config) scaled_mm runs: "wgmma" (fused_ops/wgmma.py, Gluon, Hopper) where it takes the operands and
    config.wgmma_fp8 picks it (precise accumulation, tiles for most SMs), else "tile_loop" (gemm.py). kernel="wgmma"
    runs it wherever it takes the operands, with the caller's block_n, block_k, stages and programs if a config is
    given (block_m must be 128). Host only."""
    if kernel not in (None,) + KERNELS:
        raise ValueError(f"scaled_mm: kernel={kernel!r}; expected None (the faster one here), 'wgmma' or 'tile_loop'")
    if kernel == "tile_loop":
        return kernel, cfg
    ok = wgmma.supports(a, b, c)
    m, n = c.shape
    if kernel == "wgmma":
        if not ok:
            raise ValueError("scaled_mm: kernel='wgmma' needs a Hopper GPU (compute capability 9.x), Triton with Gluon "
                             "and TMA-describable operands (16-byte aligned, a row-major, b column-major)")
        if config is None:
            return kernel, _fit(_config.wgmma_fp8(cfg, m, n, cfg.gemm_sms, use_fast_accum, force=True), c)
        if cfg.block_m != wgmma.BLOCK_M or cfg.split_k > 1:
            raise ValueError(f"scaled_mm: kernel='wgmma' runs whole 128-row tiles, got {cfg.describe()}")
        if not wgmma.fits(cfg.block_n, cfg.block_k, cfg.num_stages, 1, c.element_size()):
            raise ValueError(f"scaled_mm: kernel='wgmma': {cfg.describe()} needs more shared memory than an SM has")
        return kernel, cfg
    pick = _config.wgmma_fp8(cfg, m, n, cfg.gemm_sms, use_fast_accum) if ok and config is None else None
    return ("wgmma", _fit(pick, c)) if pick is not None else ("tile_loop", cfg)


def _fit(cfg, c):
    """cfg with as many of its stages as fit beside c's staging tiles (fp32 C takes a stage's worth)."""
    while not wgmma.fits(cfg.block_n, cfg.block_k, cfg.num_stages, 1, c.element_size()):
        cfg = replace(cfg, num_stages=cfg.num_stages - 1)
    return cfg


def scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, out=None, config=None, use_fast_accum=False,
              kernel=None):
    """(a * scale_a) @ (b * scale_b) on FP8 e4m3 operands, fp32 accumulation, `out_dtype` result (a new M x N tensor,
    or `out`). Same operands, scales and use_fast_accum as torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...):
    without fast accumulation the tensor cores' partial sums are promoted to fp32 once per block of K (128 or 256
    products; at K = 131072 the relative error was 1.1e-2 without, torch's 1.7e-3). config (fused_ops.Config): tiles,
    stages, warps, programs, split_k (None: the FP8 defaults of config.default_config, config.fp8_precise without
    fast accumulation). kernel: None (on Hopper with precise accumulation, the warp-specialized Gluon kernel of
    fused_ops/wgmma.py where its tiles fill most SMs, else the catalog's tile loop), "wgmma" or "tile_loop"
    (pick_kernel). One GPU, not collective."""
    m, n, k, row = check(a, b, scale_a, scale_b, out_dtype, out)
    if a.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise NotImplementedError("scaled_mm: FP8 operands on the CPU run only under the Triton interpreter "
                                  "(TRITON_INTERPRET=1, the iris CPU backend); on GPUs it needs FP8 tensor cores")
    if a.device.type == "cuda" and torch.cuda.get_device_capability(a.device) < (8, 9):
        raise NotImplementedError(f"scaled_mm: {torch.cuda.get_device_name(a.device)} has no FP8 tensor cores "
                                  f"(compute capability 8.9 or newer needed)")
    cfg, tma = plan(a, b, config, use_fast_accum)
    c = out if out is not None else torch.empty(m, n, device=a.device, dtype=out_dtype)
    kernel, cfg = pick_kernel(a, b, c, cfg, config, use_fast_accum, kernel)
    if kernel == "wgmma":
        return wgmma.run(a, b, c, cfg.block_n, cfg.block_k, cfg.num_stages, cfg.gemm_sms, scale_a, scale_b,
                         promote=not use_fast_accum, group_m=cfg.group_m)
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
