"""fused_ops/tuned.csv (the `auto` variant's table) must rebuild identically from the runs under results/current/,
so that the table's provenance is the tree itself (scripts/tune_table.py, results/README.md). Pandas only: ~1 s."""

import importlib.util
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tune_table():
    spec = importlib.util.spec_from_file_location("tune_table", ROOT / "scripts" / "tune_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_inputs_live_in_results_current():
    tt = _tune_table()
    assert tt.INPUTS, "tune_table.INPUTS is empty"
    for p in tt.INPUTS:
        assert p.startswith("results/current/"), f"{p}: the table must be built from results/current/ only"
        assert (ROOT / p).is_file(), f"{p}: listed in scripts/tune_table.py INPUTS but missing"


def test_tuned_csv_rebuilds_identically():
    tt = _tune_table()
    table = tt.build([ROOT / p for p in tt.INPUTS])
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    committed = (ROOT / "fused_ops" / "tuned.csv").read_text()
    assert buf.getvalue() == committed, (
        "fused_ops/tuned.csv differs from what scripts/tune_table.py builds from results/current/: rebuild it "
        "(python scripts/tune_table.py) or put the sweeps it came from under results/current/ and in INPUTS")


def test_auto_uses_a_swept_shapes_own_row_and_blends_the_two_nearest_elsewhere():
    from fused_ops import auto

    rows = [((1024, 4096, 4096), ["push", "bulk_sync", "torch_nccl", "pull"]),
            ((1024, 8192, 8192), ["bulk_sync", "torch_nccl", "push", "pull"]),
            ((16384, 16384, 16384), ["pull", "torch_nccl", "push", "bulk_sync"])]
    assert auto.nearest(rows, (1024, 4096, 4096))[0] == "push"  # its own row, whatever the neighbours say
    # between the first two: push beat torch_nccl at the nearest only, bulk_sync at both
    assert auto.nearest(rows, (1024, 5120, 5120))[0] == "bulk_sync"
    # every variant of the nearest's ranking stays, the blend only reorders them
    assert sorted(auto.nearest(rows, (1024, 5120, 5120))) == sorted(rows[0][1])
    # a neighbour without a variant counts it as lost there; no rows, no ranking
    assert auto.blend([["one_shot", "atomic", "torch_nccl"], ["atomic", "torch_nccl"]])[0] == "atomic"
    assert auto.nearest([], (1, 2, 3)) == []


def test_holdout_reports_both_rules(capsys):
    tt = _tune_table()
    tt.holdout([ROOT / f"results/current/catalog/graph/{op}.csv" for op in tt._OPS])
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["nearest", "auto"] and all("52 shapes" in line for line in out), out
