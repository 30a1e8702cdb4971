"""Copy engine: the reduce-scatter half of gemm_all_reduce/copy_engine (fused_ops/copy_reduce.py). The GEMM computes
the other ranks' rows first and hands each finished chunk of partials to the copy engine, which puts it into the
owner's inbox; the owner adds its inbox in its GEMM epilogue, straight into C. The GEMM keeps every SM; one barrier
first (fused_ops/copy_reduce.py says why)."""

from .. import copy_reduce
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_reduce_scatter", "copy_engine", "copy-engine", "partial chunks put to their owner by the copy engines, "
                                                               "reduced in the owner's GEMM epilogue; barrier first",
          capture=False, dtypes=WITH_FP8)
def run(p):
    copy_reduce.run(p, p.c, even=True, gather=False)
