"""fused_ops: a catalog of fused GEMM + communication kernels on the iris symmetric heap, selectable by name.

    import fused_ops
    fused_ops.list_variants("gemm_all_reduce")      # ['torch_nccl', 'torch_symm_mem', 'bulk_sync', ...]
    fused_ops.gemm_all_reduce(ctx, a, b, c, variant="one_shot", config=fused_ops.Config(block_n=128))
    fused_ops.gemm_all_reduce(ctx, a, b, c)         # variant="auto": the fastest measured here (fused_ops/auto.py)
    fused_ops.plan(ctx, "gemm_all_reduce", a, b, c) # what that call would run: (variant, Config)
    fused_ops.variant("gemm_all_reduce", "one_shot")  # its catalog entry (registry.Variant): pattern, capture, ...

As PyTorch operators with autograd: fused_ops.library; tensor-parallel layers: fused_ops.nn.
"""

import iris  # noqa: F401  (first: on the CPU backend it turns the interpreter on before kernels are defined)

from .config import Config, default_config  # noqa: F401
from .ops import all_gather_gemm, gemm_all_reduce, gemm_all_scatter, gemm_reduce_scatter, plan  # noqa: F401
from .registry import OPS, PATTERNS, get, list_ops, list_variants  # noqa: F401
from .auto import tune  # noqa: F401
from . import all_gather, all_reduce, all_scatter, reduce_scatter  # noqa: F401,E402  (registers variants)
from .moe import moe_ffn  # noqa: F401,E402  (expert parallelism: fused_ops/moe)
from . import fp8  # noqa: F401,E402  (FP8 scaled GEMM)
from .local_gemm import matmul  # noqa: F401,E402  (the GEMM alone on one GPU)
from .gemm import pad_weight  # noqa: F401,E402  (B rows aligned for TMA, once per weight)

# Keep list order meaningful: baselines first, then from least to most overlapped.
_ORDER = ["torch_nccl", "torch_symm_mem", "torch_async_tp", "bulk_sync", "fused_sequential", "atomic", "one_shot",
          "two_shot", "pull", "fused", "producer_consumer", "push", "wg_specialized", "copy_engine_phased",
          "copy_engine"]
for _op in OPS.values():
    _op.variants = dict(sorted(_op.variants.items(), key=lambda kv: _ORDER.index(kv[0])))

# fused_ops.variant(op, name): a variant's catalog entry. It was called `get`, which read like iris.get (a remote
# load); `get` stays as an alias.
variant = get

__all__ = [
    # the four front doors, and what a call would run
    "gemm_all_scatter", "gemm_all_reduce", "all_gather_gemm", "gemm_reduce_scatter", "plan",
    # expert parallelism (fused_ops/moe) and FP8 (fused_ops/fp8.py)
    "moe_ffn", "fp8", "matmul",
    # configuration and tuning
    "Config", "default_config", "tune", "pad_weight",
    # the catalog
    "OPS", "PATTERNS", "list_ops", "list_variants", "variant", "get",
]
