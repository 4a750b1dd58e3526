"""A command run with its output on a pseudo-terminal, as a person at a terminal sees it."""

import os
import pty
import subprocess


def run_on_a_terminal(command, env, timeout=60):
    """(exit status, everything the command wrote to the terminal)."""
    main, terminal = pty.openpty()
    process = subprocess.Popen(command, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    output = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        output += chunk
    os.close(main)
    return process.wait(timeout=timeout), output
