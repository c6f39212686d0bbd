#!/usr/bin/env python3
"""pty-run.py: runs a shell command on a new pseudo-terminal, its
controlling terminal, and answers its prompts as a person would: only
after the prompt has appeared.

    pty-run.py [--early TEXT] [--prompt TEXT] [--timeout SEC] CMD [ANSWER...]

CMD runs as `sh -c CMD` with the terminal as stdin, stdout and stderr (it
redirects what it needs).  --early TEXT is typed before CMD starts, as if
typed ahead (or pushed into the terminal) before any question.  Each time
the prompt (default "Allow? ") appears, the next ANSWER is typed, with a
newline.  Everything the terminal shows goes to stdout.  The exit status
is CMD's, or 124 when it does not end within the timeout (default 30 s).
"""
import argparse
import fcntl
import os
import select
import signal
import sys
import termios
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--early", default=None)
    ap.add_argument("--prompt", default="Allow? ")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("cmd")
    ap.add_argument("answers", nargs="*")
    a = ap.parse_args()

    master, slave = os.openpty()
    if a.early is not None:
        os.write(master, a.early.encode())
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        os.execvp("sh", ["sh", "-c", a.cmd])
    os.close(slave)
    seen = b""
    answers = list(a.answers)
    prompt = a.prompt.encode()
    deadline = time.monotonic() + a.timeout
    status = None
    out = sys.stdout.buffer
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return 124
        r, _, _ = select.select([master], [], [], min(left, 0.1))
        if r:
            try:
                data = os.read(master, 4096)
            except OSError:
                data = b""
            if not data:
                break
            out.write(data)
            out.flush()
            seen += data
            while prompt in seen:
                seen = seen[seen.index(prompt) + len(prompt):]
                if answers:
                    try:
                        os.write(master, (answers.pop(0) + "\n").encode())
                    except OSError:
                        pass
        elif status is None:
            p, st = os.waitpid(pid, os.WNOHANG)
            if p:
                status = st
                # what is left to read, then done
                deadline = min(deadline, time.monotonic() + 1)
    if status is None:
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) & 0xff


if __name__ == "__main__":
    sys.exit(main())
