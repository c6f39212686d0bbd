#!/usr/bin/env python3
"""A small MCP server over stdio for the tests of mcp-bridge, with hostile
modes.  One JSON-RPC message a line on stdin and stdout.

    mcp-server.py [--page N] [--mode MODE] [--version V] [--pidfile F]

--page N    tools/list gives N tools a page (nextCursor), default all
--version V answers initialize with protocol version V
--pidfile F adds its pid to F (a test checks it is gone afterwards)
--mode      hostile behaviour, on a tools/call:
            garbage   a line that is not JSON
            huge      a 100 MB line
            silent    never answers
            wrongid   answers with another id
            request   sends a sampling request first, and answers with
                      what came back to it
            exit      exits without answering
            noinit    never answers initialize
            daemon    starts a daemon (fork, setsid, fork) that ignores
                      SIGHUP, SIGTERM and SIGINT and sleeps, then answers
            forkbomb  forks children that sleep until a fork fails (at
                      most 200), then answers how many it made
            hog       allocates memory, 1 MB at a time, touched, until it
                      fails (at most 2 GB), then answers how much
"""
import json
import os
import sys
import time

args = sys.argv[1:]
opt = {}
while args:
    k = args.pop(0)
    opt[k] = args.pop(0)
mode = opt.get("--mode", "")
page = int(opt.get("--page", "0"))
if "--pidfile" in opt:
    with open(opt["--pidfile"], "a") as f:
        f.write("%d\n" % os.getpid())

out = sys.stdout


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


def tool(name, desc, props=None, required=None):
    schema = {"type": "object", "properties": props or {}}
    if required:
        schema["required"] = required
    return {"name": name, "description": desc, "inputSchema": schema}


TOOLS = [
    tool("echo", "Says the text back", {"text": {"type": "string"}}, ["text"]),
    tool("add", "Adds a and b", {"a": {"type": "number"}, "b": {"type": "number"}}),
    tool("fail", "Fails as a tool (isError)"),
    tool("slow", "Sleeps, with progress", {"seconds": {"type": "number"}}),
    tool("image", "An image and a resource"),
    tool("structured", "structuredContent only"),
    tool("big", "n bytes of text", {"n": {"type": "integer"}}),
    tool("env", "The value of a variable", {"name": {"type": "string"}}),
    tool("grow", "Adds a tool, and says the list changed"),
    tool("write", "Writes text to a file", {"path": {"type": "string"}, "text": {"type": "string"}}),
    tool("connect", "Connects to 127.0.0.1:port", {"port": {"type": "integer"}}),
    tool("bad name!", "A name no model API takes"),
]
extra = tool("grown", "The tool grow added")


def call(mid, name, a, token):
    if mode == "garbage":
        out.write("this is not json\n")
        out.flush()
        return
    if mode == "huge":
        chunk = "x" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write("\n")
        out.flush()
        return
    if mode == "silent":
        return
    if mode == "daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                import signal
                for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_IGN)
                os.closerange(0, 3)
                # an hour: longer than any wait of a test on a loaded
                # machine, so that only a kill ends it (t0856 kills
                # what is left when done)
                time.sleep(3600)
            os._exit(0)
        os.wait()
        return done(mid, [{"type": "text", "text": "daemon started"}])
    if mode == "forkbomb":
        n = 0
        while n < 200:
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                os.closerange(0, 3)
                # an hour: longer than any wait of a test on a loaded
                # machine, so that only a kill ends it (t0856 kills
                # what is left when done)
                time.sleep(3600)
                os._exit(0)
            n += 1
        return done(mid, [{"type": "text", "text": "forked %d" % n}])
    if mode == "hog":
        held = []
        try:
            while len(held) < 2048:
                held.append(b"x" * (1 << 20))
        except MemoryError:
            pass
        n = len(held)
        del held
        return done(mid, [{"type": "text", "text": "allocated %d MB" % n}])
    if mode == "wrongid":
        send({"jsonrpc": "2.0", "id": mid + 1000,
              "result": {"content": [{"type": "text", "text": "wrong"}]}})
        return
    if mode == "exit":
        sys.stderr.write("mcp-server.py: exiting mid-call\n")
        sys.stderr.flush()
        os._exit(3)
    if mode == "request":
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
              "params": {"messages": [], "maxTokens": 10}})
        answer = json.loads(sys.stdin.readline())
        text = json.dumps(answer.get("error") or answer.get("result"))
        return done(mid, [{"type": "text", "text": "client said: " + text}])
    if name == "echo":
        return done(mid, [{"type": "text", "text": a.get("text", "")}])
    if name == "add":
        s = a.get("a", 0) + a.get("b", 0)
        return done(mid, [{"type": "text", "text": str(s)}])
    if name == "fail":
        return done(mid, [{"type": "text", "text": "it broke"}], error=True)
    if name == "slow":
        n = float(a.get("seconds", 1))
        steps = 4
        for i in range(steps):
            time.sleep(n / steps)
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1,
                                 "total": steps, "message": "step %d" % (i + 1)}})
        return done(mid, [{"type": "text", "text": "slept %g" % n}])
    if name == "image":
        return done(mid, [{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                          {"type": "resource", "resource": {"uri": "file:///r.txt",
                                                            "mimeType": "text/plain",
                                                            "text": "resource text"}},
                          {"type": "resource_link", "uri": "file:///x", "name": "x"}])
    if name == "structured":
        return send({"jsonrpc": "2.0", "id": mid,
                     "result": {"content": [], "structuredContent": {"n": 42}}})
    if name == "big":
        return done(mid, [{"type": "text", "text": "b" * int(a.get("n", 10))}])
    if name == "env":
        return done(mid, [{"type": "text",
                           "text": "%s=%s" % (a["name"], os.environ.get(a["name"], "(unset)"))}])
    if name == "grow":
        if extra not in TOOLS:
            TOOLS.append(extra)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return done(mid, [{"type": "text", "text": "grown"}])
    if name == "write":
        try:
            with open(a["path"], "w") as f:
                f.write(a.get("text", ""))
            return done(mid, [{"type": "text", "text": "wrote " + a["path"]}])
        except OSError as e:
            return done(mid, [{"type": "text", "text": "cannot write: " + str(e)}], error=True)
    if name == "connect":
        import socket
        try:
            socket.create_connection(("127.0.0.1", int(a["port"])), timeout=2).close()
            return done(mid, [{"type": "text", "text": "connected"}])
        except OSError as e:
            return done(mid, [{"type": "text", "text": "cannot connect: " + str(e)}], error=True)
    if name == "grown":
        return done(mid, [{"type": "text", "text": "I am new"}])
    send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no tool " + name}})


def done(mid, content, error=False):
    send({"jsonrpc": "2.0", "id": mid, "result": {"content": content, "isError": error}})


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method = msg.get("method")
    mid = msg.get("id")
    if method == "initialize":
        if mode == "noinit":
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": opt.get("--version", msg["params"]["protocolVersion"]),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "mcp-server.py", "version": "1"}}})
    elif method == "tools/list":
        start = int((msg.get("params") or {}).get("cursor", "0"))
        n = page or len(TOOLS)
        res = {"tools": TOOLS[start:start + n]}
        if start + n < len(TOOLS):
            res["nextCursor"] = str(start + n)
        send({"jsonrpc": "2.0", "id": mid, "result": res})
    elif method == "tools/call":
        p = msg.get("params", {})
        token = (p.get("_meta") or {}).get("progressToken")
        call(mid, p.get("name"), p.get("arguments") or {}, token)
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    elif method == "notifications/cancelled":
        sys.stderr.write("mcp-server.py: cancelled %s\n" % msg["params"].get("requestId"))
        sys.stderr.flush()
        if "--cancelfile" in opt:
            with open(opt["--cancelfile"], "a") as f:
                f.write("%s\n" % msg["params"].get("requestId"))
    elif mid is not None and method:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})
