#!/usr/bin/env python3
"""`oxydra serve` under N concurrent `POST /runs` (docs/performance.md, issue 33).

Usage: scripts/serve-load.py OXYDRA_BINARY [N]   (N defaults to 1000)

Starts `oxydra serve --addr 127.0.0.1:0` on a fresh database and workspace with one
deterministic agent (a `file_read` step: no provider, no network), opens N
connections at once, sends one `POST /runs` on each and reads every answer. Then it
waits until every run has ended (`GET /runs/{id}`) and prints the server's CPU
(user + system, from /proc/PID/stat), its peak RSS (VmHWM) and its RSS once idle
again (VmRSS), the wall time until every answer had arrived and the status codes.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time

CONFIG = """
[serve]
max_connections = 256

[[agents]]
name = "reader"
type = "deterministic"
description = "Reads a file"
parameters_schema = { type = "object", required = ["path"], properties = { path = { type = "string" } } }
[[agents.steps]]
tool = "file_read"
args = { path = "{{path}}" }
"""


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    # utime and stime are fields 14 and 15 of stat(5); after the name, 12 and 13.
    return (int(fields[11]) + int(fields[12])) / ticks


async def request(port, method, path, body=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    status = int(status_line.split()[1]) if status_line else 0
    return status, rest.partition(b"\r\n\r\n")[2]


async def load(port, n):
    started = time.monotonic()
    answers = await asyncio.gather(
        *(
            request(port, "POST", "/runs", {"agent_name": "reader", "parameters": {"path": "note.txt"}})
            for _ in range(n)
        ),
        return_exceptions=True,
    )
    wall = time.monotonic() - started
    codes = {}
    ids = []
    for answer in answers:
        if isinstance(answer, Exception):
            codes[type(answer).__name__] = codes.get(type(answer).__name__, 0) + 1
            continue
        status, body = answer
        codes[status] = codes.get(status, 0) + 1
        match = re.search(rb'"(?:run_id|id)"\s*:\s*"([^"]+)"', body)
        if match:
            ids.append(match.group(1).decode())
    return wall, codes, ids


ENDED = {}


async def wait_done(port, ids):
    pending = list(ids)
    deadline = time.monotonic() + 120
    while pending and time.monotonic() < deadline:
        still = []
        for run in pending:
            _, body = await request(port, "GET", f"/runs/{run}")
            if re.search(rb'"status"\s*:\s*"(pending|running)"', body):
                still.append(run)
            else:
                found = re.search(rb'"status"\s*:\s*"(\w+)"', body)
                ended = found.group(1).decode() if found else "?"
                ENDED[ended] = ENDED.get(ended, 0) + 1
        pending = still
        if pending:
            await asyncio.sleep(0.2)
    return len(pending)


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    with tempfile.TemporaryDirectory() as scratch:
        workspace = os.path.join(scratch, "workspace")
        os.mkdir(workspace)
        with open(os.path.join(workspace, "note.txt"), "w") as note:
            note.write("a note\n" * 20)
        config = os.path.join(scratch, "config.toml")
        with open(config, "w") as file:
            file.write(CONFIG)
        env = dict(os.environ, HOME=scratch, XDG_CONFIG_HOME=scratch, XDG_DATA_HOME=scratch)
        env.pop("RUST_LOG", None)
        server = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:0", "--config", config,
             "--db", os.path.join(scratch, "runs.db"), "--workspace", workspace],
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True,
        )
        port = None
        for line in server.stderr:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        if port is None:
            server.kill()
            sys.exit("oxydra serve did not say where it listens")
        time.sleep(0.3)
        rss_start = proc_status(server.pid, "VmRSS")
        cpu_start = cpu_seconds(server.pid)
        wall, codes, ids = asyncio.run(load(port, n))
        left = asyncio.run(wait_done(port, ids))
        cpu = cpu_seconds(server.pid) - cpu_start
        peak = proc_status(server.pid, "VmHWM")
        rss_end = proc_status(server.pid, "VmRSS")
        server.terminate()
        server.wait(timeout=30)
        print(
            f"{n} concurrent POST /runs: answers {codes}, all answered in {wall:.2f} s, "
            f"runs not ended {left}, ended {ENDED}; server CPU {cpu:.2f} s (load and runs), RSS "
            f"{rss_start / 1024:.1f} MiB idle before, peak {peak / 1024:.1f} MiB, "
            f"{rss_end / 1024:.1f} MiB after"
        )


if __name__ == "__main__":
    main()
