"""The command line: ``demoserv`` and its commands (``commands``). The top layer: it may
import every package; nothing imports it but the package's face (``flask --app
demoserv`` finds the commands through ``create_app``). ``main`` and ``serve_main`` are
the console scripts' entry points (``demoserv``, ``demoserv-serve``, ``python -m
demoserv``)."""

import os


def main():
    """``demoserv``: its commands, numpy imported with one BLAS thread."""
    _one_blas_thread()
    from .commands import main as commands

    commands()


def serve_main():
    """``demoserv-serve``: ``demoserv serve``, numpy imported with one BLAS thread."""
    _one_blas_thread()
    from .commands import serve_main as serve

    serve()


def _one_blas_thread():
    """One thread for numpy's OpenBLAS, set before the commands import numpy: it starts
    one a core as it is imported, and they spin, a fifth of a second of CPU a command,
    where nothing in demoserv does linear algebra (the finder's process sets it too)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
