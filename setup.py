"""The seed catalogue goes into the package at build time: ``seed/`` at the top of the
repository stays its one source, and every wheel (built from the repository or from
the sdist, which carries ``seed/`` through MANIFEST.in) holds a copy in
``demoserv/seed/``, where an installed demoserv finds it. An editable install reads
``seed/`` itself. Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SEED = Path(__file__).resolve().parent / "seed"


class BuildWithSeed(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        files = sorted(SEED.glob("*.jsonl"))
        if not files:
            raise SystemExit(f"no seed catalogue files (*.jsonl) in {SEED}")
        target = Path(self.build_lib) / "demoserv" / "seed"
        self.mkpath(str(target))
        for path in files:
            self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildWithSeed})
