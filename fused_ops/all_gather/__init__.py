"""AllGather + GEMM variants: one file each."""
from . import bulk_sync, pull, push, torch_async_tp, torch_nccl  # noqa: F401
