"""moe_ffn's front door: checks on the host, the per-shape workspace, the float64 reference (fused_ops/moe/__init__)."""

from dataclasses import dataclass

import torch
import triton

from iris import consistency
from iris.device import take_record
from iris.replay import tensor_key

from .. import registry
from ..config import Config
from . import kernels

ACTIVATIONS = ("silu", "relu", "none")
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# Where torch_nccl could run, `auto` runs bulk_sync up to AUTO_BULK_SYNC_MAX_TOKENS tokens per rank (the largest count
# at which bulk_sync won on every model and routing measured), and at any count for experts of at most
# AUTO_BULK_SYNC_MAX_EXPERT weights per matrix (H x F): many small experts, where torch's grouped GEMM gains least and
# its host-synchronized exchange costs most. Qwen3-30B-A3B's 2048 x 768 experts won at 1024 and 4096 tokens per rank
# in all 12 rows measured (2x H100, 2x H200, 4x H200; balanced and skewed); DeepSeek-V3's 7168 x 2048 and Mixtral's
# 4096 x 14336, where it won some rows and lost others, keep torch_nccl (docs/moe.md has the table).
AUTO_BULK_SYNC_MAX_TOKENS = 16
AUTO_BULK_SYNC_MAX_EXPERT = 4 << 20


class MoEError(RuntimeError):
    """A moe_ffn call dropped token rows (capacity too small) or met expert ids out of range."""


@dataclass
class MoEProblem:
    ctx: object
    x: torch.Tensor
    idx: torch.Tensor
    weights: torch.Tensor
    w1: torch.Tensor
    w2: torch.Tensor
    y: torch.Tensor
    act: str
    capacity: int
    cfg: Config

    def __post_init__(self):
        self.rank, self.world = self.ctx.get_rank(), self.ctx.get_num_ranks()
        self.t, self.h = self.x.shape
        self.k = self.idx.shape[1]
        self.e_local, _, self.f = self.w1.shape
        self.e = self.e_local * self.world
        self.n_assign = self.t * self.k

    def workspace(self, variant):
        """Heap buffers of this shape and variant (collective on first use, reused after). Per variant: the
        variants raise different counters per call, all keyed by the workspace's one call number."""
        c, cap, bm = self.ctx, self.capacity, self.cfg.block_m
        nblk = triton.cdiv(cap, bm)
        key = ("moe_ffn", variant, self.t, self.h, self.f, self.e_local, self.k, cap, bm, self.x.dtype)

        def make(c):
            dev = c.get_device()
            return {"xbuf": c.zeros(self.e_local * cap, self.h, dtype=self.x.dtype),
                    "meta": c.zeros(self.e_local * cap, dtype=torch.int32),
                    "counts": c.zeros(self.e_local, dtype=torch.int32),
                    "blockready": c.zeros(self.e_local * nblk, dtype=torch.int32), "nblk": nblk,
                    "ret": c.zeros(self.n_assign, self.h, dtype=self.x.dtype),
                    "retready": c.zeros(self.n_assign, dtype=torch.int32),
                    "flags": c.zeros(kernels.flag_words(self.world), dtype=torch.int32),
                    "epoch": torch.zeros(1, dtype=torch.int32, device=dev),
                    "done": torch.zeros(1, dtype=torch.int32, device=dev),
                    "bases": torch.zeros(self.e, dtype=torch.int32, device=dev),
                    "slot_of": torch.zeros(self.n_assign, dtype=torch.int32, device=dev),
                    "hbuf": torch.zeros(self.e_local * cap, self.f, dtype=self.x.dtype, device=dev),
                    "obuf": torch.zeros(self.e_local * cap if variant == "bulk_sync" else 0, self.h,
                                        dtype=self.x.dtype, device=dev)}

        return c.workspace(key, make)

    def route(self, ws):
        """Device-side routing (torch ops, no host synchronization, capturable): a new call number, each assignment's
        expert (E for an invalid id, which is recorded) and its rank among this rank's assignments to that expert,
        and the per-expert histogram."""
        ws["epoch"].add_(1)
        flat = self.idx.reshape(-1).to(torch.int64)
        bad = (flat < 0) | (flat >= self.e)
        flat = torch.where(bad, torch.full_like(flat, self.e), flat)
        status = _status(self.ctx)
        status[1:2].add_(bad.sum().to(torch.int32))
        hist = torch.zeros(self.e + 1, dtype=torch.int64, device=flat.device).scatter_add_(0, flat,
                                                                                           torch.ones_like(flat))
        order = torch.argsort(flat, stable=True)
        starts = torch.cumsum(hist, 0) - hist
        pos = torch.empty_like(flat)
        pos[order] = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
        return flat.to(torch.int32), pos.to(torch.int32), hist[:self.e].to(torch.int32).contiguous(), status

    def rank_args(self):
        return self.rank, self.world, self.ctx.get_heap_bases()


def _status(ctx):
    """[0] the largest capacity a dropped row needed, [1] invalid expert ids seen (since the last check)."""
    return ctx.workspace(("moe_ffn", "status"), lambda c: torch.zeros(2, dtype=torch.int32, device=c.get_device()))


def check_errors(ctx):
    """Raise MoEError if an iris moe_ffn call on this rank dropped rows or met invalid expert ids since the last
    check; clears the record. Reads two device words: a host synchronization (the CPU backend checks every call)."""
    need, bad = take_record(_status(ctx))
    if need or bad:
        what = []
        if need:
            what.append(f"an expert received more rows than its capacity; capacity >= {need} is needed (their "
                        f"tokens' outputs are NaN)")
        if bad:
            what.append(f"{bad} expert ids were out of range (their tokens' outputs are NaN)")
        raise MoEError(f"moe_ffn on rank {ctx.get_rank()}: " + "; ".join(what))


def default_config(ctx, dtype):
    """Tiles of the grouped GEMMs: small on the CPU backend (the interpreter), 64 x 128 x 64 on GPUs."""
    if ctx.backend == "cpu":
        return Config(block_m=16, block_n=16, block_k=16, gemm_sms=2, num_warps=4, num_stages=1)
    sms = ctx.get_cu_count() // ctx.ranks_per_device
    return Config(block_m=64, block_n=128, block_k=64 if dtype != torch.float32 else 32, gemm_sms=sms, num_warps=4,
                  num_stages=3)


def _check(ctx, x, idx, weights, w1, w2, y, act, capacity):
    w = ctx.get_num_ranks()
    for name, t in (("x", x), ("topk_idx", idx), ("topk_weights", weights), ("w1", w1), ("w2", w2), ("out", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"moe_ffn: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.device.type != ctx.get_device().type:
            raise ValueError(f"moe_ffn: {name} is on {t.device}, the heap is on {ctx.get_device()}")
    if x.dim() != 2 or x.shape[0] < 1:
        raise ValueError(f"moe_ffn: x must be T x H with T >= 1, got shape {tuple(x.shape)}")
    if x.dtype not in DTYPES:
        raise TypeError(f"moe_ffn: x has dtype {x.dtype}; expected float16, bfloat16 or float32")
    if x.dtype == torch.bfloat16 and ctx.backend == "cpu":
        raise TypeError("moe_ffn: bfloat16 is not supported on the CPU backend (the Triton interpreter computes it "
                        "wrongly); use float16 or float32")
    t, h = x.shape
    if idx.dim() != 2 or idx.shape[0] != t or idx.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"moe_ffn: topk_idx must be T x k int32/int64 with T = {t}, got {tuple(idx.shape)} "
                         f"{idx.dtype}")
    if tuple(weights.shape) != tuple(idx.shape):
        raise ValueError(f"moe_ffn: topk_weights {tuple(weights.shape)} and topk_idx {tuple(idx.shape)} must have the "
                         f"same T x k shape (k mismatch?)")
    if weights.dtype not in (x.dtype, torch.float32):
        raise TypeError(f"moe_ffn: topk_weights has dtype {weights.dtype}; expected x's {x.dtype} or float32")
    if w1.dim() != 3 or w2.dim() != 3:
        raise ValueError(f"moe_ffn: w1 and w2 must be E_local x H x F and E_local x F x H, got {tuple(w1.shape)} and "
                         f"{tuple(w2.shape)}")
    e_local, h1, f = w1.shape
    if h1 != h or tuple(w2.shape) != (e_local, f, h):
        raise ValueError(f"moe_ffn: with x T x H = {tuple(x.shape)}, w1 must be E_local x {h} x F and w2 E_local x F x "
                         f"{h} with the same E_local and F; got {tuple(w1.shape)} and {tuple(w2.shape)} (experts are "
                         f"sharded by blocks: E = E_local * world, E must be divisible by the world size {w})")
    if e_local < 1 or f < 1:
        raise ValueError(f"moe_ffn: empty experts: w1 {tuple(w1.shape)}")
    if w1.dtype != x.dtype or w2.dtype != x.dtype or y.dtype != x.dtype:
        raise TypeError(f"moe_ffn: x, w1, w2 and out must share one dtype, got {x.dtype}, {w1.dtype}, {w2.dtype}, "
                        f"{y.dtype}")
    if tuple(y.shape) != (t, h) or not y.is_contiguous():
        raise ValueError(f"moe_ffn: out must be a contiguous {t} x {h} tensor, got {tuple(y.shape)}")
    if act not in ACTIVATIONS:
        raise ValueError(f"moe_ffn: activation={act!r}; expected one of {', '.join(ACTIVATIONS)}")
    if capacity is not None and (int(capacity) != capacity or capacity < 1):
        raise ValueError(f"moe_ffn: capacity={capacity!r}: expected a positive number of rows per local expert")
    # cheap on the CPU backend; on GPUs invalid ids are recorded on the device instead (no host sync; check_errors)
    if ctx.backend == "cpu" and (int(idx.min()) < 0 or int(idx.max()) >= e_local * w):
        raise ValueError(f"moe_ffn: topk_idx holds expert ids in [{int(idx.min())}, {int(idx.max())}]; expected "
                         f"[0, {e_local * w}) (E = E_local * world = {e_local} * {w})")


def _auto(ctx, tokens, expert_weights):
    """auto's pick. It depends only on values every rank shares (backend, ranks per GPU, T and the experts' H x F,
    which the op requires to be the same on every rank), so every rank picks the same variant without an exchange
    (and the first call's signature check compares the picks)."""
    if ctx.backend != "cuda" or ctx.ranks_per_device > 1:
        return "fused"  # torch_nccl cannot run here
    small = tokens <= AUTO_BULK_SYNC_MAX_TOKENS or expert_weights <= AUTO_BULK_SYNC_MAX_EXPERT
    return "bulk_sync" if small else "torch_nccl"


def moe_ffn(ctx, x, topk_idx, topk_weights, w1, w2, out=None, variant="auto", activation="silu", capacity=None,
            config=None):
    """y = sum_j topk_weights[:, j] * expert_{topk_idx[:, j]}(x), experts sharded over ranks (fused_ops/moe).
    Collective: every rank passes the same shapes, dtypes, variant, capacity and config; the first call of each such
    signature compares them across ranks (one host exchange) and raises ConsistencyError on every rank if they differ.
    Returns out (a new T x H tensor when None). variant="auto": where every rank has its own GPU, bulk_sync up to
    AUTO_BULK_SYNC_MAX_TOKENS tokens per rank or for experts of at most AUTO_BULK_SYNC_MAX_EXPERT weights per matrix,
    torch_nccl otherwise; elsewhere fused. The iris variants never
    synchronize the host and may be captured in a CUDA graph (call each shape once before capturing: the first call
    creates the workspace); torch_nccl cannot be. On GPUs an eager call repeated on the same tensors replays a graph
    of its launches (iris/replay.py; IRIS_REPLAY=0 turns that off)."""
    y, ran = _call(ctx, x, topk_idx, topk_weights, w1, w2, out, variant, activation, capacity, config)
    if ctx.backend == "cpu" and ran.pattern != "baseline":  # after the call: dropped rows leave the ranks in step
        check_errors(ctx)
    return y


@consistency.guarded("moe_ffn")
def _call(ctx, x, topk_idx, topk_weights, w1, w2, out, variant, activation, capacity, config):
    """The call, under the context's health checks (iris/health.py): (out, the variant that ran)."""
    y = out if out is not None else torch.empty_like(x)
    _check(ctx, x, topk_idx, topk_weights, w1, w2, y, activation, capacity)
    asked, variant = variant, _auto(ctx, x.shape[0], w1.shape[1] * w1.shape[2]) if variant == "auto" else variant
    v = registry.get("moe_ffn", variant, ctx.backend)
    if str(x.dtype).replace("torch.", "") not in v.dtypes_on(ctx.backend):
        raise TypeError(f"moe_ffn/{variant} does not support {x.dtype} on the {ctx.backend} backend")
    if v.pattern == "baseline" and ctx.backend == "cuda" and ctx.ranks_per_device > 1:
        raise ValueError(f"moe_ffn/{variant} needs one GPU per rank (NCCL refuses two ranks on one device; "
                         f"{ctx.ranks_per_device} ranks share each GPU here)")
    if v.pattern == "baseline" and ctx.backend == "cuda" and torch.cuda.is_current_stream_capturing():
        why = (f" (auto's pick above {AUTO_BULK_SYNC_MAX_TOKENS} tokens per rank for experts of more than "
               f"{AUTO_BULK_SYNC_MAX_EXPERT} weights)" if asked == "auto" else "")
        raise RuntimeError(f"moe_ffn/{variant}{why} cannot be captured in a CUDA graph: it reads the split sizes on "
                           f"the host. Capture variant='bulk_sync' or 'fused', after one eager call of that variant "
                           f"with the same shapes (it creates the workspace)")
    if ctx.get_num_ranks() > 1:  # collective on the first call of this signature (iris/consistency.py); the index
        # and weight dtypes are each rank's own business (its routing runs locally)
        consistency.first_call(ctx, ("moe_ffn", asked, variant, activation, capacity, repr(config), tuple(
            topk_idx.shape), *map(consistency.describe, (x, w1, w2))))
    cap = int(capacity) if capacity is not None else ctx.get_num_ranks() * x.shape[0]
    cfg = (config or Config()).merged(default_config(ctx, x.dtype))
    x, topk_idx, topk_weights = x.contiguous(), topk_idx.contiguous(), topk_weights.contiguous()
    p = MoEProblem(ctx=ctx, x=x, idx=topk_idx, weights=topk_weights, w1=w1.contiguous(), w2=w2.contiguous(), y=y,
                   act=activation, capacity=cap, cfg=cfg)
    if v.pattern == "baseline" or ctx.tracer is not None:
        v.run(p)
    else:  # GPUs: a call repeated on the same tensors replays a CUDA graph of its routing ops and launches
        key = ("moe_ffn", variant, activation, cap, cfg, *map(tensor_key, (p.x, p.idx, p.weights, p.w1, p.w2, y)))
        ctx.replay(key, lambda: v.run(p))
    return y, v


def reference(xs, idxs, weights, w1s, w2s, activation="silu"):
    """Float64 reference on one device: every rank's inputs (lists by rank) and expert shards; returns the outputs by
    rank."""
    w1 = torch.cat([w.double() for w in w1s])
    w2 = torch.cat([w.double() for w in w2s])
    act = {"silu": torch.nn.functional.silu, "relu": torch.relu, "none": lambda v: v}[activation]
    outs = []
    for x, idx, wt in zip(xs, idxs, weights):
        x = x.double()
        y = torch.zeros_like(x)
        for j in range(idx.shape[1]):
            e = idx[:, j].long()
            h = act(torch.einsum("th,thf->tf", x, w1[e]))
            y += wt[:, j].double()[:, None] * torch.einsum("tf,tfh->th", h, w2[e])
        outs.append(y)
    return outs
