#!/usr/bin/env python3
"""A scripted OpenAI Chat Completions server for tests, the demo and the
benchmark.  It binds 127.0.0.1 on a port the kernel picks, and answers each
POST .../chat/completions with the next entry of a script (JSON Lines):

  {"content": "text"}                         a text answer
  {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}
                                              tool calls ("id" optional;
                                              arguments an object or a string)
  {"content": "...", "finish_reason": "length"}
  {"status": 429, "headers": {"retry-after": "1"},
   "error": {"message": "...", "type": "...", "code": "..."}}
  {"raw": "body text", "status": 200}         a body sent as it is
  {"raw": "...", "latin1": true}              its characters sent as bytes
  {"delay": 0.5, ...}                         wait first (seconds)
  {"usage": {...}, ...}                       this usage object instead of
                                              the made-up one (a hostile
                                              server's, for instance)
  {"hang": true}                              accept, never answer
  {"repeat": true, ...}                       this entry answers every
                                              request from now on

Streaming requests ("stream": true) get the answer as server-sent events:
  "chunk": N          content and arguments in pieces of N characters (3)
  "reuse_index": true all tool calls sent with index 0, told apart by id
  "interleave": true  the calls' argument pieces interleaved
  "cut": K            the stream stops after K events, no [DONE]
  "sse_error": {...}  an error event instead of the answer
  "drip": S           each event sent on its own, S seconds apart
  "reset": K          after K events the connection is reset (TCP RST)

Every request is logged to --log as one JSON line: n, connection number,
method, path, headers, body (parsed), the time its first line came
("start") and the time its whole body was in ("time").  With
--sent-log, each answer adds a line {"n", "sent"} there: the time it left.  The port is
written to --port-file once the server listens.  It exits on SIGTERM, or
after --idle seconds without a request.
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

lock = threading.Lock()
state = {"n": 0, "conn": 0, "script": [], "pos": 0, "repeat": None,
         "last": time.time()}


def next_entry():
    with lock:
        if state["repeat"] is not None:
            return state["repeat"]
        if state["pos"] >= len(state["script"]):
            return {"status": 500, "error": {
                "message": "the script has no more answers",
                "type": "server_error"}}
        e = state["script"][state["pos"]]
        state["pos"] += 1
        if e.get("repeat"):
            state["repeat"] = e
        return e


def response(status, body, ctype="application/json", extra=None,
             keep=True):
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized",
              403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
              409: "Conflict", 422: "Unprocessable Entity",
              429: "Too Many Requests", 500: "Internal Server Error",
              502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "X")
    if isinstance(body, str):
        body = body.encode()
    head = ["HTTP/1.1 %d %s" % (status, reason),
            "Content-Type: " + ctype,
            "Content-Length: %d" % len(body),
            "Connection: " + ("keep-alive" if keep else "close")]
    for k, v in (extra or {}).items():
        head.append("%s: %s" % (k, v))
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def calls_of(entry):
    out = []
    for i, c in enumerate(entry.get("tool_calls", [])):
        args = c.get("arguments", {})
        if not isinstance(args, str):
            args = json.dumps(args)
        out.append({"id": c.get("id", "call_%d_%d" % (state["n"], i + 1)),
                    "type": "function",
                    "function": {"name": c["name"], "arguments": args}})
    return out


def completion(entry, n, model):
    calls = calls_of(entry)
    msg = {"role": "assistant", "content": entry.get("content")}
    if calls:
        msg["tool_calls"] = calls
    finish = entry.get("finish_reason", "tool_calls" if calls else "stop")
    return {"id": "chatcmpl-%d" % n, "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": finish}],
            "usage": usage_of(entry, n)}


def usage_of(entry, n):
    if "usage" in entry:
        return entry["usage"]
    return {"prompt_tokens": 10 * n, "completion_tokens": 5,
            "total_tokens": 10 * n + 5}


def pieces(s, k):
    return [s[i:i + k] for i in range(0, len(s), k)] or [""]


def stream_events(entry, n, model):
    k = int(entry.get("chunk", 3))
    base = {"id": "chatcmpl-%d" % n, "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return d

    if "sse_error" in entry:
        return [chunk({"role": "assistant", "content": ""}),
                {"error": entry["sse_error"]}]
    events = [chunk({"role": "assistant", "content": ""})]
    if entry.get("content"):
        for p in pieces(entry["content"], k):
            events.append(chunk({"content": p}))
    calls = calls_of(entry)
    per_call = []
    for i, c in enumerate(calls):
        idx = 0 if entry.get("reuse_index") else i
        first = {"index": idx, "id": c["id"], "type": "function",
                 "function": {"name": c["function"]["name"], "arguments": ""}}
        rest = [{"index": idx, "function": {"arguments": p}}
                for p in pieces(c["function"]["arguments"], k)]
        per_call.append([first] + rest)
    if entry.get("interleave") and not entry.get("reuse_index"):
        while any(per_call):
            for q in per_call:
                if q:
                    events.append(chunk({"tool_calls": [q.pop(0)]}))
    else:
        for q in per_call:
            for d in q:
                events.append(chunk({"tool_calls": [d]}))
    finish = entry.get("finish_reason", "tool_calls" if calls else "stop")
    events.append(chunk({}, finish))
    usage = dict(base)
    usage["choices"] = []
    usage["usage"] = usage_of(entry, n)
    events.append(usage)
    return events


def log_sent(args, n):
    """When the answer to request n left: the harness's time starts here."""
    if args.sent_log:
        with lock, open(args.sent_log, "a") as log:
            log.write(json.dumps({"n": n, "sent": time.time()}) + "\n")


def serve(conn, cid, args):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = conn.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            return
        start = time.time()  # the request line: the harness began sending
        try:
            method, path, _ = line.decode().split(" ", 2)
        except ValueError:
            return
        headers = {}
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        body = f.read(int(headers.get("content-length", "0")))
        arrived = time.time()
        with lock:
            state["n"] += 1
            n = state["n"]
            state["last"] = arrived
        try:
            req = json.loads(body) if body else None
        except ValueError:
            req = {"unparsed": body.decode("utf-8", "replace")}
        if args.log:
            with lock, open(args.log, "a") as log:
                log.write(json.dumps({"n": n, "conn": cid, "method": method,
                                      "path": path, "headers": headers,
                                      "body": req, "time": arrived,
                                      "start": start}) + "\n")
        if method != "POST" or not path.endswith("/chat/completions"):
            conn.sendall(response(404, json.dumps({"error": {
                "message": "no such route: %s %s" % (method, path),
                "type": "invalid_request_error"}})))
            continue
        entry = next_entry()
        if entry.get("delay"):
            time.sleep(float(entry["delay"]))
        if entry.get("hang"):
            time.sleep(3600)
            return
        extra = {"x-request-id": "req_%d" % n}
        extra.update(entry.get("headers", {}))
        status = int(entry.get("status", 200))
        model = (req or {}).get("model", "scripted") if isinstance(req, dict) \
            else "scripted"
        if "raw" in entry:
            raw = entry["raw"]
            if entry.get("latin1"):  # each character one byte: any bytes
                raw = raw.encode("latin-1")
            conn.sendall(response(status, raw, extra=extra))
            continue
        if status != 200:
            conn.sendall(response(status, json.dumps(
                {"error": entry.get("error", {"message": "scripted error"})}),
                extra=extra))
            continue
        if isinstance(req, dict) and req.get("stream"):
            events = stream_events(entry, n, model)
            cut = entry.get("cut")
            if cut is not None:
                events = events[:int(cut)]
            # chunked, kept alive as real servers do; a cut stream is
            # closed mid-way, without the last chunk
            body = b""
            for e in events:
                piece = ("data: %s\n\n" % json.dumps(e)).encode()
                body += b"%x\r\n%s\r\n" % (len(piece), piece)
            if cut is None:
                piece = b"data: [DONE]\n\n"
                body += b"%x\r\n%s\r\n0\r\n\r\n" % (len(piece), piece)
            head = ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Cache-Control: no-cache\r\n"
                    "Transfer-Encoding: chunked\r\n" +
                    "".join("%s: %s\r\n" % kv for kv in extra.items()) +
                    "\r\n")
            if entry.get("drip") is not None or entry.get("reset") is not None:
                conn.sendall(head.encode())
                for k, e in enumerate(events):
                    if entry.get("reset") is not None and k == int(entry["reset"]):
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        conn.close()
                        return
                    piece = ("data: %s\n\n" % json.dumps(e)).encode()
                    conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    time.sleep(float(entry.get("drip") or 0))
                piece = b"data: [DONE]\n\n"
                conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(piece), piece))
                log_sent(args, n)
                continue
            conn.sendall(head.encode() + body)
            log_sent(args, n)
            if cut is not None:
                conn.shutdown(socket.SHUT_RDWR)
                return
            continue
        conn.sendall(response(200, json.dumps(completion(entry, n, model)),
                              extra=extra))
        log_sent(args, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--sent-log")
    ap.add_argument("--idle", type=float, default=300)
    args = ap.parse_args()
    with open(args.script) as s:
        state["script"] = [json.loads(l) for l in s
                           if l.strip() and not l.startswith("#")]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.5)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as p:
        p.write("%d\n" % srv.getsockname()[1])
    os.rename(tmp, args.port_file)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    while True:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if time.time() - state["last"] > args.idle:
                return
            continue
        with lock:
            state["conn"] += 1
            cid = state["conn"]
        threading.Thread(target=serve, args=(conn, cid, args),
                         daemon=True).start()


if __name__ == "__main__":
    main()
