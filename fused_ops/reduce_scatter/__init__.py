"""GEMM + ReduceScatter variants: one file each (owner.py: the pieces fused and wg_specialized share)."""
from . import bulk_sync, copy_engine, copy_engine_phased, fused, torch_async_tp, torch_nccl  # noqa: F401
from . import wg_specialized  # noqa: F401
