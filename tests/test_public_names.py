"""Public names: every name in fused_ops.__all__ exists, and `fused_ops.get` is kept as an alias of
`fused_ops.variant` (a variant's catalog entry; `get` read like iris.get). No ranks: well under a second."""

import fused_ops
from fused_ops import registry


def test_fused_ops_all_names_exist():
    missing = [n for n in fused_ops.__all__ if not hasattr(fused_ops, n)]
    assert not missing, f"fused_ops.__all__ names that fused_ops does not define: {missing}"
    assert len(set(fused_ops.__all__)) == len(fused_ops.__all__), "fused_ops.__all__ lists a name twice"


def test_variant_is_the_catalog_lookup_and_get_its_alias():
    entry = fused_ops.variant("gemm_all_reduce", "one_shot")
    assert isinstance(entry, registry.Variant) and entry.name == "one_shot"
    assert fused_ops.get is fused_ops.variant


def test_iris_all_names_exist():
    import iris

    missing = [n for n in iris.__all__ if not hasattr(iris, n)]
    assert not missing, f"iris.__all__ names that iris does not define: {missing}"
    assert len(set(iris.__all__)) == len(iris.__all__), "iris.__all__ lists a name twice"
