#!/usr/bin/env python3
"""A small MCP server over Streamable HTTP for the tests of mcp-bridge:
over TLS too, with a certificate the test makes.

    mcp-http.py --port-file F [--tls CERT KEY] [--sse] [--ping] [--log F]
                [--headers F]

--port-file F  the port, written once the server listens on 127.0.0.1
--tls          speaks HTTPS with the certificate CERT and its key KEY
--sse          answers a request as a stream of events, not one JSON body
--ping         with --sse: the stream answering tools/call asks the client
               a ping first, and the call's result comes once the client
               has answered it (by a POST of its own)
--log F        appends a line a request: its method and target, and the
               scheme it came by
--headers F    appends a line a request: its JSON-RPC method ("response"
               for an answer of the client's), then its headers
               Mcp-Session-Id, MCP-Protocol-Version and X-Token ("-" for
               one absent)

Its one tool, echo {text}, answers "TEXT (over SCHEME)".  It exits on
SIGTERM.
"""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
opt = {}
while args:
    k = args.pop(0)
    if k == "--tls":
        opt[k] = (args.pop(0), args.pop(0))
    elif k in ("--sse", "--ping"):
        opt[k] = True
    else:
        opt[k] = args.pop(0)
scheme = "https" if "--tls" in opt else "http"
VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
ECHO = {"name": "echo", "description": "Says the text back",
        "inputSchema": {"type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"]}}
PING = "ping-1"
pinged = threading.Event()  # the client answered PING


def answer(msg):
    m = msg.get("method")
    p = msg.get("params") or {}
    if m == "initialize":
        v = p.get("protocolVersion")
        return {"protocolVersion": v if v in VERSIONS else VERSIONS[0],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-http", "version": "1"}}
    if m == "tools/list":
        return {"tools": [ECHO]}
    if m == "tools/call":
        text = (p.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text",
                             "text": "%s (over %s)" % (text, scheme)}]}
    if m == "ping":
        return {}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(n))
        if "--log" in opt:
            with open(opt["--log"], "a") as f:
                f.write("%s %s %s\n" % (self.command, self.path, scheme))
        if "--headers" in opt:
            with open(opt["--headers"], "a") as f:
                f.write(" ".join([msg.get("method", "response")] + [
                    self.headers.get(h, "-") for h in (
                        "Mcp-Session-Id", "MCP-Protocol-Version",
                        "X-Token")]) + "\n")
        if "method" not in msg:
            # an answer of the client's: to our ping
            if msg.get("id") == PING and "result" in msg:
                pinged.set()
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "--ping" in opt and msg.get("method") == "tools/call":
            self.ping_first(msg)
            return
        if "id" not in msg:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        res = answer(msg)
        out = {"jsonrpc": "2.0", "id": msg["id"]}
        if res is None:
            out["error"] = {"code": -32601, "message": "no such method"}
        else:
            out["result"] = res
        body = json.dumps(out)
        if "--sse" in opt:
            body = "event: message\ndata: %s\n\n" % body
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if "--sse" in opt
                         else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Mcp-Session-Id", "s-1")
        self.end_headers()
        self.wfile.write(data)

    def ping_first(self, msg):
        """The answer to msg as a stream that asks a ping first, read to
        the connection's close."""
        def event(m):
            self.wfile.write(("event: message\ndata: %s\n\n"
                              % json.dumps(m)).encode())
            self.wfile.flush()
        pinged.clear()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", "s-1")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        event({"jsonrpc": "2.0", "id": PING, "method": "ping"})
        out = {"jsonrpc": "2.0", "id": msg["id"]}
        if pinged.wait(10):
            out["result"] = answer(msg)
        else:
            out["error"] = {"code": -32000, "message": "no answer to the ping"}
        event(out)


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
if "--tls" in opt:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*opt["--tls"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
tmp = opt["--port-file"] + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(tmp, opt["--port-file"])
srv.serve_forever()
