"""Every numbered example of the learning path (examples/NN_*.py) runs its own main(ctx) on the shared 2-rank pool
and checks its own result (each main asserts against a torch reference). Small default sizes keep this cheap."""

import glob
import importlib.util
import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
NUMBERED = sorted(os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "[0-9][0-9]_*.py")))


def load_example(name):
    """The example module, loaded by file path (names start with digits) once per rank process."""
    key = "iris_example_" + name[:-3]
    mod = sys.modules.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(key, os.path.join(EXAMPLES, name))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # before exec: Triton reads kernels' source through their module
        spec.loader.exec_module(mod)
    return mod


def r_example(ctx, name):
    load_example(name).main(ctx)
    return True


def test_the_path_is_numbered_and_listed():
    assert len(NUMBERED) >= 19, NUMBERED
    assert [n[:2] for n in NUMBERED] == [f"{i:02d}" for i in range(len(NUMBERED))], "numbers must run 00, 01, ..."
    with open(os.path.join(EXAMPLES, "README.md")) as f:
        listed = f.read()
    assert all(n in listed for n in NUMBERED), [n for n in NUMBERED if n not in listed]


@pytest.mark.parametrize("name", NUMBERED)
def test_example(ranks2, name):
    assert ranks2.run(r_example, name) == [True, True]
