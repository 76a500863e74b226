"""A headless Chromium driven over the DevTools protocol, for the report's browser tests.

Starts Debian's `chromium` with a throw-away profile and `--remote-debugging-port=0`, reads the
port it chose from `DevToolsActivePort`, and talks to one page over a websocket
(websocket-client). Console messages, uncaught exceptions and failed requests are collected.
"""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> Optional[str]:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60.0):
        import websocket  # websocket-client

        binary = find_chromium()
        if binary is None:
            raise RuntimeError("no chromium on PATH")
        self.profile = tempfile.mkdtemp(prefix="nader-chromium-")
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--disable-background-networking", "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=timeout).read())
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params) -> dict:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def open(self, url: str, ready: str = "document.body && document.body.dataset.ready === '1'",
             timeout: float = 60.0) -> float:
        """Navigate and wait until `ready` is true; the seconds it took."""
        start = time.perf_counter()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not self.eval(f"Boolean({ready})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"page not ready: {ready}")
            time.sleep(0.02)
        return time.perf_counter() - start

    def record_csp_violations(self) -> None:
        """From the next navigation on, keep every Content-Security-Policy violation of the page in
        `window.__csp` (this script runs before the page's own, outside its policy)."""
        self.call("Page.addScriptToEvaluateOnNewDocument", source=(
            "window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push("
            "{directive: e.effectiveDirective, sample: e.sample, blocked: e.blockedURI}));"))

    def csp_violations(self) -> list[dict]:
        return self.eval("window.__csp || []")

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, x: float, y: float) -> None:
        """A real mouse click at page coordinates."""
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path) -> None:
        import base64

        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        Path(path).write_bytes(base64.b64decode(shot["data"]))

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and network requests the page made."""
        self.call("Runtime.evaluate", expression="0")  # flush pending events
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                url = params.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:", "about:")):
                    out.append("request: " + url)
        return out

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
