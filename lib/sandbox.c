/* sandbox.c: confining the commands the model runs.
 *
 * Three layers, applied in a child between fork and exec, never to the
 * harness itself:
 *   - a private mount namespace in which the protected paths of the
 *     workspace (.agent, todo.json, .git/hooks, ...) are read-only bind
 *     mounts, and their ancestors inside the workspace are mount points,
 *     so that nothing can rename them away;
 *   - Landlock: writing is allowed beneath the workspace (workspace-write),
 *     the private temporary directory and a few devices, nowhere else;
 *     TCP is refused and signals cannot leave the sandbox, where the
 *     kernel's ABI has it;
 *   - every capability dropped, no_new_privs, and a seccomp filter that
 *     refuses sockets other than AF_UNIX (unless the network is allowed)
 *     and io_uring, which would bypass it.
 * Reading and executing stay unrestricted. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

/* Landlock's interface (linux/landlock.h), written out because the headers
 * of older distributions stop at ABI 1 or 2. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE     (1ULL << 0)
#define LL_FS_WRITE_FILE  (1ULL << 1)
#define LL_FS_READ_FILE   (1ULL << 2)
#define LL_FS_READ_DIR    (1ULL << 3)
#define LL_FS_REMOVE_DIR  (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR   (1ULL << 6)
#define LL_FS_MAKE_DIR    (1ULL << 7)
#define LL_FS_MAKE_REG    (1ULL << 8)
#define LL_FS_MAKE_SOCK   (1ULL << 9)
#define LL_FS_MAKE_FIFO   (1ULL << 10)
#define LL_FS_MAKE_BLOCK  (1ULL << 11)
#define LL_FS_MAKE_SYM    (1ULL << 12)
#define LL_FS_REFER       (1ULL << 13) /* ABI 2 */
#define LL_FS_TRUNCATE    (1ULL << 14) /* ABI 3 */
#define LL_NET_BIND_TCP    (1ULL << 0) /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL        (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* The rights that change the file system: what the sandbox handles. */
#define LL_FS_CHANGE (LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE \
	| LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK \
	| LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM)
/* Of those, the ones a rule on a file (not a directory) may carry. */
#define LL_FS_FILE_RIGHTS (LL_FS_WRITE_FILE | LL_FS_TRUNCATE)

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

int
sandbox_mode_parse(const char *name)
{
	if (!strcmp(name, "workspace-write"))
		return SANDBOX_WORKSPACE_WRITE;
	if (!strcmp(name, "read-only"))
		return SANDBOX_READ_ONLY;
	if (!strcmp(name, "off"))
		return SANDBOX_OFF;
	return -1;
}

const char *
sandbox_mode_name(enum sandbox_mode mode)
{
	switch (mode) {
	case SANDBOX_WORKSPACE_WRITE:
		return "workspace-write";
	case SANDBOX_READ_ONLY:
		return "read-only";
	default:
		return "off";
	}
}

static int
landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
			 LL_CREATE_RULESET_VERSION);

	return v < 0 ? 0 : (int)v;
}

int
sandbox_protect(struct sandbox *sb, const char *path, struct ah_error *err)
{
	char **list, *abs;
	size_t n;

	if (!*path)
		return ah_fail(err, AH_EFORMAT, "an empty path cannot be "
			       "protected");
	if (*path == '/')
		abs = strdup(path);
	else if (asprintf(&abs, "%s%s%s", sb->workspace,
			  strcmp(sb->workspace, "/") ? "/" : "", path) < 0)
		abs = NULL;
	if (!abs)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	/* "a/b/" and "a/./b" name what "a/b" names. */
	n = strlen(abs);
	while (n > 1 && abs[n - 1] == '/')
		abs[--n] = '\0';
	list = realloc(sb->protect, (sb->nprotect + 1) * sizeof *list);
	if (!list) {
		free(abs);
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	}
	sb->protect = list;
	sb->protect[sb->nprotect++] = abs;
	return 0;
}

int
sandbox_init(struct sandbox *sb, enum sandbox_mode mode,
	     const char *workspace, const char *todo_path,
	     struct ah_error *err)
{
	static const char *const defaults[] = {
		".agent", ".git/hooks", ".git/config",
	};
	size_t i;

	memset(sb, 0, sizeof *sb);
	sb->mode = mode;
	if (mode == SANDBOX_OFF)
		return 0;
	sb->abi = landlock_abi();
	if (sb->abi < 1)
		return ah_fail(err, AH_EIO, "the sandbox needs Landlock, which "
			       "this kernel does not offer (%s)",
			       strerror(errno));
#ifndef SECCOMP_ARCH
	return ah_fail(err, AH_EIO, "the sandbox's seccomp filter does not "
		       "know this architecture");
#endif
	sb->workspace = strdup(workspace);
	if (!sb->workspace)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	for (i = 0; i < sizeof defaults / sizeof *defaults; i++)
		if (sandbox_protect(sb, defaults[i], err) < 0)
			return -1;
	if (todo_path && sandbox_protect(sb, todo_path, err) < 0)
		return -1;
	return 0;
}

int
sandbox_prepare(struct sandbox *sb, struct ah_error *err)
{
	const char *base = getenv("TMPDIR");
	char *t;

	if (sb->mode == SANDBOX_OFF || sb->tmpdir)
		return 0;
	if (!base || *base != '/')
		base = "/tmp";
	if (asprintf(&t, "%s/tool-exec.XXXXXX", base) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	if (!mkdtemp(t)) {
		ah_fail_errno(err, errno, "cannot create a temporary "
			      "directory in '%s'", base);
		free(t);
		return -1;
	}
	sb->tmpdir = t;
	return 0;
}

/* rm -r of the entries of the directory dfd (closed here). */
static void
remove_tree(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int fd;

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0 || depth > 64)
			continue;
		/* A directory, perhaps one a command made unreadable. */
		fchmodat(dfd, e->d_name, 0700, AT_SYMLINK_NOFOLLOW);
		fd = openat(dfd, e->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			remove_tree(fd, depth + 1);
		unlinkat(dfd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

void
sandbox_free(struct sandbox *sb)
{
	size_t i;
	int fd;

	if (sb->tmpdir) {
		fd = open(sb->tmpdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			  O_CLOEXEC);
		if (fd >= 0)
			remove_tree(fd, 0);
		rmdir(sb->tmpdir);
		free(sb->tmpdir);
	}
	for (i = 0; i < sb->nprotect; i++)
		free(sb->protect[i]);
	free(sb->protect);
	free(sb->workspace);
	memset(sb, 0, sizeof *sb);
}

/* --- the mount namespace */

/* Is p strictly beneath the directory dir? */
static int
beneath(const char *dir, const char *p)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return p[0] == '/' && p[1];
	return !strncmp(dir, p, n) && p[n] == '/';
}

static int
write_proc(const char *path, const char *text, struct ah_error *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(text);

	if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
		ah_fail_errno(err, errno, "cannot write %s", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* A mount namespace of our own, whose mounts do not propagate back. */
static int
own_namespace(struct ah_error *err)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWNS) < 0) {
		if (errno != EPERM)
			return ah_fail_errno(err, errno, "cannot create a "
					     "mount namespace");
		/* Without privilege: a user namespace of our own first,
		 * mapping us to ourselves. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return ah_fail_errno(err, errno, "cannot create a user "
					     "and mount namespace (are "
					     "unprivileged user namespaces "
					     "disabled?)");
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid,
			 (unsigned)uid);
		if (write_proc("/proc/self/setgroups", "deny", err) < 0 ||
		    write_proc("/proc/self/uid_map", map, err) < 0)
			return -1;
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid,
			 (unsigned)gid);
		if (write_proc("/proc/self/gid_map", map, err) < 0)
			return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ah_fail_errno(err, errno, "cannot make the mounts "
				     "private");
	return 0;
}

/* Mounts p on itself, read-only or not.  A remount must repeat the flags
 * that a less privileged namespace may not clear. */
static int
bind_self(const char *p, int rdonly, struct ah_error *err)
{
	static const struct { unsigned long st, ms; } keep[] = {
		{ ST_NOSUID, MS_NOSUID }, { ST_NODEV, MS_NODEV },
		{ ST_NOEXEC, MS_NOEXEC }, { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
	struct statvfs sv;
	size_t i;

	if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0)
		return ah_fail_errno(err, errno, "cannot bind-mount '%s'", p);
	if (!rdonly)
		return 0;
	if (statvfs(p, &sv) < 0)
		return ah_fail_errno(err, errno, "cannot stat '%s'", p);
	for (i = 0; i < sizeof keep / sizeof *keep; i++)
		if (sv.f_flag & keep[i].st)
			flags |= keep[i].ms;
	if (mount(NULL, p, NULL, flags, NULL) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s' read-only",
				     p);
	return 0;
}

/* Makes the existing protected paths read-only bind mounts, and every
 * directory between them and the workspace a mount point, which cannot
 * be renamed or removed. */
static int
protect_paths(const struct sandbox *sb, struct ah_error *err)
{
	struct stat st;
	char *done[64], *a, *slash;
	size_t i, j, ndone = 0, n = strlen(sb->workspace);
	int rc = -1, any = 0;

	for (i = 0; i < sb->nprotect; i++)
		if (lstat(sb->protect[i], &st) == 0)
			any = 1;
	if (!any)
		return 0;
	if (own_namespace(err) < 0)
		return -1;
	for (i = 0; i < sb->nprotect; i++) {
		const char *p = sb->protect[i];

		if (lstat(p, &st) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			ah_fail_errno(err, errno, "cannot stat '%s'", p);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			ah_fail(err, AH_EIO, "'%s' is a symbolic link, which "
				"the sandbox cannot keep read-only", p);
			goto out;
		}
		/* The ancestors inside the workspace, outermost first. */
		for (slash = strchr(p + n + 1, '/');
		     beneath(sb->workspace, p) && slash;
		     slash = strchr(slash + 1, '/')) {
			a = strndup(p, (size_t)(slash - p));
			if (!a) {
				ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
				goto out;
			}
			for (j = 0; j < ndone && strcmp(done[j], a); j++)
				;
			if (j < ndone || ndone == 64) {
				free(a);
				continue;
			}
			done[ndone++] = a;
			if (lstat(a, &st) < 0 || S_ISLNK(st.st_mode)) {
				ah_fail(err, AH_EIO, "'%s' is a symbolic link, "
					"which the sandbox cannot keep in "
					"place", a);
				goto out;
			}
			if (bind_self(a, 0, err) < 0)
				goto out;
		}
		if (bind_self(p, 1, err) < 0)
			goto out;
	}
	rc = 0;
out:
	for (j = 0; j < ndone; j++)
		free(done[j]);
	return rc;
}

/* --- capabilities */

static int
drop_capabilities(struct ah_error *err)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int cap;

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* Without CAP_SETPCAP this fails, but then there is nothing in the
	 * bounding set that no_new_privs does not already keep out. */
	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno == EINVAL)
			break;
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		return ah_fail_errno(err, errno, "cannot drop capabilities");
	return 0;
}

/* --- Landlock */

static int
allow(int ruleset, const char *path, uint64_t access, uint64_t handled,
      int optional, struct ah_error *err)
{
	struct ll_path_beneath_attr rule;
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0) {
		if (optional)
			return 0;
		return ah_fail_errno(err, errno, "cannot open '%s'", path);
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return ah_fail_errno(err, errno, "cannot stat '%s'", path);
	}
	if (!S_ISDIR(st.st_mode))
		access &= LL_FS_FILE_RIGHTS;
	rule.allowed_access = access & handled;
	rule.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH,
		    &rule, 0) < 0) {
		close(fd);
		return ah_fail_errno(err, errno, "landlock: cannot allow "
				     "writing in '%s'", path);
	}
	close(fd);
	return 0;
}

static int
landlock(const struct sandbox *sb, struct ah_error *err)
{
	static const char *const devices[] = {
		"/dev/null", "/dev/zero", "/dev/full",
	};
	struct ll_ruleset_attr attr = { 0 };
	size_t size = sizeof attr.handled_access_fs, i;
	uint64_t fs = LL_FS_CHANGE;
	int rs;

	if (sb->abi >= 2)
		fs |= LL_FS_REFER;
	if (sb->abi >= 3)
		fs |= LL_FS_TRUNCATE;
	attr.handled_access_fs = fs;
	if (sb->abi >= 4) {
		size = offsetof(struct ll_ruleset_attr, scoped);
		if (!sb->network)
			attr.handled_access_net = LL_NET_BIND_TCP |
						  LL_NET_CONNECT_TCP;
	}
	if (sb->abi >= 6) {
		size = sizeof attr;
		attr.scoped = LL_SCOPE_SIGNAL;
		if (!sb->network)
			attr.scoped |= LL_SCOPE_ABSTRACT_UNIX;
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return ah_fail_errno(err, errno, "landlock: cannot create a "
				     "ruleset");
	if ((sb->mode == SANDBOX_WORKSPACE_WRITE &&
	     allow(rs, sb->workspace, fs, fs, 0, err) < 0) ||
	    (sb->tmpdir && allow(rs, sb->tmpdir, fs, fs, 0, err) < 0))
		goto fail;
	for (i = 0; i < sizeof devices / sizeof *devices; i++)
		if (allow(rs, devices[i], fs, fs, 1, err) < 0)
			goto fail;
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		ah_fail_errno(err, errno, "landlock: cannot restrict the "
			      "process");
		goto fail;
	}
	close(rs);
	return 0;
fail:
	close(rs);
	return -1;
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

static int
seccomp(const struct sandbox *sb, struct ah_error *err)
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

int
sandbox_enter(const struct sandbox *sb, struct ah_error *err)
{
	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sb->mode == SANDBOX_WORKSPACE_WRITE && protect_paths(sb, err) < 0)
		return -1;
	if (drop_capabilities(err) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ah_fail_errno(err, errno, "cannot set no_new_privs");
	if (landlock(sb, err) < 0 || seccomp(sb, err) < 0)
		return -1;
	if (sb->tmpdir && setenv("TMPDIR", sb->tmpdir, 1) < 0)
		return ah_fail_errno(err, errno, "cannot set TMPDIR");
	return 0;
}

/* --- the file tools */

/* What a protected path is on disk, looked up once per check. */
struct guard {
	int exists, parent_ok;
	struct stat st;     /* the path itself (lstat) */
	struct stat parent; /* its directory */
	const char *base;   /* its last name */
};

static int
look_up(const char *p, struct guard *g)
{
	const char *base = strrchr(p, '/');
	char *parent;

	memset(g, 0, sizeof *g);
	g->exists = lstat(p, &g->st) == 0;
	g->base = base ? base + 1 : p;
	parent = !base || base == p ? strdup("/") : strndup(p, (size_t)(base - p));
	if (!parent)
		return -1;
	g->parent_ok = stat(parent, &g->parent) == 0;
	free(parent);
	return 0;
}

static int
same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Is the directory dir, or its entry name (entry, when it exists), the
 * protected path g, or the place where g would be created? */
static int
hits(const struct guard *g, const struct stat *dir, const char *name,
     const struct stat *entry)
{
	if (g->exists && (same(&g->st, dir) || (entry && same(&g->st, entry))))
		return 1;
	return name && !strcmp(g->base, name) && g->parent_ok &&
	       same(&g->parent, dir);
}

int
sandbox_may_write(const struct sandbox *sb, int dirfd, const char *name,
		  char *msg, size_t size)
{
	struct stat ws, dir, entry, *ep = NULL;
	struct guard *g;
	size_t i;
	int fd, next, depth, rc = 0;

	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sb->mode == SANDBOX_READ_ONLY) {
		snprintf(msg, size, "the sandbox is read-only (tool-exec "
			 "--sandbox read-only)");
		return 1;
	}
	if (stat(sb->workspace, &ws) < 0)
		return -1;
	g = calloc(sb->nprotect ? sb->nprotect : 1, sizeof *g);
	if (!g)
		return -1;
	for (i = 0; i < sb->nprotect; i++)
		if (look_up(sb->protect[i], &g[i]) < 0) {
			free(g);
			errno = ENOMEM;
			return -1;
		}
	if (fstatat(dirfd, name, &entry, AT_SYMLINK_NOFOLLOW) == 0)
		ep = &entry;
	/* The directory and each of its ancestors up to the workspace. */
	fd = dirfd;
	for (depth = 0; depth < 4096; depth++) {
		if (fstat(fd, &dir) < 0) {
			rc = -1;
			break;
		}
		for (i = 0; i < sb->nprotect; i++)
			if (hits(&g[i], &dir, depth ? NULL : name,
				 depth ? NULL : ep)) {
				snprintf(msg, size, "'%s' is kept read-only by "
					 "the sandbox", sb->protect[i]);
				rc = 1;
				break;
			}
		if (rc || same(&dir, &ws))
			break;
		next = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd != dirfd)
			close(fd);
		if (next < 0) {
			free(g);
			return -1;
		}
		fd = next;
	}
	if (fd != dirfd)
		close(fd);
	free(g);
	return rc;
}
