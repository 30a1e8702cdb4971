"""Copy engine: a two-shot all-reduce whose transfers all run on the copy engines (fused_ops/copy_reduce.py). The
GEMM computes the peers' row slices first and hands each finished chunk of partials to the copy engine, which puts it
into the owner's inbox; the owner adds its inbox in its GEMM epilogue, and the copy engine puts each finished chunk
of its slice into every peer's C. The GEMM keeps every SM; no barrier."""

from .. import copy_reduce
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_all_reduce", "copy_engine", "copy-engine", "two-shot on the copy engines: partial chunks put to their "
                                                           "owner, reduced in its GEMM epilogue, put back; no barrier",
          capture=False, dtypes=WITH_FP8)
def run(p):
    copy_reduce.run(p, p.c, even=False, gather=True)
