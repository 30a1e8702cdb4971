"""The GEMM alone on one GPU: `fused_ops.matmul(a, b)` (16-bit operands), and the launch that `fp8.scaled_mm` (FP8)
shares with it. Two kernels serve it: on Hopper, the warp-specialized Gluon kernel of fused_ops/wgmma.py where
config.wgmma_config picks it (tiles for most SMs), else the catalog's persistent tile loop (gemm.py's
scaled_gemm_kernel: split-K, decode and 64-row tiles, the pointer path for strides TMA cannot describe, and the CPU
backend's interpreter). The catalog's fused ops run the tile loop (their epilogues signal and store to peers).
"""

import os
from dataclasses import replace

import torch
import triton

import iris
from triton.tools.tensor_descriptor import TensorDescriptor

from . import config as _config
from . import wgmma
from . import gemm as _gemm
from .gemm import pad_weight, scaled_gemm_kernel, store_vec

KERNELS = ("wgmma", "tile_loop")
DTYPES = (torch.bfloat16, torch.float16)
_workspaces = {}

# Operands whose rows TMA cannot describe (row strides not 16-byte aligned: K or N odd) would run the tile loop's
# pointer path (2-byte loads), far slower than the same GEMM on aligned rows plus the copies
# (results/current/gemm/README.md, align_*/). aligned_operands copies where the time the pointer path would lose at
# PTR_FLOPS (its slow end, against problem.PAD_B_FLOPS) exceeds problem.PAD_B_MARGIN x the copies' (their bytes at
# problem.PAD_B_BANDWIDTH plus a launch each), but never B at decode rows. B rows 16- but not 128-byte aligned
# (problem.pads_b, which the fused ops copy) are read as given: on the Gluon kernel the copy lost.
# ALIGN_OPERANDS = False: as given (A/B measurements).
PTR_FLOPS = 5e12
ALIGN_OPERANDS = True


# Operand rows 16- but not 32-byte aligned (FP8: K % 32 == 16, K = 3696 or 720; 16-bit: K or N % 16 == 8, K = 3000
# or 360, N = 1000 or 5000) make every TMA box row span five 32-byte sectors instead of four; the Gluon kernel's tiles,
# which draw on L2 near its limit, lose far more than rows only off 128 bytes do (1024x1440x2880 bf16, rows of 2880
# bytes: the same with every operand padded, no faster). FP8 K-major B of K = 3696 ran far faster in 128-byte aligned
# rows (results/current/gemm/fp8rows_70d96d6/explore/stride_fp8_*), and its A's rows cost about as much; so did bf16
# K-major B of K = 3000 or 360 (results/current/gemm/rows_e619b5f/; row-major B of N = 1000 or 3000 ran faster as
# given on the swapped tiles than copied). So the
# Gluon kernel reads a copy (gemm.copy_rows, 128-byte aligned rows, per call) of such an operand where a share of the
# GEMM's time exceeds problem.PAD_B_MARGIN x the copy's (its bytes twice at a copy's bandwidth, plus COPY_LAUNCH_S):
# sector_copies. FP8: FP8_SECTOR_GAIN of its time at FP8_FLOPS, copies at FP8_COPY_BANDWIDTH; 16-bit: problem's
# PAD_B_GAIN, PAD_B_FLOPS and PAD_B_BANDWIDTH, as the fused ops' copies of B. FP8 copies B (from about 3000 rows at N x
# K = 8192 x 3696) and A (COPY_A; the smaller copy where N is large against M) with precise accumulation (with fast
# accumulation, a shorter GEMM, A's copy broke even: rows_e619b5f/rowsa_*); 16-bit operands copy K-major B only
# (COPY_16BIT_B: rowsbk_*; a copy of A beside it cost more than it saved). pad_weight once per weight avoids B's
# copy.
FP8_SECTOR_GAIN = 0.2
FP8_FLOPS = 1.3e15
FP8_COPY_BANDWIDTH = 3.5e12
COPY_LAUNCH_S = 3e-6
COPY_A = True  # FP8
COPY_16BIT_B = True


def sector_copies(m, n, k, a, b, fast=False):
    """(copy A, copy B): whether the Gluon kernel reads a copy of A (FP8 without fast accumulation) or of K-major B in
    128-byte aligned rows, made per call (see FP8_SECTOR_GAIN): each where its rows are 16- but not 32-byte aligned
    and the gain pays for the copy. Host only, free."""
    from . import problem
    size = a.element_size()
    gain, flops, bandwidth = ((FP8_SECTOR_GAIN, FP8_FLOPS, FP8_COPY_BANDWIDTH) if size == 1 else
                              (problem.PAD_B_GAIN, problem.PAD_B_FLOPS, problem.PAD_B_BANDWIDTH))
    gain_s = gain * 2 * m * n * k / flops

    def pays(applies, row, elements):
        return applies and (row * size) % 32 != 0 and gain_s > problem.PAD_B_MARGIN * (
            2 * elements * size / bandwidth + COPY_LAUNCH_S)
    k_major, b_row = _b_rows(b)
    copy_a = pays(size == 1 and COPY_A and not fast and a.stride(1) == 1, a.stride(0), m * k)
    return bool(copy_a), bool(pays(k_major and (size == 1 or COPY_16BIT_B), b_row, n * k))


def sector_copied(m, n, k, a, b, fast=False):
    """(a, b), each replaced by its copy in 128-byte aligned rows where sector_copies says the Gluon kernel should read
    one. Cost: those copies (pad_weight), one per call; none where the rows are aligned already."""
    copy_a, copy_b = sector_copies(m, n, k, a, b, fast)
    return (pad_weight(a, 128 // a.element_size()) if copy_a else a,
            pad_weight(b, 128 // b.element_size()) if copy_b else b)


class _Device:
    """What config.default_config reads off a context, for a plain one-GPU call."""

    def __init__(self, device):
        self.backend = device.type
        self.ranks_per_device = 1
        self.sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4

    def get_cu_count(self):
        return self.sms


def _b_rows(b):
    """(K-major, row stride in elements) of B: row-major K x N, or column-major (an nn.Linear weight's .t())."""
    k_major = b.stride(0) == 1 and b.stride(1) != 1
    return k_major, b.stride(1) if k_major else b.stride(0)


def _tma_rows(t, row):
    """Whether TMA can describe t's rows, `row` elements apart (16-byte aligned base and row stride)."""
    return t.data_ptr() % 16 == 0 and (row * t.element_size()) % 16 == 0


def copies_pay(m, n, k, elem_bytes, a_rows_ok, b_rows_ok):
    """Whether copying the operands whose rows TMA cannot describe (a_rows_ok / b_rows_ok False) into aligned rows pays
    for itself (PTR_FLOPS). Never B's at decode rows (m <= config.DECODE_ROWS): there the pointer path streams B about
    as fast as TMA would, and the copy moves it twice more. Host only, free."""
    from .problem import PAD_B_BANDWIDTH, PAD_B_FLOPS, PAD_B_LAUNCH_S, PAD_B_MARGIN
    if (a_rows_ok and b_rows_ok) or (m <= _config.DECODE_ROWS and not b_rows_ok):
        return False
    moved = (0 if a_rows_ok else m * k) + (0 if b_rows_ok else k * n)
    copy_s = 2 * moved * elem_bytes / PAD_B_BANDWIDTH + PAD_B_LAUNCH_S * ((not a_rows_ok) + (not b_rows_ok))
    return 2 * m * n * k * (1 / PTR_FLOPS - 1 / PAD_B_FLOPS) > PAD_B_MARGIN * copy_s


def aligned_operands(a, b):
    """(a, b) as matmul's kernels read them, on a GPU: operands whose rows TMA cannot describe copied into rows 128
    bytes apart where copies_pay says so (and ALIGN_OPERANDS). Cost: those copies (fresh storage each call), on the
    caller's stream (inside a CUDA graph that captures the call, too: replays copy fresh values); none where nothing
    is copied. Not collective."""
    if not ALIGN_OPERANDS or a.device.type != "cuda":
        return a, b
    m, k = a.shape
    n = b.shape[1]
    a_ok, b_ok = _tma_rows(a, a.stride(0)), _tma_rows(b, _b_rows(b)[1])
    if copies_pay(m, n, k, a.element_size(), a_ok, b_ok):
        return (a if a_ok else pad_weight(a)), (b if b_ok else pad_weight(b))
    return a, b


def defaults(dev, m, n, k, dtype):
    """matmul's default Config (config.default_config): its loop splits tiles, and it runs alone (no program waits on
    another, so decode rows may run several programs per SM)."""
    return _config.default_config(dev, m, n, k, dtype, split=True, alone=True)


def tile_loop_plan(a, b, config, defaults_for, where):
    """(Config, TMA mode) of the tile loop: defaults_for(device, m, n, k) merged with `config`, TMA where a and b
    allow it (TMA 1: b row-major; 2: b column-major, K-major)."""
    m, k = a.shape
    n = b.shape[1]
    dev = _Device(a.device)
    cfg = _config.resolve((config or _config.Config()).merged(defaults_for(dev, m, n, k)), config, m, n, k)
    _config.check(cfg, dev, None)
    b_t, row = _b_rows(b)
    aligned = _tma_rows(a, a.stride(0)) and _tma_rows(b, row)
    mode = 2 if b_t else 1
    tma = (mode if aligned else 0) if cfg.tma is None else (mode if cfg.tma else 0)
    if not tma and cfg.split_tail and a.device.type == "cuda" and (config is None or config.split_tail is None):
        cfg = replace(cfg, split_k=1, split_tail=False)  # the pointer path's split tail ran 4x slower (problem.py)
    if tma and not aligned:
        raise ValueError(f"{where}: config.tma=True, but TMA needs 16-byte aligned addresses and row strides "
                         f"(a: {a.stride(0)}, b: {row} elements)")
    return cfg, tma


def check_kernel(kernel, where, config=None):
    """Refuse a `kernel=` that names neither kernel, and a config that contradicts itself or the kernel (before
    anything else is looked at: these hold on every device)."""
    if kernel not in (None,) + KERNELS:
        raise ValueError(f"{where}: kernel={kernel!r}; expected None (the faster one here), 'wgmma' or 'tile_loop'")
    if config is None:
        return
    if config.rem_rows and not config.swap_ab:
        raise ValueError(f"{where}: config.rem_rows={config.rem_rows} widens the Gluon kernel's swapped tiles: pass "
                         f"swap_ab=True with it")
    if config.rem_cols and config.swap_ab:
        raise ValueError(f"{where}: config.rem_cols={config.rem_cols} widens the Gluon kernel's tiles that are not "
                         f"swapped; with swap_ab=True, rem_rows widens them along A's rows")
    if (config.swap_ab or config.rem_cols or config.turns) and kernel == "tile_loop":
        what = ("swap_ab=True" if config.swap_ab else f"rem_cols={config.rem_cols}" if config.rem_cols else
                "turns=True")
        raise ValueError(f"{where}: config.{what} runs the Gluon kernel; kernel='tile_loop' has no such tiles")


def pick_kernel(a, b, c, cfg, config, fast, kernel, where, row_scales=False):
    """(kernel, Config) a call runs: "wgmma" where it takes the operands and config.wgmma_config picks it, else
    "tile_loop". kernel="wgmma" runs it wherever it takes the operands, with the caller's block_n, block_k, stages and
    programs if a config is given (block_m 64 or 128, or config.swap_ab with wgmma.run's swap tiles). row_scales:
    FP8 with row-wise scales (config.wgmma_config). Host only."""
    check_kernel(kernel, where, cfg)
    if cfg.swap_ab or cfg.rem_cols or cfg.turns:  # the caller's: only the Gluon kernel has such tiles
        kernel = "wgmma"
    if kernel == "tile_loop":
        return kernel, cfg
    ok = wgmma.supports(a, b, c)
    m, n = c.shape
    b_k_major, b_row = _b_rows(b)
    b_aligned = (b_row * b.element_size()) % 128 == 0
    if kernel == "wgmma":
        if not ok:
            raise ValueError(f"{where}: kernel='wgmma' needs a Hopper GPU (compute capability 9.x), Triton with Gluon "
                             f"and TMA-describable operands (16-byte aligned, a row-major; FP8 b column-major)")
        if config is None:
            return kernel, _fit(gluon_pick(cfg, m, n, None, a.dtype, fast, _Device(a.device).sms, b_aligned,
                                           row_scales, force=True), a, c)
        if cfg.swap_ab or cfg.rem_cols or cfg.turns:
            wgmma.kernel_args(a, b, c, cfg.block_n, cfg.block_k, cfg.num_stages, cfg.block_m, bool(cfg.swap_ab),
                              split_k=cfg.split_k, rem=rem(cfg), turns=bool(cfg.turns))  # refusals
        elif cfg.block_m not in (64, wgmma.BLOCK_M) or cfg.split_tail:
            raise ValueError(f"{where}: kernel='wgmma' with a config runs 64- or 128-row tiles (whole or in "
                             f"split_k slices), or swap_ab tiles (192-row ones are the defaults' to pick), got "
                             f"{cfg.describe()}")
        if not _fits(cfg, a, c):
            raise ValueError(f"{where}: kernel='wgmma': {cfg.describe()} needs more shared memory than an SM has")
        return kernel, cfg
    pick = (gluon_pick(cfg, m, n, a.shape[1], a.dtype, fast, _Device(a.device).sms, b_aligned, row_scales,
                       b_k_major=b_k_major) if ok and config is None else None)
    return ("wgmma", _fit(pick, a, c)) if pick is not None else ("tile_loop", cfg)


def gluon_pick(cfg, m, n, k, dtype, fast, sms, b_aligned, row_scales=False, force=False, b_k_major=False):
    """The Gluon kernel's default Config where config.wgmma_config picks it over the tile loop's defaults `cfg`, else
    None, on a GPU of `sms` SMs (force: its pick wherever, for kernel="wgmma"). The picks count SMs, where the tile
    loop's defaults may run several programs on each (config.decode_alone). Host only, free (benchmarks/gemm_picks.py
    lists it for every public GEMM)."""
    sms = min(cfg.gemm_sms, sms)
    return _config.wgmma_config(replace(cfg, gemm_sms=sms), m, n, sms, dtype, fast, force=force, b_aligned=b_aligned,
                                k=k, row_scales=row_scales, b_k_major=b_k_major)


def _staged(c, cfg):
    """Bytes per element of the Gluon kernel's C staging tiles: split-K stages fp32 partials."""
    return 4 if cfg.split_k > 1 else c.element_size()


def _fit(cfg, a, c):
    """cfg with as many of its stages as fit beside c's staging tiles (fp32 C takes a stage's worth; turns: an even
    number)."""
    while not _fits(cfg, a, c) or cfg.turns and cfg.num_stages % 2:
        cfg = replace(cfg, num_stages=cfg.num_stages - 1)
    return cfg


def _fits(cfg, a, c):
    """Whether cfg's ring and C staging tiles fit in shared memory (rem: its tiles' extra rows or columns)."""
    return wgmma.fits(cfg.block_n, cfg.block_k, cfg.num_stages, a.element_size(), _staged(c, cfg), cfg.block_m,
                      rem(cfg), bool(cfg.turns))


def rem(cfg):
    """wgmma.run's rem for cfg: its extra rows of A (swapped tiles) or columns of B, else 0."""
    return cfg.rem_rows or cfg.rem_cols or 0


def launch(a, b, c, cfg, tma, kernel, scale_a=None, scale_b=None, promote=False):
    """c = a @ b [* scales] with the kernel and Config pick_kernel chose (promote: FP8 precise accumulation)."""
    if kernel == "wgmma":
        return wgmma.run(a, b, c, cfg.block_n, cfg.block_k, cfg.num_stages, cfg.gemm_sms, scale_a, scale_b,
                         promote=promote and _config.precise_promotion(cfg), group_m=cfg.group_m,
                         block_m=cfg.block_m, swap=bool(cfg.swap_ab),
                         split_k=cfg.split_k, rem=rem(cfg), turns=bool(cfg.turns))
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    if tma == 2:
        ops = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b.t(), [bn, bk]))
    elif tma == 1:
        ops = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]))
    else:
        ops = (a, b)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    scaled = scale_a is not None
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg.group_m, TMA=tma,
                ROW_SCALES=scaled and not (scale_a.numel() == 1 and scale_b.numel() == 1), SCALED=scaled,
                num_warps=cfg.num_warps, num_stages=cfg.num_stages, C_VEC=store_vec(c, c.stride(0), n),
                MAX_IMPRECISE=bk if promote else None, INSIDE=bool(_gemm.EDGE_INSIDE))
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
    if not scaled:
        scale_a = scale_b = c  # not read
    scaled_gemm_kernel[(programs,)](*ops, scale_a, scale_b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                    b.stride(1), c.stride(0), c.stride(1), **meta, **iris.pdl_launch())
    return c


def check(a, b, out):
    """Validate a matmul call on the host: returns (m, n, k). Raises TypeError/ValueError that say what was wrong and
    what was expected."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"matmul: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"matmul: {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype not in DTYPES:
            raise TypeError(f"matmul: {name} has dtype {t.dtype}; expected bfloat16 or float16 (FP8: "
                            f"fused_ops.fp8.scaled_mm)")
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: a is {a.dtype}, b is {b.dtype}; expected one dtype")
    if b.device != a.device:
        raise ValueError(f"matmul: b is on {b.device}, a on {a.device}")
    m, k = a.shape
    if b.shape[0] != k:
        raise ValueError(f"matmul: inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    n = b.shape[1]
    if min(m, n, k) < 1:
        raise ValueError(f"matmul: empty operands: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if a.stride(1) != 1 or not (b.stride(1) == 1 or b.stride(0) == 1):
        raise ValueError(f"matmul: a must be row-major and b row- or column-major (a unit stride), got strides "
                         f"{a.stride()}, {b.stride()}")
    if out is not None:
        if (not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n) or out.dtype != a.dtype
                or out.stride(1) != 1 or out.device != a.device):
            raise ValueError(f"matmul: out must be a row-major {m} x {n} {a.dtype} tensor on {a.device}, got "
                             f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    return m, n, k


def matmul(a, b, out=None, config=None, kernel=None):
    """a @ b on one GPU (bf16/fp16, fp32 accumulation): a new M x N tensor, or `out`. b row-major (K x N) or
    column-major (an nn.Linear weight's .t()). kernel: None (on Hopper, the warp-specialized Gluon kernel where its
    tiles fill most SMs, else the catalog's tile loop: config.wgmma_config), "wgmma" or "tile_loop". config
    (fused_ops.Config): tiles, stages, programs, split_k (None: config.default_config's). Operands whose rows TMA
    cannot describe (not 16-byte aligned) are copied into aligned rows first, but B's at decode rows (M <= 16)
    (aligned_operands), and a K-major B whose rows are 16- but not 32-byte aligned where the GEMM pays for the copy
    (sector_copies); neither with config.tma set. On the CPU backend it runs under the Triton
    interpreter. One GPU, not collective; one kernel launch, plus those copies."""
    m, n, k = check(a, b, out)
    check_kernel(kernel, "matmul", config)
    if a.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise NotImplementedError("matmul: CPU tensors run only under the Triton interpreter (TRITON_INTERPRET=1, "
                                  "the iris CPU backend)")
    if config is None or config.tma is None:
        a, b = aligned_operands(a, b)
    cfg, tma = tile_loop_plan(a, b, config, lambda dev, m, n, k: defaults(dev, m, n, k, a.dtype), "matmul")
    c = out if out is not None else torch.empty(m, n, device=a.device, dtype=a.dtype)
    kernel, cfg = pick_kernel(a, b, c, cfg, config, False, kernel, "matmul")
    if kernel == "wgmma" and ALIGN_OPERANDS and (config is None or config.tma is None):
        a, b = sector_copied(m, n, k, a, b)  # rows off 32 bytes copied aligned, per call (16-bit: B's only)
    return launch(a, b, c, cfg, tma, kernel)
