#!/usr/bin/env python3
"""A small HTTP proxy on 127.0.0.1 for the tests: CONNECT (a tunnel, for
https://) and requests in absolute form (for http://), each relayed as it
is to the host the request names.

    http-proxy.py --port-file F --log F

--port-file F  the port, written once the proxy listens
--log F        appends the first line of each connection's request

It exits on SIGTERM.
"""
import os
import socket
import socketserver
import sys
import threading
from urllib.parse import urlsplit

args = sys.argv[1:]
opt = {}
while args:
    k = args.pop(0)
    opt[k] = args.pop(0)


def pipe(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        c = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            b = c.recv(65536)
            if not b:
                return
            head += b
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        with open(opt["--log"], "a") as f:
            f.write(line + "\n")
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            rest = head.split(b"\r\n\r\n", 1)[1]
        else:
            u = urlsplit(target)
            host, port = u.hostname, u.port or 80
            rest = head
        up = socket.create_connection((host, int(port)))
        if method == "CONNECT":
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            up.sendall(rest)
        t = threading.Thread(target=pipe, args=(up, c), daemon=True)
        t.start()
        pipe(c, up)
        t.join()
        up.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
tmp = opt["--port-file"] + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(tmp, opt["--port-file"])
srv.serve_forever()
