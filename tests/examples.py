#!/usr/bin/env python3
"""The examples of the documentation, for tests/t0910-examples.t, which
runs every one of them as printed.

  examples.py extract OUTDIR FILE...  finds the displays of FILEs (Markdown
                                      or mdoc) and writes OUTDIR/index and,
                                      per display to run, OUTDIR/ID.sh

For a transcript, OUTDIR/ID.sh sends what command K prints to
OUTDIR/ID.out.K; OUTDIR/ID.cmd.K is the command, OUTDIR/ID.exp.K the
lines under it, if any, which the test compares (tests/t0910-examples.t).

What is a display: in Markdown a code block (indented by four spaces, or
fenced with ``` with no tag or sh, shell or console; a block with another
tag, such as ```json, is not a command and is not run); in a man page a
.Bd -literal ... .Ed display or a .Dl line, anywhere in the page, its text
as mandoc(1) prints it.

Every display is run, unless a comment right before it says why not:
in Markdown the last non-blank line before the block is
<!-- not run: REASON -->, in mdoc the line before .Bd or .Dl is
.\\" not run: REASON.  A display is either

  a transcript, when its first line starts with "$ ": each line starting
  with "$ " starts a command, the lines after it continue it as long as
  the shell would read on (an open quote, a trailing |, || or &&, a
  trailing backslash, an unfinished loop or here-document), and the lines after that, up
  to the next "$ ", are what the command prints (stdout and stderr, as a
  terminal shows them).  Those lines are compared with what it prints;
  "..." in a line stands for any text, a line of only "..." for any
  number of lines.  A command with no lines under it is run, its output
  not compared.  The commands run in one shell, one after the other, so
  a variable set by one is seen by the next.

  or a script: any other display, run as it is.

Both run with sh -e and pipefail: a command that fails fails the example.
A command meant to fail shows it, as in `todo-write --check || echo "not
done"`.
The index has a line per display: ID, FILE:LINE, script, transcript or
skip, and the first line of the display or the reason it is not run,
separated by tabs.
"""

import os
import re
import subprocess
import sys

NOT_RUN_MD = re.compile(r"^\s*<!--\s*not run:\s*(.*?)\s*-->\s*$")
NOT_RUN_MDOC = re.compile(r'^\.\\"\s*not run:\s*(.*?)\s*$')
MARK = "XEXAMPLEXMARKX"


class Error(Exception):
    pass


def not_run(line, pattern, where):
    """The reason a comment line gives, None when it is not one."""
    m = pattern.match(line)
    if not m:
        if "not run" in line and (line.lstrip().startswith("<!--") or
                                  line.startswith('.\\"')):
            raise Error("%s: a 'not run' comment not written as %s" %
                        (where, "<!-- not run: REASON -->" if pattern is
                         NOT_RUN_MD else '.\\" not run: REASON'))
        return None
    if not m.group(1):
        raise Error("%s: 'not run' without a reason" % where)
    return m.group(1)


def markdown_displays(path):
    """(line, text, reason) for each code block of a Markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    prev, prev_no = None, 0  # the last non-blank line before i, its number
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)", line)
        if fence:
            indent, mark, tag = fence.groups()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(mark):
                j += 1
            if j == len(lines):
                raise Error("%s:%d: a fence never closed" % (path, i + 1))
            body = [ln[len(indent):] if ln.startswith(indent) else
                    ln.lstrip() for ln in lines[i + 1:j]]
            reason = not_run(prev or "", NOT_RUN_MD,
                             "%s:%d" % (path, i + 1))
            if reason is None and tag not in ("", "sh", "shell", "console"):
                reason = "a ```%s block" % tag
            out.append((i + 2, "\n".join(body), reason))
            prev = lines[j]
            i = j + 1
            continue
        if line.startswith("    ") and line.strip() and \
                (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or
                                      not lines[j].strip()):
                j += 1
            while not lines[j - 1].strip():
                j -= 1
            body = [ln[4:] for ln in lines[i:j]]
            reason = not_run(prev or "", NOT_RUN_MD,
                             "%s:%d" % (path, i + 1))
            out.append((i + 1, "\n".join(body), reason))
            prev = lines[j - 1]
            i = j
            continue
        if line.strip():
            if prev is not None and NOT_RUN_MD.match(prev):
                raise Error("%s:%d: a 'not run' comment that no code block "
                            "follows" % (path, prev_no))
            prev, prev_no = line, i + 1
        i += 1
    return out


def mdoc_displays(path):
    """(line, text, reason) for each .Bd -literal and .Dl of a man page,
    the text as mandoc prints it."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found = []  # (line, source lines, reason)
    i = 0
    while i < len(lines):
        line = lines[i]
        where = "%s:%d" % (path, i + 1)
        if line.startswith(".Bd") and "-literal" in line.split() or \
                re.match(r"^\.Dl\s", line):
            reason = not_run(lines[i - 1], NOT_RUN_MDOC, where) if i else None
            if line.startswith(".Dl"):
                found.append((i + 1, [line], reason))
            else:
                j = i + 1
                while j < len(lines) and not lines[j].startswith(".Ed"):
                    j += 1
                if j == len(lines):
                    raise Error("%s: a .Bd without .Ed" % where)
                found.append((i + 1, lines[i:j + 1], reason))
                i = j
        elif line.startswith('.\\"') and "not run" in line:
            not_run(line, NOT_RUN_MDOC, where)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not re.match(r"^\.(Bd|Dl)\s", nxt):
                raise Error("%s: a 'not run' comment that no display "
                            "follows" % where)
        i += 1
    if not found:
        return []
    # One mandoc run renders them all, each after a mark of its own.
    src = [".Dd January 1, 2026", ".Dt X 1", ".Os", ".Sh NAME", ".Nm x",
           ".Nd x", ".Sh EXAMPLES"]
    for n, (_, body, _) in enumerate(found):
        src += [".Pp", "%s %d" % (MARK, n)] + body
    src += [".Pp", "%s END" % MARK]
    try:
        res = subprocess.run(["mandoc", "-Tutf8", "-Owidth=400"],
                             input="\n".join(src) + "\n", text=True,
                             capture_output=True)
    except OSError as e:
        raise Error("cannot run mandoc: %s" % e)
    if res.returncode != 0:
        raise Error("%s: mandoc failed: %s" % (path, res.stderr.strip()))
    text = re.sub(".\b", "", res.stdout).split("\n")
    out = []
    for n, (line, _, reason) in enumerate(found):
        try:
            start = next(k for k, t in enumerate(text)
                         if t.strip() == "%s %d" % (MARK, n)) + 1
        except StopIteration:
            raise Error("%s:%d: not found in mandoc's output" % (path, line))
        end = start
        while MARK not in text[end]:
            end += 1
        body = text[start:end]
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        ind = min(len(t) - len(t.lstrip()) for t in body if t.strip())
        out.append((line, "\n".join(t[ind:].rstrip() for t in body), reason))
    return out


def reads_on(cmd):
    """Whether the shell would read another line to complete cmd."""
    if cmd.endswith("\\"):
        return True
    # a here-document reads on to its word (sh -n does not say so)
    lines = cmd.split("\n")
    for k, line in enumerate(lines):
        for dash, word in re.findall(r"<<(-?)\s*[\\'\"]?(\w+)['\"]?", line):
            rest = [ln.lstrip("\t") if dash else ln for ln in lines[k + 1:]]
            if word not in rest:
                return True
    res = subprocess.run(["sh", "-n"], input=cmd + "\n", text=True,
                         capture_output=True)
    return res.returncode != 0


def transcript(text, where):
    """[(command, [output lines])] of a display that starts with "$ "."""
    items = []  # [command, output lines]
    open_ = False  # whether the last command reads on
    for line in text.split("\n"):
        if open_:
            items[-1][0] += "\n" + line
        elif line.startswith("$ ") or line == "$":
            items.append([line[2:], []])
        elif items:
            items[-1][1].append(line)
            continue
        else:
            raise Error("%s: a transcript starts with '$ '" % where)
        open_ = reads_on(items[-1][0])
    if open_:
        raise Error("%s: the last command is not complete: %s" %
                    (where, items[-1][0]))
    return items


def extract(outdir, files):
    os.makedirs(outdir, exist_ok=True)
    index = []
    n = 0
    for path in files:
        if path.endswith(".md"):
            displays = markdown_displays(path)
        else:
            displays = mdoc_displays(path)
        name = os.path.relpath(path, os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        for line, text, reason in displays:
            n += 1
            ident = "ex%03d" % n
            where = "%s:%d" % (name, line)
            first = text.split("\n")[0]
            if reason is not None:
                index.append((ident, where, "skip", reason))
                continue
            if first.startswith("$ "):
                script = []
                for k, (cmd, out) in enumerate(transcript(text, where)):
                    res = os.path.join(os.path.abspath(outdir),
                                       "%s.out.%d" % (ident, k))
                    script.append("{\n%s\n} >'%s' 2>&1" % (cmd, res))
                    if out:
                        with open(os.path.join(outdir, "%s.exp.%d" %
                                               (ident, k)), "w") as f:
                            f.write("\n".join(out) + "\n")
                    with open(os.path.join(outdir, "%s.cmd.%d" %
                                           (ident, k)), "w") as f:
                        f.write(cmd + "\n")
                kind, text = "transcript", "\n".join(script)
            else:
                kind = "script"
            with open(os.path.join(outdir, ident + ".sh"), "w") as f:
                f.write(text + "\n")
            index.append((ident, where, kind, first))
    with open(os.path.join(outdir, "index"), "w") as f:
        for row in index:
            f.write("\t".join(r.replace("\t", " ") for r in row) + "\n")


def main(argv):
    try:
        if len(argv) >= 3 and argv[1] == "extract":
            extract(argv[2], argv[3:])
            return 0
    except Error as e:
        print("examples.py: %s" % e, file=sys.stderr)
        return 2
    print(__doc__.split("\n\n")[0], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
