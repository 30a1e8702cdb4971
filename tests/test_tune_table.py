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
