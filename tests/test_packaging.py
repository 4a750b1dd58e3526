"""The seed and sample catalogues in a built package: pyproject.toml maps ``seed/`` to the package
``demoserv.seed``, and an installed (not editable) demoserv serves that copy. .ci/run
checks the whole route: a wheel built from the sdist, installed outside the checkout,
serving a seed record."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_build_carries_the_seed_and_serves_it(tmp_path):
    build = tmp_path / "lib"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from setuptools import setup; setup()",
            "-q",
            "build_py",
            f"--build-lib={build}",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    for folder in ("seed", "sample"):
        copies = sorted(p.name for p in (build / "demoserv" / folder).glob("*.jsonl"))
        sources = sorted(p.name for p in (ROOT / folder).glob("*.jsonl"))
        assert copies == sources and "productions.jsonl" in copies
        for name in copies:
            assert (build / "demoserv" / folder / name).read_bytes() == (
                ROOT / folder / name
            ).read_bytes()
    # The built package, imported from outside the checkout, chooses its own copy.
    found = subprocess.run(
        [sys.executable, "-c", "import demoserv; print(demoserv.DEFAULTS['SEED_DIR'])"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(build), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    assert found.stdout.strip() == str(build / "demoserv" / "seed")


def test_every_package_is_built():
    """The packages are listed by name (the seed is mapped among them): a new
    subpackage left out of the list would be missing from every wheel."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        listed = set(tomllib.load(file)["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "demoserv").rglob("__init__.py")
    }
    assert found <= listed
    assert listed - found == {"demoserv.seed", "demoserv.sample"}


def test_a_checkout_serves_its_seed_folder():
    from demoserv import DEFAULTS

    assert DEFAULTS["SEED_DIR"] == str(ROOT / "seed")
