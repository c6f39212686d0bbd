#!/usr/bin/env python3
"""detach.py: runs a command the way the test suite needs it, whoever
started the suite: in a session of its own with no controlling terminal
(so no program under test can open /dev/tty and wait for a person), with
every signal at its default disposition and none blocked (nohup ignores
SIGHUP, a shell's background job ignores SIGINT and SIGQUIT, and those
dispositions would pass on to every program the suite tests).

    detach.py CMD [ARG...]

The exit status is CMD's (128+N when a signal N ended it).  When this
process leads a process group already (run by an interactive shell), it
cannot start a session itself: it forks, the child starts one, and the
parent waits for it, passing on SIGINT, SIGTERM and SIGHUP.
"""
import os
import signal
import sys


def defaults():
    for n in range(1, signal.NSIG):
        try:
            signal.signal(n, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP, and numbers that are no signal
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def run(argv):
    defaults()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        sys.stderr.write("detach.py: cannot run '%s': %s\n"
                         % (argv[0], e.strerror))
        os._exit(127)


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.stderr.write("usage: detach.py CMD [ARG...]\n")
        return 2
    try:
        os.setsid()
    except PermissionError:
        pass
    else:
        run(argv)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        run(argv)

    def relay(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, relay)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
