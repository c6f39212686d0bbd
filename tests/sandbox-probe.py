#!/usr/bin/env python3
"""sandbox-probe.py: can this machine's kernel confine a command the way
tool-exec's sandbox does?  Prints "yes", or "no: WHY" naming the first
thing missing, and exits 0 either way.

It asks the kernel, never tool-exec: the test suite skips the sandbox's
tests only where the kernel cannot have a sandbox, so that a sandbox of
ours that fails to set up fails the tests instead of passing as "this
machine has none" (tests/lib.sh).  What it asks for is what
lib/sandbox.c needs: an architecture the seccomp filter knows, Landlock
(ABI 1 or later), seccomp filters, and, in a child, the namespaces
(mount, PID, IPC, network; with a user namespace when not root, as the
sandbox makes them) and a private mount in them.
"""
import ctypes
import errno
import os
import platform
import sys
import tempfile

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_GET_SECCOMP = 21
LANDLOCK_CREATE_RULESET_VERSION = 1
SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture

libc = ctypes.CDLL(None, use_errno=True)


def fail(call):
    e = ctypes.get_errno()
    return "%s: %s" % (call, os.strerror(e) if e else "failed")


def namespaces():
    """In a child: the namespaces and a private mount; None, or why not."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        why = ""
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET
        if libc.unshare(flags) != 0:
            # without the privilege: in a user namespace of its own
            if ctypes.get_errno() != errno.EPERM or \
                    libc.unshare(CLONE_NEWUSER | flags) != 0:
                why = fail("unshare (user namespaces disabled?)")
        if not why:
            d = tempfile.mkdtemp(prefix="ah-probe.")
            if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
                why = fail("mount --make-rprivate /")
            elif libc.mount(b"tmpfs", d.encode(), b"tmpfs", 0, None) != 0:
                why = fail("mount tmpfs")
            else:
                libc.umount2(d.encode(), 0)
            os.rmdir(d)
        os.write(w, why.encode())
        os._exit(0)
    os.close(w)
    why = b""
    while True:
        chunk = os.read(r, 512)
        if not chunk:
            break
        why += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return why.decode() or None


def probe():
    machine = platform.machine()
    if machine not in ("x86_64", "aarch64"):
        return "the seccomp filter does not know %s" % machine
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None,
                       ctypes.c_size_t(0),
                       ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 1:
        return fail("Landlock")
    if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return fail("seccomp")
    return namespaces()


def main():
    if len(sys.argv) > 1:
        sys.stderr.write("usage: sandbox-probe.py\n")
        return 2
    why = probe()
    print("no: " + why if why else "yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
