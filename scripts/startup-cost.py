#!/usr/bin/env python3
"""Start-up cost of `oxydra` (docs/performance.md, issue 33).

Usage: scripts/startup-cost.py OXYDRA_BINARY [RUNS]   (RUNS defaults to 15)

- `oxydra --version`, RUNS times: the median CPU (user + system) and peak RSS of the
  process, from wait4's rusage.
- An idle `oxydra chat`, RUNS times (at most 5): started with a plain-HTTP base URL
  that is never called and stdin a pipe that sends nothing, so that it waits for its
  first line; after 1 s its RSS (VmRSS) and peak (VmHWM) are read from /proc, then
  stdin is closed and it exits. Median of each.

Each run gets a fresh HOME (so no configuration is read) and database.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fresh_env(home):
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, XDG_DATA_HOME=home)
    for name in ("RUST_LOG", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def version(binary, runs):
    cpu, rss = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            child = subprocess.Popen([binary, "--version"], stdout=subprocess.DEVNULL,
                                     env=fresh_env(home))
            _, code, usage = os.wait4(child.pid, 0)
            if code != 0:
                sys.exit(f"oxydra --version failed ({code})")
            cpu.append(usage.ru_utime + usage.ru_stime)
            rss.append(usage.ru_maxrss / 1024)
    return statistics.median(cpu), statistics.median(rss)


def idle_chat(binary, runs):
    rss, peak = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            workspace = os.path.join(home, "workspace")
            os.mkdir(workspace)
            child = subprocess.Popen(
                [binary, "chat", "--base-url", "http://127.0.0.1:9/v1", "--db",
                 os.path.join(home, "chat.db"), "--workspace", workspace],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=fresh_env(home),
            )
            time.sleep(1.0)
            if child.poll() is not None:
                sys.exit(f"oxydra chat exited early ({child.returncode})")
            rss.append(status_kib(child.pid, "VmRSS") / 1024)
            peak.append(status_kib(child.pid, "VmHWM") / 1024)
            child.stdin.close()
            child.wait(timeout=30)
    return statistics.median(rss), statistics.median(peak)


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    cpu, rss = version(binary, runs)
    print(f"oxydra --version: CPU {cpu * 1000:.1f} ms, peak RSS {rss:.1f} MiB "
          f"(medians of {runs})")
    idle, peak = idle_chat(binary, min(runs, 5))
    print(f"idle oxydra chat after 1 s: RSS {idle:.1f} MiB, peak {peak:.1f} MiB "
          f"(medians of {min(runs, 5)})")


if __name__ == "__main__":
    main()
