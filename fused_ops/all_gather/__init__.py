"""AllGather + GEMM variants: one file each."""
from . import bulk_sync, copy_engine, copy_engine_phased, pull, push, torch_async_tp, torch_nccl  # noqa: F401
