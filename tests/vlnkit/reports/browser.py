"""Drive headless Chromium (Debian's `chromium`) over the DevTools protocol, for page tests.

Needs the `chromium` binary (apt) and the `websockets` package (pip; its synchronous client). A test
that finds either missing fails under CI and is skipped elsewhere, like the real-data tests.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from tests.conftest import in_ci

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


def require_chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:
        binary = None
    if binary is None:
        reason = "headless Chromium test needs `apt-get install chromium` and `pip install websockets`"
        if in_ci():
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    return binary


class Browser:
    """One Chromium process and one page target; `evaluate` runs JavaScript, `errors` collects console errors."""

    def __init__(self, binary: str, width: int = 1300, height: int = 2000):
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="vlnkit-chromium-")
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        import urllib.request

        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        self.connection = contextlib.ExitStack()
        self.socket = self.connection.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=2**26, open_timeout=30)
        )
        self.ids = itertools.count(1)
        self.errors: list[str] = []
        self.requests: list[str] = []  # every URL the page asked for (a self-contained page: only itself)
        for method in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            self.call(method)

    def _note(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            self.errors.append(json.dumps(params["args"])[:500])
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(params["entry"]["text"])

    def call(self, method: str, timeout: float = 60, **params) -> dict:
        request = next(self.ids)
        self.socket.send(json.dumps({"id": request, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == request:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._note(message)

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        for _ in range(100):
            if self.evaluate("document.readyState") == "complete":
                return
            time.sleep(0.1)
        raise RuntimeError(f"{url} did not load")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: str) -> None:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        if getattr(self, "connection", None) is not None:
            self.connection.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


SHOWN_ROWS = "[...document.querySelectorAll('#episode-rows tbody tr')]"


def draw_episode(browser: Browser, row: int = 1) -> dict:
    """Click the comparison page's visible episode row `row`; what the drawing then shows: the episode id,
    how many reference and agent polylines and graph edges are drawn, and the caption's text."""
    episode = browser.evaluate(f"{SHOWN_ROWS}[{row}].dataset.episode")
    browser.evaluate(f"{SHOWN_ROWS}[{row}].click()")
    count = "document.querySelectorAll('#drawing {}').length"
    return {
        "episode": episode,
        "references": browser.evaluate(count.format("polyline.reference")),
        "agent_paths": browser.evaluate(count.format("polyline.agent-path")),
        "edges": browser.evaluate(count.format("line")),
        "caption": browser.evaluate("document.getElementById('caption').textContent"),
    }
