#!/usr/bin/env python3
"""What the splitter's grammar costs: the shell commands of the project's
own tests and of the README, through two splitters (each a --filter
program, as build/tests/shsplit), and how many each leaves complex (asked
by every allow rule) or refuses under a read-only rule.

usage: tools/split-cost.py OLD-FILTER NEW-FILTER [-v]
"""
import glob
import json
import os
import re
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def values(text):
    """The values of every "command" key, at any level of JSON-in-JSON
    escaping, decoded."""
    for m in re.finditer(r'command(\\*)"\s*:\s*(\\*)"', text):
        k = len(m.group(2))
        i, raw = m.end(), None
        while i < len(text):
            if text[i] == '"':
                b = 0
                while b < i and text[i - 1 - b] == "\\":
                    b += 1
                if b == k:
                    raw = text[m.end():i - k]
                    break
            i += 1
        if raw is None:
            continue
        try:
            for _ in range(k + 1):
                raw = json.loads('"%s"' % raw)
        except ValueError:
            continue
        yield raw


def commands():
    """(source, command line) pairs: the bash commands the tests and the
    examples give the tools, and the README's command lines (its indented
    blocks, a "$ " prompt taken off, continued lines joined)."""
    out = []
    for f in sorted(glob.glob(os.path.join(SRC, "tests", "*.t")) +
                    glob.glob(os.path.join(SRC, "tests", "data", "*")) +
                    glob.glob(os.path.join(SRC, "examples", "*"))):
        if not os.path.isfile(f):
            continue
        with open(f, errors="replace") as fh:
            text = fh.read()
        for m in re.finditer(r'bash_args "((?:[^"\\]|\\.)*)"', text):
            out.append((os.path.relpath(f, SRC),
                        re.sub(r'\\([\\"$`])', r'\1', m.group(1))))
        for v in values(text):
            out.append((os.path.relpath(f, SRC), v))
    with open(os.path.join(SRC, "README.md")) as fh:
        lines = fh.read().split("\n")
    k = 0
    while k < len(lines):
        ln = lines[k]
        k += 1
        if not ln.startswith("    ") or ln.startswith("     "):
            continue
        s = ln[4:]
        if s.startswith("$ "):
            s = s[2:]
        elif not re.match(r"^[a-z][-a-z0-9_.]*( |$)", s):
            continue
        while s.rstrip().endswith(("\\", "|", "&&")) and k < len(lines):
            s = s + "\n" + lines[k].strip()
            k += 1
        out.append(("README.md", s))
    seen, uniq = set(), []
    for src, s in out:
        if s and s not in seen:
            seen.add(s)
            uniq.append((src, s))
    return uniq


def split(prog, lines):
    data = "".join(json.dumps(s) + "\n" for s in lines)
    p = subprocess.run([prog, "--filter"], input=data.encode(),
                       stdout=subprocess.PIPE, check=True)
    return [json.loads(x) for x in
            p.stdout.decode("utf-8", "surrogateescape").splitlines()]


def main():
    old, new = sys.argv[1], sys.argv[2]
    verbose = "-v" in sys.argv[3:]
    cmds = commands()
    lines = [s for _, s in cmds]
    a, b = split(old, lines), split(new, lines)
    oc = sum(1 for x in a if x["complex"])
    nc = sum(1 for x in b if x["complex"])
    newly = [(src, s) for (src, s), x, y in zip(cmds, a, b)
             if not x["complex"] and y["complex"]]
    print("%d command lines (tests, examples, README): complex before %d, "
          "after %d; %d more asked by every allow rule" %
          (len(lines), oc, nc, len(newly)))
    for src, s in newly if verbose else []:
        print("  %s: %s" % (src, json.dumps(s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
