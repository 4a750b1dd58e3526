"""Headless Chromium for the browser checks (``pytest -m browser``): the flags every
check starts it with, and a browser driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages ended by NUL, commands read from its file
descriptor 3 and answers written to 4), which records every request the pages make
and every console message and error."""

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import time

# Nothing of the browser's own reaches the network: no updates, sync or QUIC probes.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
PLACE_PIPES = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)
TIMEOUT = 60  # seconds an answer or a page's load may take on a busy machine


def executable():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "this check needs Chromium: apt-get install chromium"
    return found


class Browser:
    """One headless Chromium and one page (tab) of it; a context manager."""

    def __init__(self, profile):
        commands, self._commands = os.pipe()
        self._answers, answers = os.pipe()
        # Python puts the pipe's ends where Chromium reads and writes them (3 and 4): a
        # shell's redirections may not name a descriptor over 9.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                PLACE_PIPES,
                str(commands),
                str(answers),
                executable(),
                *FLAGS,
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(commands, answers),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands)
        os.close(answers)
        self._buffer, self._last_id, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", page=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        os.close(self._commands)
        self.process.terminate()
        self.process.wait(timeout=TIMEOUT)
        os.close(self._answers)

    def send(self, method, page=False, **params):
        """The result of a command (of the page's session if ``page``)."""
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if page:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        answer = self._next(lambda each: each.get("id") == message["id"])
        assert "error" not in answer, (method, answer["error"])
        return answer["result"]

    def _next(self, wanted):
        """The next message ``wanted`` is true of; events read meanwhile are kept."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if wanted(message):
                    return message
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self._answers], [], [], left)[0], "no answer"
            chunk = os.read(self._answers, 1 << 20)
            assert chunk, "Chromium ended"
            self._buffer += chunk

    def _loaded(self, action):
        """Do ``action``, then wait until the page it leads to has loaded."""
        seen = len(self.events)
        action()
        if not any(event["method"] == "Page.loadEventFired" for event in self.events[seen:]):
            self._next(lambda message: message.get("method") == "Page.loadEventFired")

    def open(self, url):
        self._loaded(lambda: self.send("Page.navigate", page=True, url=url))

    def run(self, expression):
        """The value of a JavaScript expression in the page (the check's own script:
        the pages themselves run none)."""
        result = self.send("Runtime.evaluate", page=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def click(self, selector):
        """Follow the link (or press the button) ``selector`` finds, as a person does."""
        self._loaded(lambda: self.run(f"document.querySelector({json.dumps(selector)}).click()"))

    def viewport(self, width, height, scale=1, mobile=False):
        """Show the page on a screen of ``width`` by ``height`` CSS pixels."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            page=True,
            width=width,
            height=height,
            deviceScaleFactor=scale,
            mobile=mobile,
        )

    @property
    def location(self):
        return self.run("location.href")

    def requested(self):
        """Every URL the page requested."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event["method"] == "Network.requestWillBeSent"
        ]

    def errors(self):
        """Every console error, uncaught exception and error the browser logged."""
        found = []
        for event in self.events:
            method, params = event["method"], event["params"]
            if method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"])
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(params)
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"])
        return found

    def screenshot(self):
        """The page as a PNG image."""
        return base64.b64decode(
            self.send("Page.captureScreenshot", page=True, format="png")["data"]
        )
