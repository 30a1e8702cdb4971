"""Copy engine, phased: the `copy_engine` reduce-scatter with stream order in place of flags between this GPU's
streams, so a CUDA graph may hold it (fused_ops/copy_reduce.py: run_phased). The peers' slices first; their copies to
the owners run on the copy engines while a second launch computes the own slice; a small kernel then adds the
inbox. The cost against `copy_engine`: no copy starts before every peer slice is done, one more pass over the own
slice (read twice, written once), and two more launches."""

from .. import copy_reduce
from ..registry import register


@register("gemm_reduce_scatter", "copy_engine_phased", "copy-engine", "peers' slices first, put to their owners by "
                                                                      "the copy engines while a second launch computes "
                                                                      "the own slice; an add kernel last: no flags "
                                                                      "between this GPU's streams")
def run(p):
    copy_reduce.run_phased(p)
