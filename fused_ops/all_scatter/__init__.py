"""GEMM + All-Scatter variants: one file each."""
from . import bulk_sync, fused_sequential, producer_consumer, torch_nccl, wg_specialized  # noqa: F401
