"""The installed commands (the console scripts beside the test venv's Python), run as a
user runs them: in a folder of the test's own, with no DEMOSERV_* setting but those given."""

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
TIMEOUT = 60  # seconds any one command may take


def environment(**settings):
    env = {name: value for name, value in os.environ.items() if not name.startswith("DEMOSERV_")}
    return {**env, **settings}


def run_installed(command, *arguments, cwd=None, timeout=TIMEOUT, **settings):
    """Run the installed ``command`` (``demoserv``, ``demoserv-serve``) to its end."""
    return subprocess.run(
        [str(BIN / command), *map(str, arguments)],
        cwd=cwd,
        env=environment(**settings),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
