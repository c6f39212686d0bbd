#!/usr/bin/env python3
"""hook-perm --format as the PreToolUse hook of the real agents.

  tests/peers-hooks.py --bin DIR [--peer NAME=PROGRAM]... [--timeout 180]
                       [--tmp DIR]

make check-peers runs this through bench/peers.sh --hooks-check, which
installs the peers (Claude Code, Codex CLI) with npm into a cache outside
the tree.  Each peer runs against tests/model-server.py (scripted answers
on 127.0.0.1, set up as bench/peers-run.py does) with
`hook-perm --format NAME` as its PreToolUse hook and a policy that
allows `touch` but for the built-in deny rules.  The model asks the
peer's shell tool for `touch made-denied && sudo true` (the rule
privilege denies it) and then `touch made-allowed`: the first file must
be absent, the second present, and the hook must have answered both.
Prints TAP; a peer not given is not run (bench/peers.sh says why).
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.dont_write_bytecode = True
spec = importlib.util.spec_from_file_location(
    "peers_run", os.path.join(SRC, "bench", "peers-run.py"))
peers_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers_run)

DENIED = "touch made-denied && sudo true"
ALLOWED = "touch made-allowed"


def script(tool, arg):
    """Two shell calls, then the answer."""
    calls = [{"tool_calls": [{"name": tool, "arguments": {arg: DENIED}}]},
             {"tool_calls": [{"name": tool, "arguments": {arg: ALLOWED}}]},
             {"content": "done"}]
    return "".join(json.dumps(c) + "\n" for c in calls)


def policy(bindir):
    """The built-in policy, and touch allowed."""
    out = subprocess.run([os.path.join(bindir, "hook-perm"), "--print-policy"],
                         check=True, stdout=subprocess.PIPE).stdout
    p = json.loads(out)
    p["rules"].insert(0, {"name": "touch", "decision": "allow", "always": True,
                          "reason": "touch only makes files",
                          "if": '.tool == "bash" and all_commands(prefix(["touch"]))'})
    return p


def hook_settings(command, event="PreToolUse"):
    return {"hooks": {event: [{"matcher": "*", "hooks": [
        {"type": "command", "command": command, "timeout": 30}]}]}}


def one(name, program, bindir, a):
    root = tempfile.mkdtemp(prefix="hooks.", dir=a.tmp)
    srv = None
    try:
        for d in ("home", "w", "tmp"):
            os.mkdir(os.path.join(root, d))
        with open(os.path.join(root, "script"), "w") as f:
            f.write(script(*peers_run.PEERS[name][1:]))
        with open(os.path.join(root, "policy.json"), "w") as f:
            json.dump(policy(bindir), f)
        # the hook, with a log of its answers
        hook = os.path.join(root, "hook")
        with open(hook, "w") as f:
            f.write('#!/bin/sh\nin=$(cat)\nout=$(printf "%%s" "$in" | '
                    '"%s/hook-perm" --format %s --policy "%s/policy.json")\n'
                    'st=$?\nprintf "%%s\\n" "$in" >>"%s/hook-in.jsonl"\n'
                    'printf "%%s\\n" "$out" >>"%s/hook-out.jsonl"\n'
                    'printf "%%s" "$out"\nexit $st\n'
                    % (bindir, name, root, root, root))
        os.chmod(hook, 0o755)
        port = os.path.join(root, "port")
        srv = subprocess.Popen([sys.executable, os.path.join(HERE, "model-server.py"),
                                "--script", os.path.join(root, "script"),
                                "--port-file", port, "--log", os.path.join(root, "req.jsonl"),
                                "--side-requests", "--idle", str(a.timeout + 60)])
        for _ in range(1000):
            if os.path.exists(port) and os.path.getsize(port):
                break
            time.sleep(0.01)
        args, env = peers_run.command({"kind": name, "program": program}, root,
                                      int(open(port).read()), 2, bindir,
                                      os.environ.get("PATH", "/usr/bin:/bin"))
        home = env["HOME"]
        if name == "claude":
            os.makedirs(os.path.join(home, ".claude"), exist_ok=True)
            with open(os.path.join(home, ".claude", "settings.json"), "w") as f:
                json.dump(hook_settings(hook), f)
        elif name == "codex":
            with open(os.path.join(home, ".codex", "hooks.json"), "w") as f:
                json.dump(hook_settings(hook), f)
            with open(os.path.join(home, ".codex", "config.toml"), "a") as f:
                f.write("\n[features]\ncodex_hooks = true\n")
            # Codex runs a hook of the user's only once reviewed in its
            # interface (a hash kept in config.toml); this one is ours
            args.insert(2, "--dangerously-bypass-hook-trust")
        try:
            p = subprocess.run(args, env=env, cwd=os.path.join(root, "w"),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=a.timeout,
                               start_new_session=True)
            rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", (e.stdout or b"").decode("utf-8", "replace")
        w = os.path.join(root, "w")
        answers = []
        if os.path.exists(os.path.join(root, "hook-out.jsonl")):
            answers = open(os.path.join(root, "hook-out.jsonl")).read().splitlines()
        results = [
            ("%s: the denied command did not run" % name,
             not os.path.exists(os.path.join(w, "made-denied"))),
            ("%s: the allowed command ran" % name,
             os.path.exists(os.path.join(w, "made-allowed"))),
            ("%s: the hook answered both calls, deny first" % name,
             len(answers) >= 2 and "deny" in answers[0] and "privilege" in answers[0]),
        ]
        if os.path.exists(os.path.join(root, "hook-in.jsonl")):
            first = json.loads(open(os.path.join(root, "hook-in.jsonl")).readline())
            print("# %s: its first hook input: %s" % (name, json.dumps(
                {k: first.get(k) for k in ("hook_event_name", "tool_name", "tool_input")})))
        why = "exit %s; hook answers: %s; peer said: %s" % (
            rc, answers, " | ".join(out.strip().splitlines()[-4:])[:600])
        return results, why
    finally:
        if srv:
            srv.kill()
            srv.wait()
        peers_run.kill_all(())
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=PROGRAM")
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--tmp", default=None)
    a = ap.parse_args()
    bindir = os.path.abspath(a.bin)
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # a subreaper
    if a.tmp:
        os.makedirs(a.tmp, exist_ok=True)
    a.tmp = tempfile.mkdtemp(prefix="ah-peers-hooks.", dir=a.tmp)
    n = failed = 0
    try:
        for spec_ in a.peer:
            name, _, program = spec_.partition("=")
            if name not in ("claude", "codex") or not program:
                ap.error("--peer %s: NAME=PROGRAM, NAME claude or codex" % spec_)
            results, why = one(name, os.path.abspath(program), bindir, a)
            for label, ok in results:
                n += 1
                print("%s %d - %s" % ("ok" if ok else "not ok", n, label))
                if not ok:
                    failed += 1
                    print("# " + why)
        if not a.peer:
            print("1..0 # skip no peer could be installed")
            return 0
        print("1..%d" % n)
        return 1 if failed else 0
    finally:
        peers_run.kill_all(())
        shutil.rmtree(a.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
