"""The seed catalogue in a built package: setup.py copies seed/ into it, and an
installed (not editable) demoserv serves that copy. .ci/run checks the whole route: a
wheel built from the sdist, installed outside the checkout, serving a seed record."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_build_carries_the_seed_and_serves_it(tmp_path):
    build = tmp_path / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", f"--build-lib={build}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    copies = sorted(p.name for p in (build / "demoserv" / "seed").iterdir())
    sources = sorted(p.name for p in (ROOT / "seed").glob("*.jsonl"))
    assert copies == sources and "productions.jsonl" in copies
    for name in copies:
        assert (build / "demoserv" / "seed" / name).read_bytes() == (
            ROOT / "seed" / name
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


def test_a_checkout_serves_its_seed_folder():
    from demoserv import DEFAULTS

    assert DEFAULTS["SEED_DIR"] == str(ROOT / "seed")
