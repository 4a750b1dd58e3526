"""``flask load`` that pauses at a point of the install until a signal arrives or the
ready file it writes on arrival is removed: the seam through which tests/test_install.py
holds a load at ``building`` (the build file just made), ``installing`` (just before the
switch) or ``installed`` (just after it).

Usage: python paused_load.py POINT READY_FILE FLASK_ARGUMENTS...
"""

import os
import sys
import time
from pathlib import Path

from flask.cli import main

from demoserv.loader import install, sources

PAUSE_LIMIT = 120  # seconds: a forgotten load ends on its own


def pause(ready):
    seen = install._signals.count
    ready.write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + PAUSE_LIMIT
    while ready.exists() and install._signals.count == seen and time.monotonic() < deadline:
        time.sleep(0.01)


def pausing_at(point, ready):
    """Wrap the step the install takes at ``point`` so that it pauses there."""
    if point == "building":  # the first step after the build file is made
        builder = sources.Builder
        sources.Builder = lambda path: (pause(ready), builder(path))[1]
        return
    fsync = install._fsync

    def paused_fsync(path, *args):
        # The build file's fsync comes just before the switch, the folder's just after.
        if point == "installed" and Path(path).is_dir():
            pause(ready)
        fsync(path, *args)
        if point == "installing" and not Path(path).is_dir():
            pause(ready)

    install._fsync = paused_fsync


if __name__ == "__main__":
    point, ready, *arguments = sys.argv[1:]
    pausing_at(point, Path(ready))
    sys.argv = ["flask", "--app", "demoserv", *arguments]
    main()
