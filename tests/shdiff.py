#!/usr/bin/env python3
"""The differential test of hook-perm's shell splitter against real bash.

Generated command lines (random ones from a grammar of bash, and mutations
of lines the project knows) go through the splitter (build/tests/shsplit
--filter).  Each line it accepts (complex false) is run by bash, twice: as
`bash -c LINE`, and as tool-exec starts bash (the warm_boot of lib/proc.c,
the line on descriptor 3), in a throwaway user, mount, pid and network
namespace where / is read-only and the work directory a fresh tmpfs.  Each
run has a pid namespace of its own besides, which ends with it: nothing a
line started (find / -exec, setsid, nohup) outlives its run, so the tmpfs
holds one run's files at a time (a leftover find once filled it).  Every
program on PATH is a stub that logs its argv; the wrappers (env, nice,
timeout, xargs, find...) are the real ones, so they run the stubs as they
would run programs; sh and bash run their -c string with the real bash.  A
trace (BASH_XTRACEFD, PS4) lists every simple command bash runs, builtins
included.

A finding is a line the splitter accepted where bash ran a command whose
name the splitter did not list, ran a program with other arguments than
listed (for a line with no expansion), or where the two ways of starting
bash ran different programs.  Findings are printed as they are found
(minimised with --minimise), so that a run cut short keeps them, and make
the exit status 1; -v prints the progress on stderr.

usage: shdiff.py --split PROG [--lines N] [--seed S] [--minimise] [-v]
                 [--timeout SEC] [--line LINE]...
(--line: run these lines instead of generated ones.)
"""
import argparse
import itertools
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

# lib/proc.c's warm_boot: how tool-exec has bash run a command.
WARM_BOOT = ("BASH_EXECUTION_STRING=$(</proc/self/fd/3); exec 3<&-; "
             "case $BASH_EXECUTION_STRING in *.) "
             "BASH_EXECUTION_STRING=${BASH_EXECUTION_STRING%.}; : \"$0\"; "
             "eval \"$BASH_EXECUTION_STRING${0:0:$((SECONDS=0))}\";; "
             "*) exit 125; esac")

LEAVES = ["ls", "cat", "git", "rm", "touch", "sudo", "id", "head", "grep",
          "sed", "awk", "sort", "make", "echo", "printf", "pwd", "test", "[",
          "true", "false", "kill", "wc", "diff", "curl", "python3", "doas",
          "mkdir", "chmod", "tee", "cp", "mv", "type", "declare", "read"]
WRAPPERS = ["env", "nice", "nohup", "timeout", "stdbuf", "xargs", "flock",
            "find", "time", "setsid"]
SHELLS = ["sh", "bash", "dash"]
BUILTINS = ["cd", "pwd", "echo", "printf", "true", "false", ":", "test", "[",
            "type", "command", "declare", "typeset", "local", "export",
            "readonly", "read", "mapfile", "readarray", "set", "shopt",
            "source", ".", "exec", "eval", "let", "trap", "alias", "unset",
            "hash", "enable", "builtin", "kill", "exit", "return", "shift",
            "getopts", "wait", "ulimit", "umask", "cd", "printf"]

# Lines the project knows: the tables, common commands, attacks.
SEEDS = [
    "git status", "git diff", "ls -la", "grep -rn x .", "cat f | head",
    "find . -name '*.c'", "sed -n 1,20p f", "git log --oneline -5",
    "make >out.log 2>&1", "echo \"$(git rev-parse HEAD)\"", "LC_ALL=C sort f",
    "git status <(git status)#; touch p", "git log <&---output=out",
    "sed <& --i s/a/b/ f", "find d <& --delete", "sort <& --oout f",
    "git <&--c core.fsmonitor='touch p' status",
    "git status >&'x$(touch p)'", "echo >&'x$(touch p)'",
    "declare -a 'a=($(touch p))'", "declare 'BASH_CMDS=(ls /usr/bin/touch)'; ls p",
    "time ! sudo id", "time { rm -rf /; }", "time A=1 rm -rf /",
    "{x}>/dev/null sudo id", "rm &>/dev/null -rf /", "cat <(ls)#; sudo id",
    "curl x | time ! sh", "env 'a-=' sudo id", "env -- - awk",
    "flock f -c 'rm -rf /'", "mapfile -C 'touch p' -c 1 <f",
    "PS4='$(touch p)'; set -x", "shopt -s extglob; echo @(x)#; touch p",
    "echo / | xargs rm -rf", "r=rm; $r -rf /", "echo 'sudo id' | sh",
    "xargs -I{} {} x", "find . -exec rm {} \\;", "bash -c 'rm x'",
    "sh -c \"touch p\"", "env a=1 nice -n 5 ls", "timeout 5 git status",
    "cd d && ls", "test -f f && cat f", "printf '%s\\n' a b", "type ls",
    "command -v git", "a=1 b=$(id) ls $a", "git log \\\n --oneline",
    "echo a # b \\\ntouch p", "ls; # note\ntouch p", "echo ${#x} $1 $@ $?",
    "printf -v 'a[$(touch p)]' x", "echo $'\\x73udo'", "echo 'a\\\nb'",
    "xargs sh -c", "echo x | xargs -n1 sh -c", "find . -exec sh -c {} \\;",
    "sh -xc \"touch p\"", "bash -c 'touch p' && ls",
    "+x|mv", "sh -la -xc \"touch p\"", "env a=1 nice -n $x 5 ls",
    "find . / -exec rm {} \\;",
]

WORDS = ["a", "x", "f", "p", "-rf", "/", "-c", "-n", "1", "-v", "status",
         "log", "--output=out", "-i", "--", "-", "d", "-la", "s/a/b/", "{}",
         "\\;", ";", "'a b'", "\"a b\"", "\"$x\"", "$x", "${x}", "${#x}",
         "$1", "$@", "$?", "$_", "${x:-y}", "${!x}", "$((1))", "$[1]",
         "$'\\x73'", "~", "*", "?", "[a]", "{a,b}", "a#b", "!", "'{'",
         "'a'=b", "a=b", "\\ ", "'$(touch p)'", "\"$(touch p)\"", "`id`",
         "$(touch p)", "'2'", "@(x)", "x\\\ny", "\"a\\\nb\"", "#c", "é",
         "\"!x\"", "'\"'", "\"'\"", "\\\"", "$", "\"$\"", "%1", "a:b", "+x"]
REDIRS = [">o", ">>o", "<f", "2>&1", ">&2", "2>/dev/null", "<&-", ">&-",
          "<& -", ">&o", "&>o", "{v}>o", "<(id)", ">(id)", "<<<w", "'2'>o",
          "3>o", ">|o", "<>o", "> -o", ">'o'", ">$x", "10>o", "1>o", "<<E"]
ASSIGNS = ["a=1", "b=$(touch p)", "PATH=.", "PS4='$(touch p)'", "BASH_ENV=f",
           "LC_ALL=C", "a+=1", "IFS=/", "c='x y'", "BASH_ALIASES[ls]=touch",
           "a=(1)", "_=x", "d=~"]
SEPS = [" ; ", " && ", " || ", " | ", "\n", " & ", " |& ", ";", "&&", "|",
        " ;; ", " \\\n "]
MUTATE = " ;&|<>()$`'\"#{}*?~!=\\\n-/acx019"


def gen_simple(r, depth):
    parts = []
    for _ in range(r.choice([0, 0, 0, 1])):
        parts.append(r.choice(ASSIGNS))
    pick = r.random()
    if pick < 0.45:
        parts.append(r.choice(LEAVES))
    elif pick < 0.65:
        parts.append(r.choice(WRAPPERS))
        for _ in range(r.randint(0, 2)):
            parts.append(r.choice(["-n", "5", "a=1", "-i", "-u", "x", "-c",
                                   "--", "-", "-I{}", "-0", "f", "-oL",
                                   "-s", "KILL", "-k", "1", "a-=1"]))
        parts.append(r.choice(LEAVES + SHELLS))
    elif pick < 0.75:
        parts.append(r.choice(SHELLS))
        if r.random() < 0.7:
            parts.append("-c")
            parts.append(shlex.quote(gen_line(r, depth + 1)))
    elif pick < 0.9:
        parts.append(r.choice(BUILTINS))
    else:
        parts.append(r.choice(WORDS))
    for _ in range(r.randint(0, 3)):
        x = r.random()
        if x < 0.6:
            parts.append(r.choice(WORDS))
        elif x < 0.8:
            parts.append(r.choice(REDIRS))
        elif depth < 2:
            parts.append("$(" + gen_line(r, depth + 1) + ")")
    return " ".join(parts)


def gen_line(r, depth=0):
    line = gen_simple(r, depth)
    for _ in range(r.choice([0, 0, 1, 1, 2])):
        line += r.choice(SEPS) + gen_simple(r, depth)
    x = r.random()
    if depth == 0 and x < 0.08:
        line = r.choice(["{ %s; }", "( %s )", "! %s", "time %s",
                         "if %s; then id; fi", "%s # c", "%s;"]) % line
    return line


def mutate(r, line):
    for _ in range(r.randint(1, 3)):
        i = r.randint(0, len(line))
        op = r.random()
        if op < 0.5:
            line = line[:i] + r.choice(MUTATE) + line[i:]
        elif op < 0.8 and line:
            line = line[:i] + line[i + 1:]
        else:
            line = line[:i] + " " + r.choice(WORDS + REDIRS) + " " + line[i:]
    return line


def generate(seed, n):
    r = random.Random(seed)
    out = []
    for k in range(n):
        if k < len(SEEDS):
            out.append(SEEDS[k])
        elif r.random() < 0.35:
            out.append(mutate(r, r.choice(SEEDS)))
        else:
            out.append(gen_line(r))
    return out


def split(prog, lines):
    data = "".join(json.dumps(x) + "\n" for x in lines)
    p = subprocess.run([prog, "--filter"], input=data.encode(),
                       stdout=subprocess.PIPE, check=True)
    return [json.loads(x) for x in
            p.stdout.decode("utf-8", "surrogateescape").splitlines()]


class Oracle:
    """Runs lines in bash with stubs, in a directory of its own."""

    def __init__(self, root, limit):
        self.root = root
        self.limit = limit
        self.stubs = os.path.join(root, "bin")
        os.mkdir(self.stubs)
        real_bash = shutil.which("bash")
        stub = os.path.join(self.stubs, ".stub")
        with open(stub, "w") as f:
            f.write("#!/bin/sh\n"
                    "n=${SHDIFF_NAME:-${0##*/}}; { printf '%d\\n' $(($# + 1)); "
                    "printf '%d:%s' \"${#n}\" \"$n\"; for a; do printf '%d:%s' "
                    "\"${#a}\" \"$a\"; done; } >>\"$SHDIFF_LOG/$$\"\n")
        shell = os.path.join(self.stubs, ".shell")
        # sh and bash: their -c string runs in the real (traced) bash;
        # reading a script or stdin is a program's own business (logged)
        with open(shell, "w") as f:
            f.write("#!/bin/sh\n"
                    "for a; do case $a in --) break;; -*c*) exec %s \"$@\";; "
                    "-*) ;; *) break;; esac; done\n"
                    "SHDIFF_NAME=${0##*/} exec \"$SHDIFF_BIN/.stub\" \"$@\"\n"
                    % shlex.quote(real_bash))
        # a stub's $0 is its name: a copy per name, not a link
        for name in set(LEAVES + ["dash", "sudo", "id", "touch", "awk"]):
            if name not in WRAPPERS:
                os.symlink(".stub", os.path.join(self.stubs, name))
        os.chmod(stub, 0o755)
        os.chmod(shell, 0o755)
        for name in SHELLS:
            p = os.path.join(self.stubs, name)
            if os.path.lexists(p):
                os.unlink(p)
            os.symlink(".shell", p)
        for name in WRAPPERS:
            real = shutil.which(name)
            if real:
                os.symlink(real, os.path.join(self.stubs, name))
        self.bash_env = os.path.join(root, "bash_env")
        with open(self.bash_env, "w") as f:
            # (set +x first: bash -x would trace these lines too)
            f.write("set +x 2>/dev/null\n"
                    "exec 99>>\"$SHDIFF_TRACE/$$\"; BASH_XTRACEFD=99; "
                    "PS4=$'\\x1e'; set -x\n")
        self.bash = real_bash
        self.unshare = shutil.which("unshare")
        self.timeout = shutil.which("timeout")
        self.n = itertools.count()
        self.peak = 0

    def both(self, line):
        """The line run as bash -c, then as tool-exec has bash run it, in
        the same directory."""
        k = next(self.n)
        return self.run(line, "c", k), self.run(line, "w", k)

    def used(self):
        """The bytes the tmpfs holds now."""
        st = os.statvfs(self.root)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def run(self, line, mode, k):
        d = os.path.join(self.root, "%d" % k)
        work, log, trace = d + "/w", d + "/log", d + "/trace"
        # (a process the last run left, still writing, may have made d)
        shutil.rmtree(d, ignore_errors=True)
        for x in (work, log, trace):
            os.makedirs(x, exist_ok=True)
        with open(work + "/f", "w") as f:
            f.write("a\n")
        os.mkdir(work + "/d")
        env = {"PATH": self.stubs, "HOME": work, "LC_ALL": "C",
               "SHDIFF_LOG": log, "SHDIFF_TRACE": trace,
               "SHDIFF_BIN": self.stubs, "BASH_ENV": self.bash_env}
        if mode == "c":
            argv = [self.bash, "-c", "--", line]
        else:
            # the line on descriptor 3, as tool-exec's go pipe gives it
            with open(d + "/line", "w") as f:
                f.write(line + ".")
            env["SHDIFF_LINE"] = d + "/line"
            argv = ["/bin/sh", "-c", 'exec "$0" "$@" 3<"$SHDIFF_LINE"',
                    self.bash, "-c", "--", WARM_BOOT]
        # the run's own pid namespace: its first process is timeout(1),
        # which waits for bash (--timeout, 10 s); when it ends, the kernel
        # kills every process of the run, and unshare returns once they
        # are gone (its child reaped: no zombie is left)
        argv = [self.unshare, "--pid", "--kill-child", self.timeout, "-s",
                "KILL", str(self.limit)] + argv
        try:
            subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=self.limit + 20)
        except subprocess.TimeoutExpired:
            pass
        progs = []
        for name in sorted(os.listdir(log)):
            with open(os.path.join(log, name), "rb") as f:
                progs += parse_log(f.read())
        names = []
        for name in os.listdir(trace):
            with open(os.path.join(trace, name), "rb") as f:
                names += trace_names(f.read().decode("utf-8", "replace"))
        self.peak = max(self.peak, self.used())
        shutil.rmtree(d, ignore_errors=True)
        # what a line wrote above its directory (cd ..; >o)
        for name in os.listdir(self.root):
            if not name.isdigit() and name not in ("bin", "bash_env"):
                p = os.path.join(self.root, name)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    try:
                        os.unlink(p)
                    except OSError:
                        pass
        return progs, names


class Cut(list):
    """The argv of a stub killed (at the timeout) while it logged it: its
    name, when that much was written, and no more is known."""


def parse_log(data):
    """The argv lists a stub logged: a count, then length:bytes each.  A
    record cut short ends the log: a Cut of what it holds."""
    rest = data
    out = []
    while rest:
        n, nl, rest = rest.partition(b"\n")
        argv = []
        try:
            if not nl:
                raise ValueError
            for _ in range(int(n)):
                ln, colon, rest = rest.partition(b":")
                if not colon or len(rest) < int(ln):
                    raise ValueError
                argv.append(rest[:int(ln)].decode("utf-8", "surrogateescape"))
                rest = rest[int(ln):]
        except ValueError:
            if argv:
                out.append(Cut(argv[:1]))
            break
        out.append(argv)
    return out


ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")


def trace_names(text):
    """The command names of a bash trace (PS4 a single \\x1e)."""
    out = []
    for rec in re.split(r"(?:^|\n)\x1e+", text):
        if not rec.strip():
            continue
        try:
            words = shlex.split(rec, posix=True)
        except ValueError:
            words = rec.split()
        while words and ASSIGN.match(words[0]):
            words.pop(0)
        if words:
            out.append(words[0])
    return out


def check(split_out, runs):
    """What bash ran that the splitter did not list: a list of strings."""
    cmds = split_out["commands"]
    names = {c[0] for c in cmds if c} | {c[0].rsplit("/", 1)[-1]
                                         for c in cmds if c}
    literal = split_out["literal"]
    missed = []
    (cprogs, cnames), (wprogs, _) = runs
    for n in cnames:
        if n not in names:
            missed.append("bash ran %r" % n)
    for argv in cprogs:
        base = argv[0]
        if base not in names:
            missed.append("program %r ran: %r" % (base, argv))
            continue
        if not literal or isinstance(argv, Cut):
            continue
        if not any(c and c[0].rsplit("/", 1)[-1] == base and
                   (c[1:] == argv[1:] or loose(c, argv)) for c in cmds):
            missed.append("program ran as %r, listed %r" %
                          (argv, [c for c in cmds if c and
                                  c[0].rsplit("/", 1)[-1] == base]))
    # the programs' names: find's walk of / is no twice the same
    if sorted({p[0] for p in cprogs}) != sorted({p[0] for p in wprogs}):
        missed.append("bash -c ran %r, tool-exec's way %r" %
                      (cprogs[:20], wprogs[:20]))
    return missed


def loose(listed, argv):
    """xargs adds arguments, find -exec and xargs -I replace {}."""
    if len(argv) < len(listed):
        return False
    for a, b in zip(listed, argv):
        if a != b and "{}" not in a:
            return False
    return True


def namespace(argv):
    """Runs argv again in a new user, mount, pid and net namespace; None
    when this machine has none (the caller skips)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    p = subprocess.run([unshare, "-Urmnpf", "--mount-proc", "true"],
                       stderr=subprocess.DEVNULL)
    if p.returncode:
        return None
    return subprocess.run([unshare, "-Urmnpf", "--mount-proc"] + argv).returncode


def seal(root):
    """In the namespace: every mount read-only, root a fresh tmpfs."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "shdiff", root],
                   check=True)
    with open("/proc/self/mounts") as f:
        points = [ln.split()[1] for ln in f]
    for m in points:
        if m != root and not m.startswith("/proc"):
            subprocess.run(["mount", "-o", "remount,bind,ro", m],
                           stderr=subprocess.DEVNULL)
    try:
        open("/etc/.shdiff-probe", "w").close()
    except OSError:
        return
    os.unlink("/etc/.shdiff-probe")
    raise SystemExit("shdiff: cannot make / read-only here")


def findings_of(prog, oracle, lines, workers, found, verbose):
    """Runs the lines the splitter accepts; found(line, split, missed) is
    called for each finding as it comes.  The number of lines run."""
    outs = split(prog, lines)
    todo = [(ln, o) for ln, o in zip(lines, outs) if not o["complex"]]

    def one(item):
        ln, o = item
        runs = oracle.both(ln)
        return ln, o, check(o, runs)

    with ThreadPoolExecutor(max_workers=workers) as ex:
        for k, (ln, o, m) in enumerate(ex.map(one, todo), 1):
            if m:
                found(ln, o, m)
            if verbose and k % 1000 == 0:
                print("shdiff: %d of %d accepted lines run" % (k, len(todo)),
                      file=sys.stderr, flush=True)
    return len(todo)


def leftovers():
    """The processes of this namespace but this one, zombies aside: what
    outlived its run."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if st.rpartition(")")[2].split()[0] != "Z":
            out.append("%s %s" % (pid, cmd.strip()))
    return out


def minimise(prog, oracle, line):
    """Drops characters while the line stays a finding."""
    def bad(x):
        o = split(prog, [x])[0]
        if o["complex"]:
            return False
        return bool(check(o, oracle.both(x)))

    changed = True
    while changed:
        changed = False
        for size in (8, 4, 2, 1):
            i = 0
            while i < len(line):
                cand = line[:i] + line[i + size:]
                if cand.strip() and bad(cand):
                    line, changed = cand, True
                else:
                    i += 1
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", required=True,
                    help="the splitter as a filter (build/tests/shsplit)")
    ap.add_argument("--lines", type=int, default=3000)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--minimise", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=10)
    ap.add_argument("--line", action="append")
    ap.add_argument("--inside", help=argparse.SUPPRESS)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1 << 32)
    if not a.inside:
        root = tempfile.mkdtemp(prefix="shdiff.")
        try:
            argv = [sys.executable, os.path.abspath(__file__), "--inside",
                    root, "--split", os.path.abspath(a.split), "--lines",
                    str(a.lines), "--seed", str(a.seed), "--workers",
                    str(a.workers), "--timeout", str(a.timeout)] \
                + (["--minimise"] if a.minimise else []) \
                + (["-v"] if a.v else []) \
                + [x for ln in a.line or [] for x in ("--line", ln)]
            rc = namespace(argv)
            if rc is None:
                print("shdiff: skip: no user namespace to run bash in")
                return 77
            return rc
        finally:
            shutil.rmtree(root, ignore_errors=True)
    seal(a.inside)
    oracle = Oracle(a.inside, a.timeout)
    t0 = time.time()
    lines = a.line or generate(a.seed, a.lines)
    found = []

    def report(ln, o, missed):
        found.append(ln)
        print("finding: %s" % json.dumps(ln))
        print("  splitter: %s" % json.dumps(o["commands"]))
        for m in missed[:5]:
            print("  %s" % m)
        sys.stdout.flush()

    ran = findings_of(a.split, oracle, lines, a.workers, report, a.v)
    took = time.time() - t0
    if a.minimise:
        for ln in found:
            print("minimal: %s -> %s" % (json.dumps(ln), json.dumps(
                minimise(a.split, oracle, ln))), flush=True)
    print("shdiff: seed %d: %d lines, %d accepted and run by bash (bash -c "
          "and tool-exec's way), %d findings, %.1f s, tmpfs at most %.1f MB" %
          (a.seed, len(lines), ran, len(found), took, oracle.peak / 1e6))
    left = leftovers()
    for x in left[:10]:
        print("shdiff: outlived its run: %s" % x)
    return 1 if found or left else 0


if __name__ == "__main__":
    sys.exit(main())
