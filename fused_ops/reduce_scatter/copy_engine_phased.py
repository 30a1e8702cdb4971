"""Copy engine, phased: the `copy_engine` reduce-scatter with stream order in place of flags between this GPU's
streams, so a CUDA graph may hold it (fused_ops/copy_reduce.py: run_phased). The peers' slices first; their copies to
the owners run on the copy engines while a second launch computes the own slice; a small kernel then adds the
inbox. The cost against `copy_engine`: no copy starts before every peer slice is done, one more pass over the own
slice (read twice, written once), and two more launches. Each launch runs one slice's rows (at world 2), so the
default tiles are sized for a slice (registry `shard_tiles`): 8192x4608x36864 has 576 tiles of 128x256 per slice,
4.4 waves of 132 programs, where 128x128 tiles fill 8.7 (fused_ops/config.py: HALF_TILE_COST)."""

from .. import copy_reduce
from ..fp8 import WITH_FP8
from ..registry import register


@register("gemm_reduce_scatter", "copy_engine_phased", "copy-engine", "peers' slices first, put to their owners by "
                                                                      "the copy engines while a second launch computes "
                                                                      "the own slice; an add kernel last: no flags "
                                                                      "between this GPU's streams", shard_tiles=True,
          dtypes=WITH_FP8)
def run(p):
    copy_reduce.run_phased(p)
