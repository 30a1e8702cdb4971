"""iris.settings is the one table of environment variables: every variable the library, the CLI, the benchmarks and
the scripts read is listed there (a static scan, so a new os.environ read fails here until it is documented), each
is in docs/configuration.md, and values are parsed once with clear errors. One subprocess import: ~3 s."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from iris import settings

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ["iris", "fused_ops", "taxonomy", "benchmarks", "scripts"]
# os.environ.get("X"...), os.environ["X"], os.getenv("X"...), "X" in os.environ, environ.setdefault("X"...)
_READ = re.compile(r"""(?:environ(?:\.get|\.setdefault|\.pop)?\s*[\(\[]\s*|getenv\(\s*)["']([A-Z][A-Z0-9_]+)["']"""
                   r"""|["']([A-Z][A-Z0-9_]+)["']\s+(?:not\s+)?in\s+os\.environ""")
# Read by the launcher helpers of benchmarks and scripts only, never by the library.
_SCRIPT_ONLY = {"OMPI_ALLOW_RUN_AS_ROOT"}


def _environment_reads():
    found = {}
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            for m in _READ.finditer(path.read_text()):
                found.setdefault(m.group(1) or m.group(2), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_environment_variable_read_is_in_settings():
    known = {s.name for s in settings.SETTINGS} | set(settings.LAUNCHER_VARIABLES) | _SCRIPT_ONLY
    reads = _environment_reads()
    sample = ('os.environ.get("AB_1", "1"); os.environ["CD"]; os.getenv("EF"); "GH" in os.environ; '
              '"IJ" not in os.environ')
    assert [m.group(1) or m.group(2) for m in _READ.finditer(sample)] == ["AB_1", "CD", "EF", "GH", "IJ"]
    unknown = {name: sorted(where) for name, where in reads.items() if name not in known}
    assert not unknown, f"environment variables read but not listed in iris/settings.py: {unknown}"


def test_every_setting_is_documented():
    doc = (ROOT / "docs" / "configuration.md").read_text()
    names = [s.name for s in settings.SETTINGS] + list(settings.LAUNCHER_VARIABLES)
    missing = [n for n in names if f"`{n}`" not in doc]
    assert not missing, f"docs/configuration.md does not document: {missing}"


def test_parse_defaults_and_bad_values():
    by_name = {s.name: s for s in settings.SETTINGS}
    assert settings.parse(by_name["IRIS_WAIT_TIMEOUT_S"], None) == 30.0
    assert settings.parse(by_name["IRIS_REPLAY"], "0") is False and settings.parse(by_name["IRIS_REPLAY"], "") is True
    assert settings.parse(by_name["FUSED_OPS_CAPTURE_UNSAFE"], "a/b, c/d") == ("a/b", "c/d")
    with pytest.raises(ValueError, match="IRIS_RELAUNCH_MIN_BYTES='lots': expected int"):
        settings.parse(by_name["IRIS_RELAUNCH_MIN_BYTES"], "lots")
    assert {r["name"] for r in settings.table()} == set(by_name)


def test_modules_take_their_values_from_the_environment_at_import():
    # ... and benchmark CSVs' commands name the A/B settings changed from their defaults (settings.ab_prefix)
    code = ("import iris, fused_ops.problem as p, fused_ops.gemm as g; from iris import replay, relaunch, device; "
            "print(replay.ENABLED, replay.PREPARED, replay.CAPACITY, relaunch.MIN_BYTES, device.WAIT_TIMEOUT_S, "
            "p.HOST_DESCRIPTORS, g.EDGE_INSIDE.value); print(iris.settings.ab_prefix())")
    env = {**os.environ, "IRIS_BACKEND": "cpu", "IRIS_REPLAY": "0", "IRIS_PREPARED": "0", "IRIS_REPLAY_CAPACITY": "7",
           "IRIS_RELAUNCH_MIN_BYTES": "4096", "IRIS_WAIT_TIMEOUT_S": "12.5", "FUSED_OPS_HOST_TMA": "0",
           "FUSED_OPS_EDGE_INSIDE": "0", "FUSED_OPS_PDL_NEXT": "exit"}  # (the last one: its default, so not named)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    values, prefix = out.stdout.splitlines()
    assert values.split() == ["False", "False", "7", "4096", "12.5", "False", "False"], out.stdout + out.stderr
    assert prefix.split() == ["IRIS_REPLAY=0", "IRIS_PREPARED=0", "IRIS_RELAUNCH_MIN_BYTES=4096",
                              "FUSED_OPS_HOST_TMA=0", "FUSED_OPS_EDGE_INSIDE=0"], prefix  # (the rest: not A/B)
