"""The tree passes ruff with the rule set of pyproject.toml ([tool.ruff]): pyflakes, pycodestyle, bugbear, 120 columns.
Runs ruff (in the `test` extra) as a subprocess over every package, script, example and test: ~1 s, no ranks."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHS = ["iris", "fused_ops", "taxonomy", "benchmarks", "scripts", "examples", "tests"]


def test_ruff_check_passes():
    ruff = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True)
    assert ruff.returncode == 0, f"ruff is not installed in this environment (pip install -e '.[test]'): {ruff.stderr}"
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *PATHS], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, f"ruff check {' '.join(PATHS)} found problems:\n{out.stdout}{out.stderr}"
