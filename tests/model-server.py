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
  {"raw": "...", "ctype": "text/event-stream"} under that Content-Type
  {"wire": "HTTP/1.1 200 OK\r\n..."}        the whole answer, status line
                                              and headers too, sent as it
                                              is (each character a byte)
  {"wire": "...", "close": true}              and the connection closed
                                              after it, whatever it said
  {"wire": "...", "reset": true}              and the connection reset
  {"delay": 0.5, ...}                         wait first (seconds)
  {"usage": {...}, ...}                       this usage object instead of
                                              the made-up one (a hostile
                                              server's, for instance)
  {"hang": true}                              accept, never answer
  {"repeat": true, ...}                       this entry answers every
                                              request from now on
  {"match": "text", ...}                      only for a request whose
                                              first user message (the
                                              session's task) holds text;
                                              with any "match" in the
                                              script, each request takes
                                              the first unused entry that
                                              fits (parallel sessions)

Requests to .../messages get the same entries as Anthropic Messages
answers (text and tool_use blocks, "thinking": "text" with "signature"
for a thinking block first, errors as {"type": "error", "error": ...}),
streamed as its events when asked; "usage" in an entry replaces the usage
sent.

Requests to .../responses get them as OpenAI Responses answers (message
and function_call output items; "input_tokens" and "output_tokens" in the
usage), streamed as its events (response.created, output_item.added and
.done, output_text.delta, response.completed) when asked.  There
"thinking" is a reasoning item first (its summary; "signature" its
encrypted_content), "web_search": "query" a web_search_call item, "items"
more output items as they are, "finish_reason" length or content_filter
an incomplete answer (response.incomplete), "failed": {...} a failed one
(response.failed with that error), "response_status" another status.

Other agents' requests beside the session's, with --side-requests (for
bench/peers-run.py): a request without tools (a title to make, a quota to
check) is answered "OK" without consuming an entry; .../count_tokens
gets a count, GET and HEAD requests (GET .../models, probes) an empty
answer; a query string (?beta=true) is ignored.  The --sent-log line of
such an answer has "side": true.

Streaming requests ("stream": true) get the answer as server-sent events:
  "chunk": N          content and arguments in pieces of N characters (3)
  "reuse_index": true all tool calls sent with index 0, told apart by id
  "interleave": true  the calls' argument pieces interleaved
  "cut": K            the stream stops after K events, no [DONE]
  "sse_error": {...}  an error event instead of the answer
  "drip": S           each event sent on its own, S seconds apart
  "reset": K          after K events the connection is reset (TCP RST)
  "keepalive": S      no answer: an SSE comment ": keep-alive" every S
                      seconds, until the client goes
  "pings": S          (Messages API) no answer: message_start, then a ping
                      event every S seconds, until the client goes
  "drip_bytes": S     the answer (streamed or not) one byte every S
                      seconds, after the headers

A context window can be enforced and summaries answered, for the tests
and the benchmark of compaction:
  --window-bytes N  a request body over N bytes is refused with OpenAI's
                    400 context_length_exceeded, and consumes no entry
  --real-usage      usage.prompt_tokens is the request's bytes / 4, not 10n
  --summary-delay S  wait S seconds before answering a summary
  --summary-text T  answer summaries with T instead
  --summaries       a request whose last message asks for a summary
                    (agent-compact's) is answered "Summary of the work so
                    far." without consuming an entry
  --bodies DIR      each request's body, as it came, in DIR/N (N its
                    number)
  --sizes FILE      each request adds {"n", "bytes", "prefix", "refused",
                    "summary"} there: its size, and how many of its first
                    bytes are those of the request before (a provider's
                    prompt cache would hit them)

A rate limit can be enforced, as the providers do (for the test of the
budget the sessions of a machine share):
  --bucket CAP/RATE  a token bucket of CAP requests, refilled at RATE a
                    second; a request of the session (not a side one,
                    not a summary) takes one, or is refused with 429 and
                    retry-after.  Every answer carries the bucket's
                    headers: OpenAI's x-ratelimit-{limit,remaining,reset}-
                    {requests,tokens} for .../chat/completions and
                    .../responses, Anthropic's anthropic-ratelimit-
                    {requests,tokens}-{limit,remaining,reset} (RFC 3339
                    times) for .../messages
  --bucket-log FILE each request the bucket counts adds {"n", "time",
                    "refused"} there

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
state = {"n": 0, "conn": 0, "script": [], "pos": 0, "repeat": None, "used": set(),
         "last": time.time(), "prev": b"", "tokens": {}}


def common_prefix(a, b):
    """The length of the common prefix of two byte strings."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest k with a[:k] == b[:k], by halves
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def asks_summary(req):
    try:
        last = req["messages"][-1]
        text = last["content"] if isinstance(last["content"], str) else \
            json.dumps(last["content"])
        return last["role"] == "user" and \
            "write a summary of this conversation" in text
    except (KeyError, IndexError, TypeError):
        return False


def first_user(req):
    """The text of the request's first user message: the task of the
    session (a child session's prompt), by which "match" picks."""
    for m in (req or {}).get("messages", []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def next_entry(req=None):
    with lock:
        if state["repeat"] is not None:
            return state["repeat"]
        if any("match" in e for e in state["script"]):
            # the first unused entry whose "match" is in the session's
            # task (an entry without one matches any)
            task = first_user(req)
            for i, e in enumerate(state["script"]):
                if i in state["used"]:
                    continue
                if "match" not in e or e["match"] in task:
                    state["used"].add(i)
                    return e
            return {"status": 500, "error": {
                "message": "the script has no answer for the task %r"
                           % task[:80], "type": "server_error"}}
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


def prompt_tokens(n):
    """10 a request, or with --real-usage the body's bytes / 4."""
    return state["tokens"].get(n, 10 * n)


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
    return {"prompt_tokens": prompt_tokens(n), "completion_tokens": 5,
            "total_tokens": prompt_tokens(n) + 5}


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


def messages_answer(entry, n, model):
    """The entry as an Anthropic Messages answer."""
    blocks = []
    if entry.get("thinking") is not None:
        blocks.append({"type": "thinking", "thinking": entry["thinking"],
                       "signature": entry.get("signature", "sig-%d" % n)})
    if entry.get("content"):
        blocks.append({"type": "text", "text": entry["content"]})
    for c in calls_of(entry):
        blocks.append({"type": "tool_use", "id": c["id"].replace("call", "toolu"),
                       "name": c["function"]["name"],
                       "input": json.loads(c["function"]["arguments"])})
    stop = entry.get("stop_reason",
                     "tool_use" if entry.get("tool_calls") else "end_turn")
    usage = entry.get("usage", {"input_tokens": 10 * n, "output_tokens": 5,
                                "cache_creation_input_tokens": 0,
                                "cache_read_input_tokens": 0})
    return {"id": "msg_%d" % n, "type": "message", "role": "assistant",
            "model": model, "content": blocks, "stop_reason": stop,
            "stop_sequence": None, "usage": usage}


def messages_events(entry, n, model):
    """The same answer as the events of a Messages stream."""
    k = int(entry.get("chunk", 3))
    whole = messages_answer(entry, n, model)
    start = dict(whole, content=[], stop_reason=None)
    start["usage"] = dict(whole["usage"], output_tokens=1)
    ev = [("message_start", {"type": "message_start", "message": start}),
          ("ping", {"type": "ping"})]
    if "sse_error" in entry:
        return ev + [("error", {"type": "error", "error": entry["sse_error"]})]
    for i, b in enumerate(whole["content"]):
        if b["type"] == "text":
            first, deltas = dict(b, text=""), [
                {"type": "text_delta", "text": p} for p in pieces(b["text"], k)]
        elif b["type"] == "thinking":
            first = dict(b, thinking="", signature="")
            deltas = [{"type": "thinking_delta", "thinking": p}
                      for p in pieces(b["thinking"], k)]
            deltas.append({"type": "signature_delta",
                           "signature": b["signature"]})
        else:
            first = dict(b, input={})
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in pieces(json.dumps(b["input"]), k)]
        ev.append(("content_block_start", {"type": "content_block_start",
                                           "index": i, "content_block": first}))
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta",
                                               "index": i, "delta": d}))
        ev.append(("content_block_stop", {"type": "content_block_stop",
                                          "index": i}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": whole["stop_reason"],
                                           "stop_sequence": None},
                                 "usage": {"output_tokens":
                                           whole["usage"]["output_tokens"]}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


def send_events(conn, events, extra):
    """The (name, data) events as one answer of server-sent events, in
    chunks (as Anthropic's and OpenAI's servers send them)."""
    body = b""
    for name, e in events:
        piece = ("event: %s\ndata: %s\n\n" % (name, json.dumps(e))).encode()
        body += b"%x\r\n%s\r\n" % (len(piece), piece)
    body += b"0\r\n\r\n"
    head = ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\n" +
            "".join("%s: %s\r\n" % kv for kv in extra.items()) + "\r\n")
    conn.sendall(head.encode() + body)


def serve_messages(conn, entry, n, model, req, extra, args, side=False):
    status = int(entry.get("status", 200))
    if status != 200:
        err = entry.get("error", {"message": "scripted error"})
        err.setdefault("type", "api_error")
        conn.sendall(response(status, json.dumps({"type": "error",
                                                  "error": err}),
                              extra=extra))
        return
    if isinstance(req, dict) and req.get("stream") and \
            entry.get("pings") is not None:
        # Anthropic's keep-alive is an event of its own, not a comment
        head = ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                "Transfer-Encoding: chunked\r\n" +
                "".join("%s: %s\r\n" % kv for kv in extra.items()) + "\r\n")
        ev = messages_events(entry, n, model)[0]
        piece = ("event: %s\ndata: %s\n\n" % (ev[0], json.dumps(ev[1]))).encode()
        conn.sendall(head.encode() + b"%x\r\n%s\r\n" % (len(piece), piece))
        piece = b'event: ping\ndata: {"type": "ping"}\n\n'
        while drip(conn, b"%x\r\n%s\r\n" % (len(piece), piece),
                   entry["pings"], whole=True):
            pass
        return
    if isinstance(req, dict) and req.get("stream"):
        send_events(conn, messages_events(entry, n, model), extra)
    else:
        conn.sendall(response(200, json.dumps(messages_answer(entry, n, model)),
                              extra=extra))
    log_sent(args, n, side)


def responses_answer(entry, n, model):
    """The entry as an OpenAI Responses answer: its output items."""
    out = []
    if entry.get("thinking") is not None:
        out.append({"type": "reasoning", "id": "rs_%d" % n,
                    "summary": [{"type": "summary_text",
                                 "text": entry["thinking"]}],
                    "encrypted_content": entry.get("signature", "enc-%d" % n)})
    if entry.get("web_search"):
        out.append({"type": "web_search_call", "id": "ws_%d" % n,
                    "status": "completed",
                    "action": {"type": "search", "query": entry["web_search"]}})
    for item in entry.get("items", []):
        out.append(item)
    if entry.get("content"):
        out.append({"type": "message", "id": "msg_%d" % n, "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": entry["content"],
                                 "annotations": []}]})
    for c in calls_of(entry):
        out.append({"type": "function_call", "id": "fc_" + c["id"],
                    "status": "completed", "call_id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"]})
    usage = entry.get("usage", {"input_tokens": prompt_tokens(n),
                                "input_tokens_details": {"cached_tokens": 0},
                                "output_tokens": 5,
                                "output_tokens_details": {"reasoning_tokens": 0},
                                "total_tokens": prompt_tokens(n) + 5})
    status, details = "completed", None
    reason = entry.get("finish_reason")
    if reason in ("length", "content_filter"):
        status = "incomplete"
        details = {"reason": "max_output_tokens" if reason == "length"
                   else reason}
    status = entry.get("response_status", status)
    return {"id": "resp_%d" % n, "object": "response",
            "created_at": int(time.time()), "status": status,
            "error": entry.get("failed"), "incomplete_details": details,
            "model": model, "output": out, "usage": usage}


def responses_events(entry, n, model):
    """The same answer as the events of a Responses stream."""
    k = int(entry.get("chunk", 3))
    whole = responses_answer(entry, n, model)
    start = dict(whole, status="in_progress", output=[], usage=None)
    ev = [{"type": "response.created", "response": start},
          {"type": "response.in_progress", "response": start}]
    if "sse_error" in entry:
        return ev + [{"type": "error", "error": entry["sse_error"]}]
    for i, item in enumerate(whole["output"]):
        if item["type"] == "reasoning":
            text = item["summary"][0]["text"]
            ev.append({"type": "response.output_item.added", "output_index": i,
                       "item": dict(item, summary=[], encrypted_content=None)})
            ev.append({"type": "response.reasoning_summary_part.added",
                       "item_id": item["id"], "output_index": i,
                       "summary_index": 0,
                       "part": {"type": "summary_text", "text": ""}})
            for p in pieces(text, k):
                ev.append({"type": "response.reasoning_summary_text.delta",
                           "item_id": item["id"], "output_index": i,
                           "summary_index": 0, "delta": p})
            ev.append({"type": "response.reasoning_summary_text.done",
                       "item_id": item["id"], "output_index": i,
                       "summary_index": 0, "text": text})
        elif item["type"] != "message" and item["type"] != "function_call":
            ev.append({"type": "response.output_item.added", "output_index": i,
                       "item": dict(item, status="in_progress")})
        elif item["type"] == "message":
            text = item["content"][0]["text"]
            ev.append({"type": "response.output_item.added", "output_index": i,
                       "item": dict(item, status="in_progress", content=[])})
            part = {"type": "output_text", "text": "", "annotations": []}
            ev.append({"type": "response.content_part.added", "item_id": item["id"],
                       "output_index": i, "content_index": 0, "part": part})
            for p in pieces(text, k):
                ev.append({"type": "response.output_text.delta",
                           "item_id": item["id"], "output_index": i,
                           "content_index": 0, "delta": p})
            ev.append({"type": "response.output_text.done", "item_id": item["id"],
                       "output_index": i, "content_index": 0, "text": text})
            ev.append({"type": "response.content_part.done", "item_id": item["id"],
                       "output_index": i, "content_index": 0,
                       "part": dict(part, text=text)})
        else:
            ev.append({"type": "response.output_item.added", "output_index": i,
                       "item": dict(item, status="in_progress", arguments="")})
            for p in pieces(item["arguments"], k):
                ev.append({"type": "response.function_call_arguments.delta",
                           "item_id": item["id"], "output_index": i, "delta": p})
            ev.append({"type": "response.function_call_arguments.done",
                       "item_id": item["id"], "output_index": i,
                       "arguments": item["arguments"]})
        ev.append({"type": "response.output_item.done", "output_index": i,
                   "item": item})
    end = {"completed": "response.completed", "incomplete":
           "response.incomplete", "failed": "response.failed"}
    ev.append({"type": end.get(whole["status"], "response.completed"),
               "response": whole})
    return ev


def serve_responses(conn, entry, n, model, req, extra, args, side=False):
    status = int(entry.get("status", 200))
    if status != 200:
        conn.sendall(response(status, json.dumps(
            {"error": entry.get("error", {"message": "scripted error"})}),
            extra=extra))
        return
    if isinstance(req, dict) and req.get("stream"):
        send_events(conn, [(e["type"], dict(e, sequence_number=k))
                           for k, e in enumerate(responses_events(entry, n, model))],
                    extra)
    else:
        conn.sendall(response(200, json.dumps(responses_answer(entry, n, model)),
                              extra=extra))
    log_sent(args, n, side)


def side_answer(method, path, req):
    """With --side-requests: the answer (status, body) to a request that
    is not a step of the session, or None for one that is."""
    if method == "HEAD":
        return 200, ""
    if method != "POST":
        if path.endswith("/models"):
            return 200, json.dumps({"object": "list", "data": [], "models": []})
        return 200, "{}"
    if path.endswith("/count_tokens"):
        return 200, json.dumps({"input_tokens": 10})
    if isinstance(req, dict) and not req.get("tools"):
        return 200, None  # answered "OK" in the request's own API
    return None


def go_duration(s):
    """Seconds as OpenAI writes them: 1s, 6m0s, 120ms."""
    if s < 1:
        return "%dms" % int(s * 1000 + 0.999)
    m, sec = divmod(s, 60)
    return ("%dm%.3gs" % (m, sec)) if m else "%.3gs" % sec


def bucket_take(args, path):
    """With --bucket: takes a request from the bucket.  The headers of
    the answer, and whether it is refused."""
    cap, rate = args.bucket
    now = time.time()
    with lock:
        level = min(cap, state["level"] + rate * (now - state["level_t"]))
        refused = level < 1
        if not refused:
            level -= 1
        state["level"], state["level_t"] = level, now
    full = (cap - level) / rate
    if path.endswith("/messages"):
        def when(s):
            return time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                 time.gmtime(now + s + 0.999))
        h = {"anthropic-ratelimit-requests-limit": "%d" % cap,
             "anthropic-ratelimit-requests-remaining": "%d" % int(level),
             "anthropic-ratelimit-requests-reset": when(full),
             "anthropic-ratelimit-tokens-limit": "1000000",
             "anthropic-ratelimit-tokens-remaining": "1000000",
             "anthropic-ratelimit-tokens-reset": when(0)}
    else:
        h = {"x-ratelimit-limit-requests": "%d" % cap,
             "x-ratelimit-remaining-requests": "%d" % int(level),
             "x-ratelimit-reset-requests": go_duration(full),
             "x-ratelimit-limit-tokens": "1000000",
             "x-ratelimit-remaining-tokens": "1000000",
             "x-ratelimit-reset-tokens": "0ms"}
    if refused:
        # both providers: whole seconds until a request would pass
        h["retry-after"] = "%d" % int((1 - level) / rate + 0.999)
    if args.bucket_log:
        with lock, open(args.bucket_log, "a") as log:
            log.write(json.dumps({"n": state["n"], "time": now,
                                  "refused": refused}) + "\n")
    return h, refused


def log_sent(args, n, side=False):
    """When the answer to request n left: the harness's time starts here."""
    if args.sent_log:
        with lock, open(args.sent_log, "a") as log:
            line = {"n": n, "sent": time.time()}
            if side:
                line["side"] = True
            log.write(json.dumps(line) + "\n")


def drip(conn, data, pause, whole=False):
    """Sends data one byte (or, whole, all of it) every pause seconds;
    False when the client went away."""
    try:
        for piece in [data] if whole else [data[i:i + 1]
                                           for i in range(len(data))]:
            conn.sendall(piece)
            time.sleep(float(pause))
    except OSError:
        return False
    return True


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
        if args.bodies:
            with open(os.path.join(args.bodies, str(n)), "wb") as out:
                out.write(body)
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
        path = path.split("?", 1)[0]
        side = side_answer(method, path, req) if args.side_requests else None
        if side is not None and side[1] is not None:
            conn.sendall(response(side[0], side[1]))
            log_sent(args, n, side=True)
            continue
        if method != "POST" or not (path.endswith("/chat/completions") or
                                    path.endswith("/messages") or
                                    path.endswith("/responses")):
            conn.sendall(response(404, json.dumps({"error": {
                "message": "no such route: %s %s" % (method, path),
                "type": "invalid_request_error"}})))
            continue
        if args.real_usage:
            with lock:
                state["tokens"][n] = len(body) // 4
        refused = args.window_bytes and len(body) > args.window_bytes
        summary = args.summaries and isinstance(req, dict) and \
            asks_summary(req)
        if args.sizes:
            with lock, open(args.sizes, "a") as log:
                log.write(json.dumps({
                    "n": n, "bytes": len(body),
                    "prefix": common_prefix(state["prev"], body),
                    "refused": bool(refused), "summary": bool(summary)})
                    + "\n")
                state["prev"] = body
        if refused:
            conn.sendall(response(400, json.dumps({"error": {
                "message": "This model's maximum context length is %d "
                           "tokens. However, your messages resulted in %d "
                           "tokens. Please reduce the length of the "
                           "messages." % (args.window_bytes // 4,
                                          len(body) // 4),
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}})))
            continue
        limits = {}
        if args.bucket and side is None and not summary:
            limits, over = bucket_take(args, path)
            if over:
                err = {"message": "Rate limit reached for requests",
                       "type": "requests", "code": "rate_limit_exceeded"}
                if path.endswith("/messages"):
                    body = {"type": "error", "error": {
                        "type": "rate_limit_error",
                        "message": err["message"]}}
                else:
                    body = {"error": err}
                conn.sendall(response(429, json.dumps(body), extra=limits))
                continue
        if side is not None:
            entry = {"content": "OK"}
        elif summary:
            entry = {"content": args.summary_text,
                     "delay": args.summary_delay}
        else:
            entry = next_entry(req)
        if entry.get("delay"):
            time.sleep(float(entry["delay"]))
        if entry.get("hang"):
            time.sleep(3600)
            return
        extra = {"x-request-id": "req_%d" % n}
        extra.update(limits)
        extra.update(entry.get("headers", {}))
        status = int(entry.get("status", 200))
        model = (req or {}).get("model", "scripted") if isinstance(req, dict) \
            else "scripted"
        if "wire" in entry:
            conn.sendall(entry["wire"].encode("latin-1"))
            log_sent(args, n, side is not None)
            if entry.get("reset"):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                b"\1\0\0\0\0\0\0\0")
                f.close()
                conn.close()
                return
            if entry.get("close"):
                conn.shutdown(socket.SHUT_RDWR)
                return
            continue
        if path.endswith("/messages") and "raw" not in entry:
            serve_messages(conn, entry, n, model, req, extra, args,
                           side is not None)
            continue
        if path.endswith("/responses") and "raw" not in entry:
            serve_responses(conn, entry, n, model, req, extra, args,
                            side is not None)
            continue
        if "raw" in entry:
            raw = entry["raw"]
            if entry.get("latin1"):  # each character one byte: any bytes
                raw = raw.encode("latin-1")
            conn.sendall(response(status, raw, extra=extra,
                                  ctype=entry.get("ctype",
                                                  "application/json")))
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
            if entry.get("keepalive") is not None:
                conn.sendall(head.encode())
                piece = b": keep-alive\n\n"
                while drip(conn, b"%x\r\n%s\r\n" % (len(piece), piece),
                           entry["keepalive"], whole=True):
                    pass
                return
            if entry.get("drip_bytes") is not None:
                conn.sendall(head.encode())
                if drip(conn, body, entry["drip_bytes"]):
                    log_sent(args, n, side is not None)
                    continue
                return
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
                log_sent(args, n, side is not None)
                continue
            conn.sendall(head.encode() + body)
            log_sent(args, n, side is not None)
            if cut is not None:
                conn.shutdown(socket.SHUT_RDWR)
                return
            continue
        whole = response(200, json.dumps(completion(entry, n, model)),
                         extra=extra)
        if entry.get("drip_bytes") is not None:
            cut = whole.index(b"\r\n\r\n") + 4
            conn.sendall(whole[:cut])
            if not drip(conn, whole[cut:], entry["drip_bytes"]):
                return
        else:
            conn.sendall(whole)
        log_sent(args, n, side is not None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--sent-log")
    ap.add_argument("--idle", type=float, default=300)
    ap.add_argument("--window-bytes", type=int, default=0)
    ap.add_argument("--summaries", action="store_true")
    ap.add_argument("--real-usage", action="store_true")
    ap.add_argument("--summary-delay", type=float, default=0)
    ap.add_argument("--summary-text", default="Summary of the work so far.")
    ap.add_argument("--sizes")
    ap.add_argument("--bodies")
    ap.add_argument("--side-requests", action="store_true")
    ap.add_argument("--bucket", type=lambda v: tuple(
        float(x) for x in v.split("/", 1)))
    ap.add_argument("--bucket-log")
    args = ap.parse_args()
    if args.bucket:
        state["level"], state["level_t"] = args.bucket[0], time.time()
    with open(args.script) as s:
        state["script"] = [json.loads(l) for l in s
                           if l.strip() and not l.startswith("#")]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.host, 0))
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
