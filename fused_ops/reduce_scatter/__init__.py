"""GEMM + ReduceScatter variants: one file each (owner.py: the pieces fused and wg_specialized share)."""
from . import bulk_sync, copy_engine, fused, torch_async_tp, torch_nccl, wg_specialized  # noqa: F401
