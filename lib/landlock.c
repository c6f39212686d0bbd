/* landlock.c: the sandbox's Landlock ruleset (see sandbox.c). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "priv.h"

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

/* --- Landlock */

int
sb_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
			 LL_CREATE_RULESET_VERSION);

	return v < 0 ? 0 : (int)v;
}

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

/* The Landlock ruleset of the sandbox, built (not enforced): its fd, or
 * -1. */
int
sb_landlock_ruleset(const struct sandbox *sb, struct ah_error *err)
{
	/* in the view: the session's own /tmp, terminals and shm */
	static const char *const devices[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/pts", "/dev/shm",
		"/tmp",
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
		/* abstract unix sockets are no network: scoped always */
		attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX;
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
	return rs;
fail:
	close(rs);
	return -1;
}

int
sb_landlock_enforce(int ruleset, struct ah_error *err)
{
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return ah_fail_errno(err, errno, "landlock: cannot restrict "
				     "the process");
	close(ruleset);
	return 0;
}
