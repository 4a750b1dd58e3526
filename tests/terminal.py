"""Commands run with their output on a pseudo-terminal, as a person at a terminal sees it."""

import os
import pty
import re
import select
import subprocess
import time


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


class OnATerminal:
    """A command that runs until stopped (a server), its output on a pseudo-terminal:
    ``read_until`` what it writes, then ``stop`` it by its process id."""

    def __init__(self, command, env):
        self.main, terminal = pty.openpty()
        self.process = subprocess.Popen(command, stdout=terminal, stderr=terminal, env=env)
        os.close(terminal)
        self.output = b""

    def line_with(self, text, timeout=60):
        """The first whole line written that holds ``text`` (bytes), once written."""
        found = re.compile(re.escape(text) + rb".*?\n")
        self.read_until(found, timeout)
        start = self.output.rfind(b"\n", 0, self.output.index(text)) + 1
        return self.output[start:].split(b"\n", 1)[0].rstrip(b"\r").decode()

    def read_until(self, text, timeout=60):
        """Everything written so far, once it holds ``text`` (bytes, or a compiled
        pattern); AssertionError if the command stops or ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        pattern = text if isinstance(text, re.Pattern) else re.compile(re.escape(text))
        while not pattern.search(self.output):
            left = deadline - time.monotonic()
            assert left > 0, f"not written within {timeout} s: {text!r}\n{self.output!r}"
            readable, _, _ = select.select([self.main], [], [], left)
            if readable:
                try:
                    chunk = os.read(self.main, 65536)
                except OSError:  # the terminal closed with the process
                    chunk = b""
                assert chunk, f"stopped before writing {text!r}:\n{self.output!r}"
                self.output += chunk
        return self.output

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        os.close(self.main)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
