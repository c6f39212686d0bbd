#!/usr/bin/env python3
"""agent-run beside other coding agents, against the same scripted server.

  bench/peers-run.py --bin DIR [--peer NAME=PROGRAM]... [--steps 20]
                     [--rounds 5] [--timeout 180] [--tmp DIR]

bench/peers.sh installs the peers and runs this; NAME is one of claude
(Claude Code), codex (Codex CLI), pi (pi-coding-agent).  The rows: the
one-process floor (bench.py --floor-client), agent-run in the ring, in
the ring with --sandbox off, and with --step, then each peer given.  The
workload is bench.py's: STEPS requests, each answered at once with one
shell call of `echo step-K` (the peer's own shell tool), the last with
plain text.

The runs are interleaved: each round runs every row once, and measures
the physical floor (bench.py's).  Each run gets a server of its own
(tests/model-server.py, which speaks Chat Completions, Anthropic Messages
and OpenAI Responses, and answers the peers' requests beside the session
without taking a step), and a fresh HOME, working directory and TMPDIR in
a directory of --tmp that is removed after it; a run that has not ended
after --timeout seconds is killed, and so is every process it left.

The per-step time is measured at the server as bench.py does it (from
the last byte of an answer to the last byte of the next request that
takes a step); memory is the peak of the PSS of all processes of the run,
sampled from /proc every 10 ms.  The table comes out ratios first: the
per-step median over every step of every round against the one-process
floor and against the physical floor.
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # a run leaves nothing in the tree
import bench  # noqa: E402  (bench/bench.py: the workload, floors, memory)

PROMPT = "run the steps"

# name: (row label, how the peer calls its shell tool: name, argument)
PEERS = {
    "pi": ("pi-coding-agent", "bash", "command"),
    "claude": ("Claude Code", "Bash", "command"),
    "codex": ("Codex CLI", "exec_command", "cmd"),
}


def peer_script(steps, tool, arg):
    """bench.py's script, each call made to the peer's shell tool."""
    out = []
    for line in bench.script(steps).splitlines():
        e = json.loads(line)
        for c in e.get("tool_calls", []):
            c["name"] = tool
            c["arguments"] = {arg: c["arguments"]["command"]}
        out.append(json.dumps(e))
    return "\n".join(out) + "\n"


def base_env(root, path):
    """The environment of a run: nothing of the user's but PATH."""
    home = os.path.join(root, "home")
    return {"PATH": path, "HOME": home, "TMPDIR": os.path.join(root, "tmp"),
            "LANG": "C.UTF-8", "TERM": "dumb", "USER": "bench",
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state")}


def command(row, root, port, steps, bindir, path):
    """The argument vector and environment of a row's run."""
    env = base_env(root, path)
    home, work = env["HOME"], os.path.join(root, "w")
    url = "http://127.0.0.1:%d" % port
    kind, program = row["kind"], row.get("program")
    if kind == "floor":
        return ([sys.executable, os.path.join(HERE, "bench.py"), "--floor-client",
                 url + "/v1", str(steps + 5), work], env)
    if kind == "agent-run":
        env.update(PATH=bindir + ":" + path, AGENT_BASE_URL=url + "/v1",
                   AGENT_MODEL="bench", AGENT_MAX_OUTPUT="30000")
        return ([os.path.join(bindir, "agent-run"), "-q", "-y", "--max-steps",
                 str(steps + 5), "-C", work] + row["flags"] + [PROMPT], env)
    if kind == "claude":
        env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-bench",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
                   DISABLE_ERROR_REPORTING="1")
        # --dangerously-skip-permissions is refused to root: the one tool
        # allowed instead
        return ([program, "-p", PROMPT, "--allowedTools", "Bash"], env)
    if kind == "codex":
        codex_home = os.path.join(home, ".codex")
        os.makedirs(codex_home)
        with open(os.path.join(codex_home, "config.toml"), "w") as f:
            f.write('model = "bench"\nmodel_provider = "bench"\n\n'
                    '[analytics]\nenabled = false\n\n'
                    '[model_providers.bench]\nname = "bench"\n'
                    'base_url = "%s/v1"\nwire_api = "responses"\n'
                    'env_key = "BENCH_API_KEY"\n' % url)
        env.update(CODEX_HOME=codex_home, BENCH_API_KEY="sk-bench")
        return ([program, "exec", "--skip-git-repo-check",
                 "--dangerously-bypass-approvals-and-sandbox", PROMPT], env)
    if kind == "pi":
        agent = os.path.join(home, ".pi", "agent")
        os.makedirs(agent)
        with open(os.path.join(agent, "models.json"), "w") as f:
            json.dump({"providers": {"bench": {
                "baseUrl": url + "/v1", "api": "openai-completions",
                "apiKey": "sk-bench",
                "compat": {"supportsDeveloperRole": False,
                           "supportsReasoningEffort": False},
                "models": [{"id": "bench"}]}}}, f)
        env.update(PI_OFFLINE="1", PI_TELEMETRY="0", PI_SKIP_VERSION_CHECK="1")
        return ([program, "-p", "--provider", "bench", "--model", "bench",
                 PROMPT], env)
    raise ValueError(kind)


def processes():
    """{pid: parent pid} of every process."""
    out = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    out[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def descendants(top, skip=()):
    """The processes under top (ourselves, a subreaper: the run's
    processes that lost their parent come back to us), skip and theirs
    left out."""
    kids = {}
    for pid, ppid in processes().items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [p for p in kids.get(top, []) if p not in skip]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def kill_all(skip):
    """SIGKILL to every process of ours but skip, reaped, until none is
    left."""
    for _ in range(100):
        left = descendants(os.getpid(), skip)
        if not left:
            return
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for p in left:
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.01)


def one_run(row, steps, bindir, a):
    root = tempfile.mkdtemp(prefix="run.", dir=a.tmp)
    srv = None
    try:
        for d in ("home", "w", "tmp"):
            os.mkdir(os.path.join(root, d))
        with open(os.path.join(root, "script"), "w") as f:
            if row["kind"] in PEERS:
                f.write(peer_script(steps, *PEERS[row["kind"]][1:]))
            else:
                f.write(bench.script(steps))
        port = os.path.join(root, "port")
        srv = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "model-server.py"),
                                "--script", os.path.join(root, "script"), "--port-file", port,
                                "--log", os.path.join(root, "req.jsonl"),
                                "--sent-log", os.path.join(root, "sent.jsonl"),
                                "--side-requests", "--idle", str(a.timeout + 60)])
        while not os.path.exists(port):
            time.sleep(0.01)
        args, env = command(row, root, int(open(port).read()), steps, bindir,
                            os.environ.get("PATH", "/usr/bin:/bin"))
        t0 = time.time()
        p = subprocess.Popen(args, env=env, cwd=os.path.join(root, "w"),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(root, "stderr"), "w"),
                             start_new_session=True)
        peak = 0
        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.is_set():
                total = 0
                for pid in descendants(os.getpid(), (srv.pid,)):
                    try:
                        total += bench.memory_of(pid)[1]
                    except OSError:
                        pass
                peak = max(peak, total)
                time.sleep(0.01)
        th = threading.Thread(target=sample)
        th.start()
        try:
            rc = p.wait(timeout=a.timeout)
            why = "" if rc == 0 else "exited %d" % rc
        except subprocess.TimeoutExpired:
            why = "timed out after %d s" % a.timeout
        wall = time.time() - t0
        done.set()
        th.join()
        kill_all((srv.pid,))
        p.wait()
        srv.terminate()
        srv.wait()
        srv = None
        try:
            over = bench.step_intervals(root)[0]
        except OSError:  # no request, or none answered
            over = []
        if not why and len(over) != steps - 1:
            why = "took %d steps of %d" % (len(over) + 1, steps)
        if why:
            with open(os.path.join(root, "stderr"), errors="replace") as f:
                tail = f.read().strip().splitlines()[-3:]
            why += "".join("\n    " + t[:160] for t in tail)
        return {"over": over, "wall": wall, "pss": peak / 1024, "failed": why}
    finally:
        if srv:
            srv.kill()
            srv.wait()
        kill_all(())
        shutil.rmtree(root, ignore_errors=True)


def version(row, bindir, a):
    """The row's program's version, asked in a fresh HOME."""
    if row["kind"] == "floor":
        return "Python %d.%d.%d" % sys.version_info[:3]
    root = tempfile.mkdtemp(prefix="run.", dir=a.tmp)
    try:
        os.mkdir(os.path.join(root, "home"))
        env = base_env(root, os.environ.get("PATH", "/usr/bin:/bin"))
        prog = row.get("program") or os.path.join(bindir, "agent-run")
        r = subprocess.run([prog, "--version"], env=env, cwd=root,
                           timeout=min(60, a.timeout),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        words = r.stdout.decode("utf-8", "replace").split()
        return " ".join(w for w in words if any(c.isdigit() for c in w))[:20] or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"
    finally:
        kill_all(())
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"),
                    help="the directory of agent-run and its programs")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=PROGRAM",
                    help="a peer to run: claude, codex or pi, and its program")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=180,
                    help="seconds a run may take before it is killed")
    ap.add_argument("--tmp", default=None,
                    help="where the runs' directories go (removed after)")
    a = ap.parse_args()
    if a.steps < 2 or a.rounds < 1:
        ap.error("--steps must be 2 or more, --rounds 1 or more")
    bindir = os.path.abspath(a.bin)
    rows = [{"label": "floor (one Python process)", "kind": "floor"},
            {"label": "agent-run ring", "kind": "agent-run", "flags": []},
            {"label": "agent-run ring --sandbox off", "kind": "agent-run",
             "flags": ["--sandbox", "off"]},
            {"label": "agent-run --step", "kind": "agent-run", "flags": ["--step"]}]
    for spec in a.peer:
        name, _, program = spec.partition("=")
        if name not in PEERS or not program:
            ap.error("--peer %s: NAME=PROGRAM, NAME one of %s" % (spec, ", ".join(PEERS)))
        rows.append({"label": PEERS[name][0], "kind": name,
                     "program": os.path.abspath(program)})
    # a subreaper: what a run leaves behind comes back to us, to be killed
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.tmp:
        os.makedirs(a.tmp, exist_ok=True)
    a.tmp = tempfile.mkdtemp(prefix="ah-peers.", dir=a.tmp)
    try:
        return measure(a, rows, bindir)
    finally:
        kill_all(())
        shutil.rmtree(a.tmp, ignore_errors=True)


def measure(a, rows, bindir):
    """The rounds, and the table."""
    for r in rows:
        r["version"] = version(r, bindir, a)
        r["runs"] = []
    phys = []
    for k in range(a.rounds):
        phys.append(bench.physical_floor())
        for r in rows:
            res = one_run(r, a.steps, bindir, a)
            r["runs"].append(res)
            if res["failed"]:
                print("peers: round %d, %s: %s" % (k + 1, r["label"], res["failed"]),
                      file=sys.stderr)
    spawn = statistics.median(p[0] for p in phys)
    rtt = statistics.median(p[1] for p in phys)
    floor_phys = spawn + rtt
    floor = None
    lines = []
    for r in rows:
        ok = [x for x in r["runs"] if not x["failed"]]
        over = [v for x in ok for v in x["over"]]
        if not over:
            r["per"] = None
            continue
        r["per"] = statistics.median(over)
        r["p10"], r["p90"] = bench.pct(over, 0.1), bench.pct(over, 0.9)
        r["pss"] = statistics.median(x["pss"] for x in ok)
        r["wall"] = statistics.median(x["wall"] for x in ok)
        r["ok"] = len(ok)
        if r["kind"] == "floor":
            floor = r["per"]
    print("%d steps, %d rounds; physical floor %.2f ms (bash -c true %.2f ms + "
          "loopback round trip %.3f ms), medians of the rounds" % (
              a.steps, a.rounds, floor_phys, spawn, rtt))
    print("%-29s %7s %7s | %-24s | %7s %6s %4s | %s" % (
        "row", "x floor", "x phys", "per step ms (p10-p90)", "PSS MB", "wall s",
        "runs", "version"))
    for r in rows:
        if r["per"] is None:
            lines.append("%-29s %7s %7s | %-24s | %7s %6s %4s | %s" % (
                r["label"], "-", "-", "failed", "-", "-", "0/%d" % a.rounds,
                r["version"]))
            continue
        lines.append("%-29s %7.2f %7.2f | %7.2f (%6.2f-%7.2f) | %7.1f %6.2f %4s | %s" % (
            r["label"], r["per"] / floor if floor else float("nan"),
            r["per"] / floor_phys, r["per"], r["p10"], r["p90"], r["pss"], r["wall"],
            "%d/%d" % (r["ok"], a.rounds), r["version"]))
    print("\n".join(lines))
    return 0 if all(r["per"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
