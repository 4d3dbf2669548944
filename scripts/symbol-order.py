#!/usr/bin/env python3
"""Records which functions of the `oxydra` binary a run executes, for
crates/cli/symbol-order.txt (lld's --symbol-ordering-file; see crates/cli/build.rs).

Usage: scripts/symbol-order.py [OXYDRA] [SCENARIO_SERVER]
(defaults: target/release/oxydra and target/release/scenario_server; build them
with `cargo build --release -p oxydra-cli --bin oxydra` and `cargo build --release
-p oxydra-test-support --bin scenario_server`, one package at a time).

It runs the 20-turn `file_read` scenario of `cargo xtask peer-cost` once under
valgrind's callgrind (Debian package `valgrind`), collects every function of the
binary that executed at least one instruction (callgrind names each function once,
on a `fn=` or a `cfn=` line, then refers to it by number), and writes their mangled
names, sorted, to crates/cli/symbol-order.txt. Rebuild the release binary afterwards.
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "cli", "symbol-order.txt")
PROMPT = "Read every note, twenty times, then summarise."


def executed_functions(profile, binary):
    """Mangled names of the functions of `binary` with a cost of their own."""
    objects, names, owner = {}, {}, {}
    executed = set()
    current_ob = current_cob = None
    name_line = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")
    with open(profile, errors="replace") as lines:
        for line in lines:
            match = name_line.match(line.rstrip("\n"))
            if not match:
                continue
            kind, number, name = match.groups()
            if kind in ("ob", "cob"):
                if name:
                    objects[number] = name
                if kind == "ob":
                    current_ob = objects.get(number)
                else:
                    current_cob = objects.get(number)
                continue
            if name:
                names[number] = name
            if kind == "fn":
                owner[number] = current_ob
                executed.add(number)
                current_cob = None
            else:
                owner.setdefault(number, current_cob or current_ob)
    binary = os.path.realpath(binary)
    return sorted(
        {
            names[number]
            for number in executed
            if number in names
            and not names[number].startswith("0x")
            and os.path.realpath(owner.get(number) or "") == binary
        }
    )


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/oxydra")
    server = (
        sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/scenario_server")
    )
    with tempfile.TemporaryDirectory() as scratch:
        workspace = os.path.join(scratch, "workspace")
        os.makedirs(workspace)
        subprocess.run([server, "notes", workspace], check=True, stdout=subprocess.DEVNULL)
        mock = subprocess.Popen([server, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        url = mock.stdout.readline().strip()
        profile = os.path.join(scratch, "callgrind.out")
        run = subprocess.run(
            [
                "valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
                f"--callgrind-out-file={profile}",
                binary, "run", "--base-url", url, "--output", "jsonl", "--max-turns", "25",
                "--db", os.path.join(scratch, "oxydra.db"), "--workspace", workspace, PROMPT,
            ],
            cwd=scratch,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        mock.stdin.close()
        served = mock.stdout.read()
        if run.returncode != 0 or mock.wait() != 0:
            sys.exit(f"the run did not complete the scenario (exit {run.returncode}): {served.strip()}")
        functions = executed_functions(profile, binary)
    if not functions:
        sys.exit(f"no function of {binary} in the profile: is it the binary that ran?")
    with open(OUT, "w") as out:
        out.write("\n".join(functions) + "\n")
    print(f"{len(functions)} functions written to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
