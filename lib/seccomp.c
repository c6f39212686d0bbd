/* seccomp.c: the sandbox's seccomp filter, and the capabilities
 * dropped (see sandbox.c). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "priv.h"

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

int
sb_seccomp_arch(void)
{
#ifdef SECCOMP_ARCH
	return 1;
#else
	return 0;
#endif
}

/* --- capabilities */

/* Empties the bounding set, so that no exec can gain a capability back;
 * the helper keeps its own (it still mounts and creates namespaces). */
void
sb_drop_bounding(void)
{
	int cap;

	/* Without CAP_SETPCAP this fails, but then there is nothing in the
	 * bounding set that no_new_privs does not already keep out. */
	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno == EINVAL)
			break;
}

int
sb_drop_capabilities(struct ah_error *err)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		return ah_fail_errno(err, errno, "cannot drop capabilities");
	return 0;
}

/* --- seccomp */

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
			     offsetof(struct seccomp_data, field))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define REFUSE(e) RET(SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* ioctl's request is an unsigned int in the kernel: a caller's 64-bit
 * argument is cut to its low half, so the filter compares that half
 * alone (0x100005412 is TIOCSTI too). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG1_LOW offsetof(struct seccomp_data, args[1])
#else
#define ARG1_LOW (offsetof(struct seccomp_data, args[1]) + 4)
#endif
#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

int
sb_seccomp(const struct sandbox *sb, struct ah_error *err)
{
#ifdef SECCOMP_ARCH
	struct sock_filter f[] = {
		/* 0 */ LOAD(arch),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_ARCH, 1, 0),
		/* 2 */ RET(SECCOMP_RET_KILL_PROCESS),
		/* 3 */ LOAD(nr),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 6, 0),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup,
				 5, 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_enter,
				 4, 0),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
				 SYS_io_uring_register, 3, 0),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 3, 0),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 6, 0),
		/* 10 */ RET(SECCOMP_RET_ALLOW),
		/* 11 */ REFUSE(EPERM),
		/* 12: socket(domain, ...) */ LOAD(args[0]),
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
		/* 14 */ RET(SECCOMP_RET_ALLOW),
		/* 15 */ REFUSE(EACCES),
		/* 16: ioctl(fd, request, ...): no typing into a terminal,
		 * nor the console's selection and keyboard tricks */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG1_LOW),
		/* 17 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0),
		/* 18 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0),
		/* 19 */ RET(SECCOMP_RET_ALLOW),
		/* 20 */ REFUSE(EPERM),
	};
	struct sock_fprog prog = { sizeof f / sizeof *f, f };

	if (sb->network) /* socket(2) is let through, unchecked */
		f[8] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						    SYS_socket, 0, 0);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return ah_fail_errno(err, errno, "seccomp: cannot install "
				     "the filter");
	return 0;
#else
	(void)sb;
	return ah_fail(err, AH_EIO, "seccomp: this architecture is unknown");
#endif
}

/* A /proc of the command's own PID namespace (called by its pid 1, in a
 * mount namespace of the call's own): ps and pgrep work there (with the
 * host's /proc they fail, "lookup self"), and the harness's processes are
 * not in it.  Where the kernel refuses the mount, the command does not
 * run: the /proc beneath is the host's, whose /proc/PID/root leads to
 * the files and sockets of every process of the user. */
