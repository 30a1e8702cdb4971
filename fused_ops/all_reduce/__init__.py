"""GEMM + All-Reduce variants: one file each."""
from . import atomic, bulk_sync, copy_engine, one_shot, torch_nccl, torch_symm_mem, two_shot, wg_specialized  # noqa: F401
