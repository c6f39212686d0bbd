#!/usr/bin/env python3
"""The loop's own cost: agent-run against the scripted model server.

For sessions of N steps, each step one bash call of `echo step-K`, in the
ring and in --step mode, several runs each, in a workspace that is a small
repository (--workspace repo, the default: 88 files committed in a .git
of their own, and build output git ignores; the steps change none of
them, but agent-run's checkpoints, on by default, snapshot it before
each) or empty (--workspace empty), it prints per-step overhead
measured at the server (from the last byte of answer K to the arrival of
request K+1: median and p10-p90 over all steps of all runs), the time to
the first request, wall and CPU time, and peak memory (the largest process,
and all processes together, sampled from /proc).

The runs are interleaved (run 1 of every case, then run 2, ...), and each
round also measures the floors the figures are divided by:
  - the one-process floor ("floor" rows): one Python process against the
    same server, one kept-alive connection and one `bash -c` a step;
  - the physical floor: one `bash -c true` start plus one loopback round
    trip between two processes, each a median of many.

  bench/bench.py [--steps 20,100,400] [--runs 5] [--modes ring,step]
                 [--bin DIR | --bin NAME=DIR,NAME=DIR]  (builds side by side)
                 [--workspace repo|empty]
                 [--big MB]   (a session whose transcript grows to MB)
  bench/bench.py --context 300 [--windows 32000,200000] [--output 8192]
  bench/bench.py --checkpoints 2000,20000,200000 [--steps 20] [--runs 5]
  bench/bench.py --snap-stage 2000,20000 [--steps 20] [--runs 3]
  bench/bench.py --snap-disk 300
  bench/bench.py --mcp 300 [--runs 5]

--checkpoints runs the ring in a workspace of N files (in N/10
directories) with agent-run's checkpoints on and off (--no-checkpoints),
interleaved, each step one bash call that changes one file: the per-step
time of each, and the difference, which is what a snapshot costs a step
(agent-snap(1)).  The first step's snapshot hashes every file; it is
counted apart ("first"), and so is the second's, a whole walk too (the
stage's watches are made for it).  --snap-stage: the checkpoint stage alone
(agent-snap checkpoint fed one message a step, one file appended to
before each), from the changes and with --full, interleaved: the time a
snapshot takes and its CPU (git's included).  --snap-disk: one session of N steps, each
rewriting a 1 MB text file (one line changes), and the disk the
snapshots take, before and after agent-snap gc (which packs them).

--context runs one long session per window: each step a bash call with
--output bytes of output, against a server that refuses a request over
the window (4 bytes a token) with OpenAI's 400 and answers summary
requests.  It prints, for the whole session, the bytes sent, the largest
request, the requests refused, the compactions, the share of the bytes
sent that repeat the start of the request before (what a provider's
prompt cache bills at about a tenth), and the bytes that do not (billed
whole; at least the steps' new output, which no cache can hold).

--mcp N: the cost of an MCP tool call over stdio (mcp-bridge(1)): a
trivial MCP server (it answers at once) is called N times by a client of
its own (JSON-RPC on its stdin and stdout: the server's own time), and N
times through the harness: one long-lived tool-exec, given an assistant
message with one mcp__t__echo call at a time, hands it to the session's
mcp-bridge --serve, which calls the server; the time from the message
written to tool-exec to its tool result read.  The difference of the
medians is what the harness adds to a call (the goal: at most 2 ms).

Figures are medians of several runs on a noisy machine: compare ratios,
not absolute numbers.  Nothing here is a test.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def script(steps, payload=0, latency=0):
    """The scripted answers; latency (seconds) is how long the server
    waits before each, as a model would think (the intervals measured
    start when the answer leaves, so they do not hold it)."""
    wait = {"delay": latency} if latency else {}
    lines = []
    for k in range(1, steps):
        cmd = "echo step-%d" % k
        if payload:
            cmd = "head -c %d /dev/zero | tr '\\0' x; echo" % payload
        lines.append(json.dumps(dict(wait, tool_calls=[
            {"name": "bash", "arguments": {"command": cmd}}])))
    lines.append(json.dumps(dict(wait, content="done after %d steps" % steps)))
    return "\n".join(lines) + "\n"


def rss_of_session(sid):
    """RSS and PSS in kB of each process in session sid."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) != sid:  # field 6 (session), after pid/comm
                continue
            out[pid] = memory_of(pid)
        except (OSError, IndexError, ValueError):
            pass
    return out


def memory_of(pid):
    """RSS and PSS in kB of process pid (OSError when it is gone)."""
    rss = pss = 0
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    # PSS: pages shared by several processes counted once overall
    with open("/proc/%s/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def snap_script(steps, rewrite=False):
    """Steps that each change one file: a line of a small one, or the
    first line of a 1 MB text file (rewritten whole)."""
    lines = []
    for k in range(1, steps):
        if rewrite:
            cmd = "{ echo step-%d; seq 1 140000; } >big.txt" % k
        else:
            cmd = "echo step-%d >>d%d/f0" % (k, k % 10)
        lines.append(json.dumps({"tool_calls": [
            {"name": "bash", "arguments": {"command": cmd}}]}))
    lines.append(json.dumps({"content": "done after %d steps" % steps}))
    return "\n".join(lines) + "\n"


def fill(w, files):
    """files small files in files/10 directories (at least 10)."""
    ndirs = max(10, files // 10)
    per = max(1, files // ndirs)
    for d in range(ndirs):
        dd = os.path.join(w, "d%d" % d)
        os.mkdir(dd)
        for i in range(per):
            with open(os.path.join(dd, "f%d" % i), "w") as f:
                f.write("file %d of directory %d\n" % (i, d))


# The workspace of the ring and --step sessions (--workspace): a small
# repository by default, as a session meets one; "empty" for none.
REPO_DIRS = [("src", ".c", 30, 2400), ("src/util", ".c", 10, 1200),
             ("include", ".h", 12, 600), ("tests", ".sh", 20, 900),
             ("docs", ".md", 8, 3000), ("tools", ".py", 5, 1500)]


def fill_repo(w):
    """A small repository in w: 85 text files in 6 directories (about
    160 kB), a README, a Makefile and a .gitignore at the top, build
    output git ignores (build/, 30 files), and a git repository of its
    own (.git) with the files committed.  Deterministic, so that two
    builds meet the same one.  Returns (files, directories, bytes) of
    what a snapshot takes (the files not ignored)."""
    files = dirs = size = 0

    def put(path, n, mode=0o644):
        nonlocal files, size
        line = "%s: line of text, some code, some words %s\n" % (path, "x" * 20)
        body = (line * (n // len(line) + 1))[:n]
        with open(os.path.join(w, path), "w") as f:
            f.write(body)
        os.chmod(os.path.join(w, path), mode)
        files += 1
        size += n

    for d, ext, n, each in REPO_DIRS:
        os.makedirs(os.path.join(w, d))
        dirs += 1
        for i in range(n):
            put("%s/f%02d%s" % (d, i, ext), each + 37 * i,
                0o755 if ext in (".sh", ".py") else 0o644)
    put("README.md", 4000)
    put("Makefile", 1500)
    with open(os.path.join(w, ".gitignore"), "w") as f:
        f.write("build/\n*.o\n*.log\n")
    files += 1
    size += os.path.getsize(os.path.join(w, ".gitignore"))
    os.makedirs(os.path.join(w, "build"))
    for i in range(30):
        with open(os.path.join(w, "build", "f%02d.o" % i), "wb") as f:
            f.write(b"\0" * 4096)
    git = ["git", "-C", w, "-c", "user.name=bench", "-c", "user.email=bench@localhost",
           "-c", "init.defaultBranch=main"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "the bench's repository"], check=True)
    return files, dirs, size


def workspace_words(kind):
    """What the workspace of the sessions holds, said in the output."""
    if kind == "empty":
        return "workspace: empty (--workspace empty): no file, its snapshots of the empty tree"
    d = tempfile.mkdtemp(prefix="ah-bench.")
    try:
        files, dirs, size = fill_repo(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return ("workspace: a small repository (--workspace repo): %d files in %d directories "
            "and the top, %.0f kB, committed in a .git of its own; build/ of 30 files "
            "ignored" % (files, dirs, size / 1024))


def du(path):
    total = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return total


def one_run(steps, mode, bindir, payload=0, max_output=30000, latency=0,
            files=0, checkpoints=None, rewrite=False, workspace="empty"):
    work = tempfile.mkdtemp(prefix="ah-bench.")
    try:
        with open(os.path.join(work, "script"), "w") as f:
            if checkpoints is None:
                f.write(script(steps, payload, latency))
            else:
                f.write(snap_script(steps, rewrite))
        port = os.path.join(work, "port")
        srv = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "model-server.py"),
                                "--script", os.path.join(work, "script"), "--port-file", port,
                                "--log", os.path.join(work, "req.jsonl"),
                                "--sent-log", os.path.join(work, "sent.jsonl"), "--idle", "600"])
        while not os.path.exists(port):
            time.sleep(0.01)
        os.mkdir(os.path.join(work, "w"))
        if files:
            fill(os.path.join(work, "w"), files)
        elif workspace == "repo":
            fill_repo(os.path.join(work, "w"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
                   AGENT_BASE_URL="http://127.0.0.1:%s/v1" % open(port).read().strip(),
                   AGENT_MODEL="bench", AGENT_MAX_OUTPUT=str(max_output))
        if checkpoints is not None:
            env["AGENT_CHECKPOINTS"] = "1" if checkpoints else "0"
        args = [os.path.join(bindir, "agent-run"), "-q", "-y", "--max-steps", str(steps + 5),
                "-C", os.path.join(work, "w")]
        if payload:
            # the whole transcript is sent: no window (the default, 32768
            # tokens, would end the session long before it grows to size)
            args += ["--context-window", "off"]
        if mode == "step":
            args.append("--step")
        args.append("run the steps")
        if mode == "floor":
            args = [sys.executable, os.path.abspath(__file__), "--floor-client",
                    env["AGENT_BASE_URL"], str(steps + 5), os.path.join(work, "w")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
        peak_one = peak_all = peak_pss = 0
        done = threading.Event()

        def sample():
            nonlocal peak_one, peak_all, peak_pss
            while not done.is_set():
                r = rss_of_session(p.pid)
                if r:
                    peak_one = max(peak_one, max(v[0] for v in r.values()))
                    peak_all = max(peak_all, sum(v[0] for v in r.values()))
                    peak_pss = max(peak_pss, sum(v[1] for v in r.values()))
                time.sleep(0.005)
        th = threading.Thread(target=sample)
        th.start()
        rc = p.wait()
        wall = time.time() - t0
        done.set()
        th.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        srv.terminate()
        srv.wait()
        if rc != 0:
            raise SystemExit("bench: agent-run exited %d (%s, %d steps)" % (rc, mode, steps))
        over, first_byte, arrived = step_intervals(work)
        tpath = os.path.join(work, "w", ".agent", "transcript.jsonl")
        tsize = os.path.getsize(tpath) if os.path.exists(tpath) else 0
        snap = os.path.join(work, "w", ".agent", "snap")
        disk = gc_disk = 0
        if rewrite and os.path.isdir(snap):
            disk = du(snap)
            subprocess.run([os.path.join(bindir, "agent-snap"), "-C",
                            os.path.join(work, "w"), "gc"], env=env,
                           stdout=subprocess.DEVNULL, check=True)
            gc_disk = du(snap)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"over": over, "first_byte": first_byte, "first": (arrived[1] - t0) * 1000,
                "step1": over[0] if over else float("nan"),
                "wall": wall, "cpu": cpu, "peak_one": peak_one / 1024,
                "peak_all": peak_all / 1024, "peak_pss": peak_pss / 1024, "transcript": tsize,
                "disk": disk, "gc_disk": gc_disk}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def step_intervals(work):
    """From the server's logs in work (req.jsonl, sent.jsonl): the
    harness's time at each step in ms, from the last byte of the answer
    to request K to the last byte, and to the first byte, of the next
    request that took a step; and when each request arrived.  Requests
    answered aside (the "side" ones of --side-requests) take no step:
    their time is the harness's."""
    arrived, started = {}, {}
    with open(os.path.join(work, "req.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            arrived[r["n"]] = r["time"]
            started[r["n"]] = r["start"]
    sent = {}
    with open(os.path.join(work, "sent.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if not r.get("side"):
                sent[r["n"]] = r["sent"]
    ns = sorted(sent)
    nxt = list(zip(ns, ns[1:]))  # each answer, and the next step's request
    over = [(arrived[m] - sent[k]) * 1000 for k, m in nxt if m in arrived]
    # to the first byte of the next request: without its transfer
    first_byte = [(started[m] - sent[k]) * 1000 for k, m in nxt if m in started]
    return over, first_byte, arrived


def floor_client(url, max_steps, workdir):
    """The one-process floor: a minimal harness in one Python process, one
    kept-alive connection, one `bash -c` a step, nothing else."""
    import http.client
    import urllib.parse
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    tools = [{"type": "function", "function": {
        "name": "bash", "description": "run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"]}}}]
    msgs = [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "run the steps"}]
    os.chdir(workdir)
    for _ in range(max_steps):
        body = json.dumps({"model": os.environ.get("AGENT_MODEL", "bench"),
                           "messages": msgs, "tools": tools})
        conn.request("POST", u.path.rstrip("/") + "/chat/completions", body,
                     {"Content-Type": "application/json"})
        msg = json.loads(conn.getresponse().read())["choices"][0]["message"]
        msgs.append(msg)
        if not msg.get("tool_calls"):
            print(msg.get("content"))
            return 0
        for c in msg["tool_calls"]:
            cmd = json.loads(c["function"]["arguments"])["command"]
            r = subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            msgs.append({"role": "tool", "tool_call_id": c["id"],
                         "content": r.stdout.decode("utf-8", "replace")})
    return 1


def physical_floor(n=100):
    """Medians in ms of one `bash -c true` start (spawn to reaped) and of one
    loopback TCP round trip between two processes (1 byte each way)."""
    spawn = []
    for _ in range(n):
        t = time.perf_counter()
        pid = os.posix_spawn("/bin/bash", ["bash", "-c", "true"], os.environ)
        os.waitpid(pid, 0)
        spawn.append((time.perf_counter() - t) * 1000)
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    ls.settimeout(30)  # the child never outlives a parent that failed
    pid = os.fork()
    if pid == 0:
        try:
            c, _ = ls.accept()
            c.settimeout(30)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                b = c.recv(1)
                if not b:
                    break
                c.sendall(b)
        finally:
            os._exit(0)
    addr = ls.getsockname()
    ls.close()
    s = socket.create_connection(addr)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtt = []
    for _ in range(n):
        t = time.perf_counter()
        s.sendall(b"x")
        s.recv(1)
        rtt.append((time.perf_counter() - t) * 1000)
    s.close()
    os.waitpid(pid, 0)
    return statistics.median(spawn), statistics.median(rtt)


def context_run(steps, window, output, bindir):
    """One long session under a window: the figures of the bytes sent."""
    work = tempfile.mkdtemp(prefix="ah-bench.")
    try:
        with open(os.path.join(work, "script"), "w") as f:
            f.write(script(steps, output))
        port = os.path.join(work, "port")
        sizes = os.path.join(work, "sizes.jsonl")
        srv = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "model-server.py"),
                                "--script", os.path.join(work, "script"), "--port-file", port,
                                "--sizes", sizes, "--summaries", "--real-usage",
                                "--window-bytes", str(window * 4), "--idle", "600"])
        while not os.path.exists(port):
            time.sleep(0.01)
        os.mkdir(os.path.join(work, "w"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
                   AGENT_BASE_URL="http://127.0.0.1:%s/v1" % open(port).read().strip(),
                   AGENT_MODEL="bench", AGENT_MAX_OUTPUT=str(output + 1024),
                   AGENT_CONTEXT_WINDOW=str(window))
        args = [os.path.join(bindir, "agent-run"), "-q", "-y", "--max-steps",
                str(steps + 50), "-C", os.path.join(work, "w"), "run the steps"]
        t0 = time.time()
        rc = subprocess.call(args, env=env, stdout=subprocess.DEVNULL)
        wall = time.time() - t0
        srv.terminate()
        srv.wait()
        reqs = [json.loads(l) for l in open(sizes)]
        sent = sum(r["bytes"] for r in reqs)
        return {"rc": rc, "wall": wall, "requests": len(reqs), "sent": sent,
                "largest": max(r["bytes"] for r in reqs),
                "refused": sum(r["refused"] for r in reqs),
                "compactions": sum(r["summary"] for r in reqs),
                "cached": sum(r["prefix"] for r in reqs) / max(1, sent)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def context_main(a):
    print("%8s %6s | %5s %8s %10s %10s %8s %11s %8s %12s | %s" % (
        "window", "steps", "exit", "requests", "sent MB", "largest KB", "refused",
        "compactions", "cached", "uncached MB", "wall s"))
    for w in a.windows.split(","):
        r = context_run(a.context, int(w), a.output, a.bin)
        print("%8s %6d | %5d %8d %10.1f %10.1f %8d %11d %7.1f%% %12.2f | %.1f" % (
            w, a.context, r["rc"], r["requests"], r["sent"] / 1e6, r["largest"] / 1e3,
            r["refused"], r["compactions"], 100 * r["cached"],
            r["sent"] * (1 - r["cached"]) / 1e6, r["wall"]))
        sys.stdout.flush()


def checkpoints_main(a):
    """The ring with checkpoints on and off, in workspaces of each size."""
    steps = int(a.steps.split(",")[0])
    bindir = os.path.abspath(a.bin.split("=", 1)[-1])
    sizes = [int(n) for n in a.checkpoints.split(",")]
    cases = [(n, on) for n in sizes for on in (False, True)]
    results = {c: [] for c in cases}
    for _ in range(a.runs):
        for c in cases:
            results[c].append(one_run(steps, "ring", bindir, files=c[0], checkpoints=c[1]))
    print("ring, %d steps, one bash call a step that appends to a file; medians of %d runs"
          % (steps, a.runs))
    print("%8s %12s | %-22s %9s | %9s" % ("files", "checkpoints", "per step ms (p10-p90)",
                                         "+ms/step", "first ms"))
    for n in sizes:
        per = {}
        for on in (False, True):
            rs = results[(n, on)]
            # the first two steps apart: the first snapshot hashes every
            # file, and the second is a whole walk too (the stage's
            # watches are made for it)
            over = [x for r in rs for x in (r["over"][2:] if len(r["over"]) > 2
                                            else r["over"][-1:])]
            per[on] = statistics.median(over)
            print("%8d %12s | %6.2f (%6.2f-%6.2f) %9s | %9.1f" % (
                n, "on" if on else "off", per[on], pct(over, 0.1), pct(over, 0.9),
                "%+.2f" % (per[True] - per[False]) if on else "",
                statistics.median(r["step1"] for r in rs)))
        sys.stdout.flush()


def stage_run(bindir, files, steps, full):
    """The checkpoint stage alone (agent-snap checkpoint) in a workspace of
    files files: a message with one bash call a step, one file appended to
    before each; the time from the message written to its line read, and
    the stage's CPU (git's included) a step, the first two steps apart
    (the second snapshot is a whole walk too: the watches are made for
    it)."""
    work = tempfile.mkdtemp(prefix="ah-bench.")
    try:
        w = os.path.join(work, "w")
        os.mkdir(w)
        fill(w, files)
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"])
        args = [os.path.join(bindir, "agent-snap"), "checkpoint"] + (["--full"] if full else [])
        p = subprocess.Popen(args, cwd=w, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, bufsize=0)
        times, cpu0 = [], None
        for k in range(steps):
            with open(os.path.join(w, "d%d" % (k % 10), "f0"), "a") as f:
                f.write("step %d\n" % k)
            msg = {"role": "assistant", "tool_calls": [{
                "id": "c%d" % k, "function": {"name": "bash", "arguments": "{}"},
                "permission": {"decision": "allow"}}]}
            t = time.perf_counter()
            p.stdin.write((json.dumps(msg) + "\n").encode())
            if "checkpoint" not in json.loads(p.stdout.readline()):
                raise SystemExit("bench: no checkpoint at step %d" % k)
            times.append((time.perf_counter() - t) * 1000)
            # the CPU of the stage so far, and of the gits it ran (not
            # its exit, which lets go of the watches)
            with open("/proc/%d/stat" % p.pid) as f:
                st = f.read().rsplit(")", 1)[1].split()
            cpu = sum(int(x) for x in st[11:15]) / os.sysconf("SC_CLK_TCK")
            if k == (1 if steps > 2 else 0):
                cpu0 = cpu
        p.stdin.close()
        p.wait()
        # the second snapshot is a whole walk too (the watches are
        # made for it): apart, with the first
        return {"first": times[0], "over": times[2:] if steps > 2 else times[1:],
                "cpu": (cpu - cpu0) * 1000 / max(1, steps - (2 if steps > 2 else 1))}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stage_main(a):
    """The snapshot's own cost a step: the stage alone, from the changes
    (the default) and by whole walks (--full), interleaved."""
    steps = int(a.steps.split(",")[0])
    bindir = os.path.abspath(a.bin.split("=", 1)[-1])
    sizes = [int(n) for n in a.snap_stage.split(",")]
    cases = [(n, full) for n in sizes for full in (False, True)]
    results = {c: [] for c in cases}
    for _ in range(a.runs):
        for c in cases:
            results[c].append(stage_run(bindir, c[0], steps, c[1]))
    print("agent-snap checkpoint alone, %d steps, one file appended to before each; "
          "medians of %d runs" % (steps, a.runs))
    print("%8s %8s | %-22s %12s | %9s" % ("files", "scan", "per step ms (p10-p90)",
                                         "CPU ms/step", "first ms"))
    for n in sizes:
        for full in (False, True):
            rs = results[(n, full)]
            over = [x for r in rs for x in r["over"]]
            print("%8d %8s | %6.2f (%6.2f-%6.2f) %12.2f | %9.1f" % (
                n, "full" if full else "changes", statistics.median(over),
                pct(over, 0.1), pct(over, 0.9),
                statistics.median(r["cpu"] for r in rs),
                statistics.median(r["first"] for r in rs)))
        sys.stdout.flush()


def snap_disk_main(a):
    bindir = os.path.abspath(a.bin.split("=", 1)[-1])
    r = one_run(a.snap_disk, "ring", bindir, checkpoints=True, rewrite=True)
    print("%d steps, each rewriting a 1 MB text file (one line changed): "
          "%.1f MB in .agent/snap, %.1f MB after agent-snap gc; per step %.2f ms (median)" % (
              a.snap_disk, r["disk"] / 1e6, r["gc_disk"] / 1e6, statistics.median(r["over"])))


MCP_SERVER = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    i = m.get("id")
    if m.get("method") == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"],
             "capabilities": {"tools": {}},
             "serverInfo": {"name": "trivial", "version": "1"}}
    elif m.get("method") == "tools/list":
        r = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif m.get("method") == "tools/call":
        r = {"content": [{"type": "text",
                          "text": m["params"]["arguments"].get("text", "")}]}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) + "\n")
    sys.stdout.flush()
"""


def mcp_direct(server, n):
    """The server's own time: a call written to its stdin, its answer read."""
    p = subprocess.Popen([sys.executable, server], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    def rpc(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                   "params": params}) + "\n").encode())
        return p.stdout.readline()
    rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    times = []
    for k in range(n):
        t = time.perf_counter()
        rpc(k + 2, "tools/call", {"name": "echo", "arguments": {"text": "step-%d" % k}})
        times.append((time.perf_counter() - t) * 1000)
    p.stdin.close()
    p.wait()
    return times


def mcp_harness(bindir, cfg, work, n):
    """Through tool-exec and mcp-bridge --serve: message in, result out."""
    sock = os.path.join(work, "mcp.sock")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
               AGENT_MCP_SOCKET=sock, AGENT_WORKDIR=work)
    env.pop("AGENT_MCP_CONFIG", None)
    # it prints its pid and the token a call must carry (tool-exec's)
    pid, token = subprocess.check_output(
        [os.path.join(bindir, "mcp-bridge"), "--no-user-config", "--mcp-config", cfg,
         "--serve", sock, "--watch", str(os.getpid())], env=env, cwd=work).split()
    pid = int(pid)
    env["AGENT_MCP_TOKEN"] = token.decode()
    te = subprocess.Popen([os.path.join(bindir, "tool-exec"), "--yes"], env=env,
                          cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          bufsize=0)
    times = []
    try:
        for k in range(n + 5):
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c%d" % k, "type": "function", "function": {
                    "name": "mcp__t__echo",
                    "arguments": json.dumps({"text": "step-%d" % k})}}]}
            t = time.perf_counter()
            te.stdin.write((json.dumps(msg) + "\n").encode())
            line = te.stdout.readline()
            dt = (time.perf_counter() - t) * 1000
            if json.loads(line)["content"] != "step-%d" % k:
                sys.exit("bench: the MCP call gave %r" % line)
            if k >= 5:  # the first calls wait for the server to start
                times.append(dt)
    finally:
        te.stdin.close()
        te.wait()
        os.kill(pid, 15)
    return times


def mcp_main(a):
    bindir = os.path.abspath(a.bin.split("=", 1)[-1])
    work = tempfile.mkdtemp(prefix="bench-mcp.")
    try:
        server = os.path.join(work, "server.py")
        with open(server, "w") as f:
            f.write(MCP_SERVER)
        cfg = os.path.join(work, "mcp.json")
        with open(cfg, "w") as f:
            # python3 by name: inside the sandbox's view it is the
            # system's (an interpreter under the home is not in that view)
            json.dump({"mcpServers": {"t": {"command": "python3",
                                            "args": [server]}}}, f)
        direct, through = [], []
        for _ in range(a.runs):
            direct += mcp_direct(server, a.mcp)
            through += mcp_harness(bindir, cfg, work, a.mcp)
        d, h = statistics.median(direct), statistics.median(through)
        print("MCP tool call over stdio, %d calls x %d runs (sandbox %s):" % (
            a.mcp, a.runs, os.environ.get("AGENT_SANDBOX") or "workspace-write"))
        print("  the server's own time   %6.3f ms (p10-p90 %.3f-%.3f)" % (
            d, pct(direct, 0.1), pct(direct, 0.9)))
        print("  through the harness     %6.3f ms (p10-p90 %.3f-%.3f)" % (
            h, pct(through, 0.1), pct(through, 0.9)))
        print("  added by the harness    %6.3f ms (goal: at most 2 ms)" % (h - d))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--floor-client":
        return floor_client(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="20,100,400")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="ring,step")
    ap.add_argument("--big", type=float, default=0, help="also a session growing to MB")
    ap.add_argument("--bin", default=os.path.join(SRC, "build", "bin"),
                    help="DIR, or NAME=DIR,NAME=DIR to compare builds in the same run")
    ap.add_argument("--context", type=int, default=0,
                    help="instead: a long session of N steps under each window")
    ap.add_argument("--windows", default="32000,200000")
    ap.add_argument("--output", type=int, default=8192)
    ap.add_argument("--workspace", choices=("repo", "empty"), default="repo",
                    help="the sessions' workspace: a small repository (repo), or none")
    ap.add_argument("--latency", type=float, default=0,
                    help="ms the server waits before each answer (0)")
    ap.add_argument("--checkpoints", default="",
                    help="instead: workspaces of these many files, checkpoints on and off")
    ap.add_argument("--snap-stage", default="",
                    help="the checkpoint stage alone in workspaces of N files (comma-separated)")
    ap.add_argument("--snap-disk", type=int, default=0,
                    help="instead: the disk of N steps rewriting a 1 MB file")
    ap.add_argument("--mcp", type=int, default=0,
                    help="instead: N MCP tool calls, direct and through the harness")
    a = ap.parse_args()
    if a.mcp:
        return mcp_main(a)
    if a.checkpoints:
        return checkpoints_main(a)
    if a.snap_stage:
        return stage_main(a)
    if a.snap_disk:
        return snap_disk_main(a)
    if a.context:
        a.bin = a.bin.split("=", 1)[-1]
        return context_main(a)
    bins = []
    for b in a.bin.split(","):
        name, _, d = b.rpartition("=")
        bins.append((name, os.path.abspath(d)))
    # (label, bin, mode, steps, payload); the floor once per session length
    cases = [("", None, "floor", int(n), 0) for n in a.steps.split(",")]
    cases += [(name, d, m, int(n), 0) for m in a.modes.split(",")
              for n in a.steps.split(",") for name, d in bins]
    if a.big:
        # each step adds ~100 KB of output: enough steps to reach the size
        steps = max(2, int(a.big * 1024 / 100))
        cases += [(name, d, "ring", steps, 100 * 1024) for name, d in bins]
    # interleaved: round r runs every case once, and measures the
    # physical floor
    results = {c: [] for c in cases}
    phys = []
    for _ in range(a.runs):
        phys.append(physical_floor())
        for c in cases:
            name, d, mode, steps, payload = c
            results[c].append(one_run(steps, mode, d or bins[0][1], payload,
                                      max_output=max(30000, payload + 1024),
                                      latency=a.latency / 1000,
                                      workspace=a.workspace))
    spawn = statistics.median(p[0] for p in phys)
    rtt = statistics.median(p[1] for p in phys)
    floor_phys = spawn + rtt
    print("physical floor: %.2f ms (bash -c true %.2f ms + loopback round trip %.3f ms), "
          "medians of %d rounds" % (floor_phys, spawn, rtt, a.runs))
    print(workspace_words(a.workspace))
    if a.latency:
        print("the server waits %g ms before each answer (not counted)" % a.latency)
    print("%-5s %5s %4s | %-22s %6s %6s %8s | %8s %8s | %7s %7s | %8s %8s %8s" % (
        "mode", "steps", "runs", "per step ms (p10-p90)", "xfloor", "xphys", "1st byte",
        "first ms", "step1 ms", "wall s", "cpu s", "rss1 MB", "rssAll MB", "pssAll MB"))
    floor = {}
    for c in cases:
        name, d, mode, steps, payload = c
        rs = results[c]
        over = [x for r in rs for x in r["over"]]
        fb = [x for r in rs for x in r["first_byte"]]
        if payload:
            # the overhead near the end: the last tenth of the steps
            tenth = lambda xs: xs[-max(1, len(xs) // 10):]
            over = [x for r in rs for x in tenth(r["over"])]
            fb = [x for r in rs for x in tenth(r["first_byte"])]
        med = lambda k: statistics.median(r[k] for r in rs)
        per = statistics.median(over)
        if mode == "floor":
            floor[steps] = per
        label = (mode if not payload else "ring*")
        print("%-5s %5d %4d | %6.2f (%6.2f-%6.2f) %6.2f %6.2f   %8.2f | %8.1f %8.2f | %7.2f %7.2f | %8.1f %8.1f %8.1f%s%s" % (
            label, steps, a.runs, per, pct(over, 0.1), pct(over, 0.9),
            per / floor[steps] if steps in floor else float("nan"), per / floor_phys,
            statistics.median(fb), med("first"), med("step1"), med("wall"), med("cpu"),
            med("peak_one"),
            med("peak_all"), med("peak_pss"), "   " + name if name else "",
            "   (transcript %.1f MB; overhead of the last tenth of the steps)" % (
                max(r["transcript"] for r in rs) / 1e6) if payload else ""))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
