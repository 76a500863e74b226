"""`nadc lsp` latency: from a didChange to the publishDiagnostics of that version.

Starts `nadc lsp` (the one beside this Python) as editors do, opens a 20-line and a 200-line file
(copies of examples/resnet_basic.nad's base block, renamed), and the 200-line one with a shape error
in the edited line (NAD301; so verify's repair suggestions run too), and sends `--changes` edits to each,
one at a time, as a person typing: each edit rewrites one node line with a new kernel size and a
new comment, so the line is one the parser has not seen. It times each edit from the moment the
change is written to the server's stdin to the moment the diagnostics of that version are read
back (the whole text is sent each time, as `TextDocumentSyncKind.Full` clients do). The first
`--warmup` edits are not counted. Prints a summary line (`lsp: ...`), then one line per file size:
median and 95th percentile. Target (issue 32): a 200-line file's diagnostics within 50 ms of a
change. Without the `lsp` extra (pygls) it says so and exits 0.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "examples" / "resnet_basic.nad").read_text().split("##ResNetBasic_stem##")[0]
BASE = BASE[BASE.index("##ResNetBasic##"):]  # the base block, 19 lines


def text_of(lines: int, edit: int, broken: bool = False) -> str:
    """About `lines` lines: copies of the base block; the first block's node 2 carries the edit (with
    `broken`, a stride of 2 too: the Add then joins two sizes, NAD301, and verify suggests a repair)."""
    blocks = []
    k = 0
    while sum(b.count("\n") for b in blocks) + BASE.count("\n") <= lines:
        blocks.append(BASE.replace("##ResNetBasic##", f"##ResNetBasic{k}##"))
        k += 1
    text = "".join(blocks)
    text += "# padding\n" * max(0, lines - text.count("\n"))
    kernel = 1 + 2 * (edit % 3)
    return text.replace("2:Conv2d(out_channels=C,kernel_size=3,stride=1)",
                        f"2:Conv2d(out_channels=C,kernel_size={kernel},stride={2 if broken else 1})  # edit {edit}", 1)


class Server:
    def __init__(self) -> None:
        nadc = Path(sys.executable).with_name("nadc")
        command = [str(nadc), "lsp"] if nadc.exists() else [sys.executable, "-m", "nader.compiler.cli", "lsp"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO)
        self.next_id = 0

    def send(self, method: str, params: dict, request: bool = False) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def read(self) -> dict:
        length = 0
        while True:
            line = self.process.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.process.stdout.read(length))

    def until(self, test) -> dict:
        while True:
            message = self.read()
            if test(message):
                return message

    def close(self) -> None:
        self.send("shutdown", {}, request=True)
        self.until(lambda m: m.get("id") == self.next_id)
        self.send("exit", {})
        self.process.wait(timeout=10)


def measure(server: Server, lines: int, changes: int, warmup: int, broken: bool = False) -> list[float]:
    uri = (REPO / f"bench-{lines}{'-broken' if broken else ''}.nad").as_uri()  # never written: the buffer is the text
    server.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "nad", "version": 0,
                                                          "text": text_of(lines, 0, broken)}})
    server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
    times = []
    for version in range(1, warmup + changes + 1):
        text = text_of(lines, version, broken)
        start = time.perf_counter()
        server.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"]["uri"] == uri and m["params"].get("version") == version)
        if version > warmup:
            times.append(time.perf_counter() - start)
    server.send("textDocument/didClose", {"textDocument": {"uri": uri}})
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    if importlib.util.find_spec("pygls") is None:
        print("lsp: skipped - the `lsp` extra (pygls) is not installed")
        return
    server = Server()
    server.send("initialize", {"processId": None, "rootUri": REPO.as_uri(), "capabilities": {}}, request=True)
    server.until(lambda m: m.get("id") == 1)
    server.send("initialized", {})
    rows = {}
    try:
        for lines, broken in ((20, False), (200, False), (200, True)):
            times = sorted(measure(server, lines, args.changes, args.warmup, broken))
            p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
            rows[lines, broken] = (statistics.median(times) * 1000, p95 * 1000, len(times))
    finally:
        server.close()
    median, p95, _ = rows[200, False]
    verdict = "met" if p95 <= 50 else "NOT met"
    print(f"lsp: 200-line file, didChange -> diagnostics median {median:.1f} ms, p95 {p95:.1f} ms "
          f"- target 50 ms {verdict}")
    for (lines, broken), (median, p95, count) in rows.items():
        what = ", with a shape error" if broken else ""
        print(f"  {lines:>4}-line file{what}: median {median:.1f} ms, p95 {p95:.1f} ms ({count} changes)")


if __name__ == "__main__":
    main()
