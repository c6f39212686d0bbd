/* sandbox.c: confining the commands the model runs.
 *
 * Three layers, never applied to the harness itself.  Most of them are
 * set up once per session, in the helper process that forks every
 * command (proc.c: sandbox_setup), and inherited across fork; the rest
 * is applied per command, between fork and exec (sandbox_restrict):
 *   - a private mount namespace in which every mount is read-only but
 *     the write roots (the workspace, the private temporary directory),
 *     which are nosuid, and in which the protected paths of the
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
 * Reading and executing stay unrestricted.
 *
 * Once, in the helper: the mount namespace (and the user namespace it
 * needs without privilege), the bounding set emptied, no_new_privs, the
 * seccomp filter, the Landlock ruleset built.  Per command: a /proc of
 * its own PID namespace, the capabilities dropped, the ruleset enforced.
 * What the mounts protect was found before the helper started; the helper
 * checks that it protects exactly that (sandbox_verify), and the caller
 * starts a new helper whenever it changed (sandbox_snapshot). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

/* The new mount API (linux/mount.h), written out for the same reason. */
#define MNT_OPEN_TREE_CLONE   1U
#define MNT_AT_RECURSIVE      0x8000U
#define MNT_MOVE_F_EMPTY_PATH 0x4U
#define MNT_ATTR_RDONLY       0x1ULL
#define MNT_ATTR_NOSUID       0x2ULL

struct mnt_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

#ifndef SYS_open_tree
#define SYS_open_tree 428
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
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

static void unwatch_all(struct sandbox *sb);

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
	/* no sandbox: nothing is kept (and no workspace to resolve in) */
	if (sb->mode == SANDBOX_OFF)
		return 0;
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
sandbox_allow(struct sandbox *sb, const char *path, int socket,
	      struct ah_error *err)
{
	struct sandbox_allow *more;
	struct stat st;
	char *dst, *src;
	size_t n;

	if (!*path)
		return ah_fail(err, AH_EFORMAT, "an empty path cannot be let "
			       "into the sandbox");
	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (*path == '/')
		dst = strdup(path);
	else if (asprintf(&dst, "%s%s%s", sb->workspace,
			  strcmp(sb->workspace, "/") ? "/" : "", path) < 0)
		dst = NULL;
	if (!dst)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	n = strlen(dst);
	while (n > 1 && dst[n - 1] == '/')
		dst[--n] = '\0';
	src = realpath(dst, NULL);
	if (!src || stat(src, &st) < 0) {
		ah_fail_errno(err, errno, "cannot let '%s' into the sandbox",
			      dst);
		goto fail;
	}
	if (socket ? !S_ISSOCK(st.st_mode)
		   : !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		ah_fail(err, AH_EFORMAT, "cannot let '%s' into the sandbox: "
			"it is not %s", dst, socket ? "a unix socket"
						   : "a file or a directory");
		goto fail;
	}
	more = realloc(sb->allow, (sb->nallow + 1) * sizeof *more);
	if (!more) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto fail;
	}
	sb->allow = more;
	more[sb->nallow].src = src;
	more[sb->nallow].dst = dst;
	more[sb->nallow++].socket = socket;
	return 0;
fail:
	free(src);
	free(dst);
	return -1;
}

int
sandbox_init(struct sandbox *sb, enum sandbox_mode mode,
	     const char *workspace, const char *todo_path,
	     struct ah_error *err)
{
	static const char *const defaults[] = { ".agent" };
	size_t i;

	memset(sb, 0, sizeof *sb);
	sb->mode = mode;
	sb->watch_fd = -1;
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
	return sandbox_scan(sb, err);
}

int
sandbox_prepare(struct sandbox *sb, struct ah_error *err)
{
	const char *base = getenv("TMPDIR");
	char *t;

	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sandbox_scan(sb, err) < 0)
		return -1;
	if (sb->tmpdir)
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

/* rm -r of the entries of the directory dfd (closed here), however deep:
 * one directory open at a time, the names of the way down kept, and the
 * way back up taken by "..", checked against the directory it came from
 * (a tree moved meanwhile is left, not followed).  A directory that
 * cannot be removed is not entered twice. */
struct rm_up {
	char *name;     /* the directory entered, in its parent */
	dev_t dev;      /* the parent */
	ino_t ino;
};

static void
remove_tree(int dfd)
{
	struct rm_up *up = NULL, *more;
	struct stat st, pst, *skip = NULL, *sm;
	size_t depth = 0, cap = 0, nskip = 0, k;
	struct dirent *e;
	int cur = dfd, fd, parent, entered, dup_fd;
	DIR *d;

	for (;;) {
		dup_fd = dup(cur);
		d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
		if (!d) {
			if (dup_fd >= 0)
				close(dup_fd);
			break;
		}
		entered = 0;
		while (!entered && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			    unlinkat(cur, e->d_name, 0) == 0 ||
			    unlinkat(cur, e->d_name, AT_REMOVEDIR) == 0)
				continue;
			/* A directory, perhaps one a command made unreadable. */
			fchmodat(cur, e->d_name, 0700, 0);
			fd = openat(cur, e->d_name, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			for (k = 0; k < nskip && fstat(fd, &st) == 0 &&
			     !(skip[k].st_dev == st.st_dev &&
			       skip[k].st_ino == st.st_ino); k++)
				;
			if ((k < nskip) || fstat(cur, &pst) < 0) {
				close(fd);
				continue;
			}
			if (depth == cap) {
				more = realloc(up, (cap * 2 + 16) * sizeof *up);
				if (!more) {
					close(fd);
					continue;
				}
				up = more;
				cap = cap * 2 + 16;
			}
			up[depth].name = strdup(e->d_name);
			if (!up[depth].name) {
				close(fd);
				continue;
			}
			up[depth].dev = pst.st_dev;
			up[depth].ino = pst.st_ino;
			depth++;
			cur = fd;
			entered = 1;
		}
		closedir(d);
		if (entered)
			continue;
		if (!depth)
			break;
		/* emptied (or as empty as it gets): back up, and remove it */
		parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fstat(cur, &st) < 0 || parent < 0 || fstat(parent, &pst) < 0 ||
		    pst.st_dev != up[depth - 1].dev ||
		    pst.st_ino != up[depth - 1].ino) {
			if (parent >= 0)
				close(parent);
			break;
		}
		close(cur);
		cur = parent;
		depth--;
		if (unlinkat(cur, up[depth].name, AT_REMOVEDIR) < 0 &&
		    (sm = realloc(skip, (nskip + 1) * sizeof *skip))) {
			skip = sm;
			skip[nskip++] = st;
		}
		free(up[depth].name);
	}
	close(cur);
	while (depth)
		free(up[--depth].name);
	free(up);
	free(skip);
}

static void
free_git(struct sandbox_git *g, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(g[i].path);
	free(g);
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
			remove_tree(fd);
		rmdir(sb->tmpdir);
		free(sb->tmpdir);
	}
	for (i = 0; i < sb->nprotect; i++)
		free(sb->protect[i]);
	free(sb->protect);
	for (i = 0; i < sb->nallow; i++) {
		free(sb->allow[i].src);
		free(sb->allow[i].dst);
	}
	free(sb->allow);
	free_git(sb->git, sb->ngit);
	unwatch_all(sb);
	free(sb->workspace);
	memset(sb, 0, sizeof *sb);
}

/* --- .git */

/* A .git anywhere in the workspace runs its hooks and its configuration
 * (core.fsmonitor, core.pager, ...) at the user's next git command there,
 * outside the sandbox; so does a git directory a .git file points to.
 * Every one that exists before a command is kept read-only to it; one the
 * command creates is removed after it (sandbox_check_git). */

#define WALK_DEPTH 256 /* directories deeper are not searched */

static int beneath(const char *dir, const char *p);

/* What goes before a line added to b: a newline, unless b is empty or
 * ends with one. */
static const char *
sep(const struct buf *b)
{
	return b->len && b->data[b->len - 1] != '\n' ? "\n" : "";
}

static int
is_git_name(const char *name)
{
	return !strcasecmp(name, ".git");
}

int
sandbox_git_path(const char *rel)
{
	const char *p = rel, *end;
	size_t n;

	while (*p) {
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 4 && !strncasecmp(p, ".git", 4))
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

struct walk {
	struct sandbox *sb;
	struct sandbox_git *found; /* this walk's .git entries and targets */
	size_t nfound;
	int enforce;               /* remove the .git entries not in sb->git */
	struct buf *report;
	struct buf path;           /* the directory being read, absolute */
	int nomem;
};

/* --- watching the directories walked
 *
 * A walk of a large tree costs a lot (20,000 files: tens of ms), and it is
 * needed before and after every command.  So each directory a walk reads
 * is watched (inotify), and between two walks only what the events name
 * is looked at: a directory created or moved in is walked (and watched);
 * anything named .git (created, moved, removed, rewritten), a directory
 * moved away or renamed, a commondir in a git directory, an event lost
 * (the queue overflowed) or anything not understood is a whole walk
 * again.  The events of a command are all queued once its processes are
 * gone.  Where watching fails (no inotify, the limit of watches reached),
 * every check is a whole walk.  Watching is the caller's choice
 * (sb->watching, off by default): the kernel frees the watches only after
 * a grace period, and the close of the inotify, or the exit of the
 * process that holds it, waits for that (10-15 ms), which a process that
 * walks twice in its life pays for nothing. */

#define WATCH_DIR (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
		   IN_CLOSE_WRITE | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR)
#define WATCH_GIT (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
		   IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)

static void
unwatch_all(struct sandbox *sb)
{
	size_t i;

	if (sb->watch_fd >= 0)
		close(sb->watch_fd);
	sb->watch_fd = -1;
	for (i = 0; i < sb->nwatch; i++)
		free(sb->watch[i].path);
	free(sb->watch);
	sb->watch = NULL;
	sb->nwatch = 0;
}

static struct sandbox_watch *
find_watch(struct sandbox *sb, int wd)
{
	size_t lo = 0, hi = sb->nwatch, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (sb->watch[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sb->nwatch && sb->watch[lo].wd == wd ? &sb->watch[lo]
							  : NULL;
}

/* Watches the open directory fd, named path; git: a git directory.  A
 * failure ends all watching (every check is then a whole walk); -1 only
 * when memory ran out. */
static int
watch(struct sandbox *sb, int fd, const char *path, int git)
{
	struct sandbox_watch *wi, *more;
	char link[64];
	size_t i;
	int wd;

	if (sb->watch_fd < 0)
		return 0;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(sb->watch_fd, link, git ? WATCH_GIT : WATCH_DIR);
	if (wd < 0) {
		unwatch_all(sb);
		return 0;
	}
	wi = find_watch(sb, wd);
	if (!wi) {
		more = realloc(sb->watch, (sb->nwatch + 1) * sizeof *more);
		if (!more)
			return -1;
		sb->watch = more;
		/* wds only grow: in order, but for one seen again */
		for (i = sb->nwatch; i > 0 && more[i - 1].wd > wd; i--)
			more[i] = more[i - 1];
		wi = &more[i];
		wi->path = NULL;
		sb->nwatch++;
	}
	free(wi->path);
	wi->wd = wd;
	wi->git = git;
	wi->path = strdup(path);
	return wi->path ? 0 : -1;
}

/* Watches the git directories among sb->git[from..]. */
static int
watch_git(struct sandbox *sb, size_t from)
{
	size_t i;
	int fd, rc = 0;

	for (i = from; i < sb->ngit && !rc && sb->watch_fd >= 0; i++) {
		if (sb->git[i].kind == GIT_LINK)
			continue;
		fd = open(sb->git[i].path, O_RDONLY | O_DIRECTORY |
			  O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue; /* a .git file: its directory is watched */
		rc = watch(sb, fd, sb->git[i].path, 1);
		close(fd);
	}
	return rc;
}

static int
add_git(struct walk *w, const char *path, const struct stat *st, int kind)
{
	struct sandbox_git *more;
	size_t i;

	for (i = 0; i < w->nfound; i++)
		if (!strcmp(w->found[i].path, path)) {
			/* Found as a target first, then as an entry. */
			if (kind != GIT_TARGET)
				w->found[i].kind = kind;
			return 0;
		}
	more = realloc(w->found, (w->nfound + 1) * sizeof *more);
	if (!more)
		return -1;
	w->found = more;
	more[w->nfound].path = strdup(path);
	if (!more[w->nfound].path)
		return -1;
	more[w->nfound].dev = st->st_dev;
	more[w->nfound].ino = st->st_ino;
	more[w->nfound].kind = kind;
	w->nfound++;
	return 0;
}

/* The git directory path (resolved), when it lies in the workspace, and
 * the common directory its commondir file names. */
static int
add_target(struct walk *w, const char *path, int depth)
{
	char *real = realpath(path, NULL), *cd = NULL, *next = NULL;
	size_t len;
	struct stat st;
	int fd, rc = 0;

	if (!real)
		return errno == ENOMEM ? -1 : 0;
	if ((strcmp(real, w->sb->workspace) && !beneath(w->sb->workspace,
							real)) ||
	    stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		goto out;
	if (add_git(w, real, &st, GIT_TARGET) < 0) {
		rc = -1;
		goto out;
	}
	if (depth > 2 || asprintf(&cd, "%s/commondir", real) < 0)
		goto out;
	fd = open(cd, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		  O_CLOEXEC);
	free(cd);
	cd = NULL;
	if (fd < 0)
		goto out;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		struct ah_error e = { 0 };

		if (fd_read(fd, "commondir", 4096, &cd, &len, &e) < 0)
			cd = NULL;
	}
	close(fd);
	if (cd) {
		cd[strcspn(cd, "\r\n")] = '\0';
		if (*cd == '/')
			next = strdup(cd);
		else if (asprintf(&next, "%s/%s", real, cd) < 0)
			next = NULL;
		rc = next ? add_target(w, next, depth + 1) : -1;
	}
out:
	free(next);
	free(cd);
	free(real);
	return rc;
}

/* Renames the entry name of dfd to "name.refused-XXXXXX" (in aside). */
static int
move_aside(int dfd, const char *name, char *aside, size_t size)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[6];
	size_t i, n;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		n = (size_t)snprintf(aside, size, "%s.refused-", name);
		for (i = 0; i < sizeof r && n + 1 < size; i++)
			aside[n++] = set[r[i] % (sizeof set - 1)];
		aside[n] = '\0';
		if (renameat2(dfd, name, dfd, aside, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/* Makes the directory dfd searchable again, where it is ours and a
 * command took that away (mode 0600, say, which lets its names be read
 * but nothing in it be looked at): 1 if done. */
static int
searchable(int dfd)
{
	struct stat st;

	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 0700) == 0700)
		return 0;
	return fchmod(dfd, (st.st_mode & 07777) | 0700) == 0;
}

/* The .git entry name of the directory dfd (w->path): recorded, and what
 * it points to; or, when enforcing and it is new, removed. */
static int
found_git(struct walk *w, int dfd, const char *name)
{
	struct stat st;
	size_t i, keep = w->path.len;
	char *data = NULL, *target = NULL, aside[NAME_MAX + 1];
	size_t len;
	int fd, rc = -1, known = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	    (errno != EACCES || !w->enforce || !searchable(dfd) ||
	     fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)) {
		if (errno == ENOENT)
			return 0;
		/* A .git that cannot be looked at counts as changed: every
		 * check is a whole walk while it stays so, and after a
		 * command it is reported. */
		unwatch_all(w->sb);
		if (!w->enforce)
			return 0;
		return buf_printf(w->report, "%s[sandbox: '%s/%s' cannot be "
				  "looked at (%s): a .git there would run its "
				  "hooks and configuration at the user's next "
				  "git command, outside the sandbox; remove "
				  "it]", sep(w->report), w->path.data +
				  strlen(w->sb->workspace), name,
				  strerror(errno)) < 0 ? -1 : 0;
	}
	if (buf_printf(&w->path, "/%s", name) < 0)
		return -1;
	for (i = 0; i < w->sb->ngit; i++)
		if (w->sb->git[i].dev == st.st_dev &&
		    w->sb->git[i].ino == st.st_ino &&
		    !strcmp(w->sb->git[i].path, w->path.data))
			known = 1;
	if (w->enforce && !known) {
		/* Created (or replaced) by the command: moved aside, under
		 * a name git does not look for.  Never removed: what looks
		 * new may be the user's, made visible by the command. */
		if (move_aside(dfd, name, aside, sizeof aside) < 0)
			aside[0] = '\0';
		if (buf_printf(w->report, "%s[sandbox: '%s' was made by the "
			       "command: a .git there would run its hooks and "
			       "configuration at the user's next git command, "
			       "outside the sandbox; %s%s%s]", sep(w->report),
			       w->path.data + strlen(w->sb->workspace) +
			       (strcmp(w->sb->workspace, "/") != 0),
			       aside[0] ? "moved aside to '" :
			       "MOVING IT ASIDE FAILED, remove it",
			       aside, aside[0] ? "'" : "") < 0)
			goto out;
		rc = 0;
		goto out;
	}
	if (add_git(w, w->path.data, &st, S_ISLNK(st.st_mode) ? GIT_LINK :
		    GIT_ENTRY) < 0)
		goto out;
	if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) {
		rc = add_target(w, w->path.data, 0);
		goto out;
	}
	rc = 0;
	if (!S_ISREG(st.st_mode))
		goto out;
	/* A .git file: "gitdir: PATH", relative to its directory. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
	if (fd < 0)
		goto out;
	{
		struct ah_error e = { 0 };

		if (fd_read(fd, ".git", 4096, &data, &len, &e) < 0)
			data = NULL;
	}
	close(fd);
	if (!data || strncmp(data, "gitdir:", 7))
		goto out;
	data[strcspn(data, "\r\n")] = '\0';
	name = data + 7 + strspn(data + 7, " \t");
	w->path.len = keep;
	w->path.data[keep] = '\0';
	if (*name == '/')
		target = strdup(name);
	else if (asprintf(&target, "%s/%s", w->path.data, name) < 0)
		target = NULL;
	rc = target ? add_target(w, target, 0) : -1;
out:
	w->path.len = keep;
	w->path.data[keep] = '\0';
	free(data);
	free(target);
	return rc;
}

/* Reads the directory dfd (closed here), w->path, and those beneath. */
static int
walk_dir(struct walk *w, int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	size_t keep = w->path.len;
	int fd, isdir, rc = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	/* before it is read: what comes after is an event */
	if (watch(w->sb, dirfd(d), w->path.data, 0) < 0) {
		closedir(d);
		return -1;
	}
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (is_git_name(e->d_name)) {
			rc = found_git(w, dirfd(d), e->d_name);
			continue;
		}
		isdir = e->d_type == DT_DIR ||
			(e->d_type == DT_UNKNOWN &&
			 !fstatat(dirfd(d), e->d_name, &st,
				  AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode));
		if (!isdir || depth >= WALK_DEPTH)
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == EACCES && w->enforce &&
		    !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    st.st_uid == geteuid() &&
		    st.st_ctim.tv_sec + 1 >= w->sb->scanned.tv_sec) {
			/* Made unreadable by the command, perhaps to hide a
			 * .git: readable again, and searched. */
			fchmodat(dirfd(d), e->d_name, (st.st_mode & 07777) |
				 0700, 0);
			fd = openat(dirfd(d), e->d_name, O_RDONLY |
				    O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
				    O_CLOEXEC);
		}
		if (fd < 0) {
			/* a directory that cannot be looked into counts as
			 * changed: a whole walk at every check */
			if (errno != ENOENT)
				unwatch_all(w->sb);
			continue;
		}
		if (buf_printf(&w->path, "/%s", e->d_name) < 0) {
			close(fd);
			rc = -1;
			break;
		}
		rc = walk_dir(w, fd, depth + 1);
		w->path.len = keep;
		w->path.data[keep] = '\0';
	}
	closedir(d);
	return rc;
}

/* A walk from the directory path (the workspace, or one beneath it at
 * depth); the .git entries and targets found replace sb->git (whole), or
 * are added to it. */
static int
walk_from(struct sandbox *sb, const char *path, int depth, int whole,
	  int enforce, struct buf *report)
{
	struct sandbox_git *more;
	struct walk w = { 0 };
	struct timespec now;
	size_t i, j, from = whole ? 0 : sb->ngit;
	int fd, rc;

	w.sb = sb;
	w.enforce = enforce;
	w.report = report;
	w.path = (struct buf)BUF_INIT(0);
	clock_gettime(CLOCK_REALTIME, &now);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		  (whole ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return -1;
	if (buf_printf(&w.path, "%s", strcmp(path, "/") ? path : "") < 0) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	rc = walk_dir(&w, fd, depth);
	buf_free(&w.path);
	if (rc < 0) {
		free_git(w.found, w.nfound);
		errno = ENOMEM;
		return -1;
	}
	if (whole) {
		free_git(sb->git, sb->ngit);
		sb->git = w.found;
		sb->ngit = w.nfound;
		sb->scanned = now;
		return watch_git(sb, 0) < 0 ? (errno = ENOMEM, -1) : 0;
	}
	more = realloc(sb->git, (sb->ngit + w.nfound + 1) * sizeof *more);
	if (!more) {
		free_git(w.found, w.nfound);
		errno = ENOMEM;
		return -1;
	}
	sb->git = more;
	for (i = 0; i < w.nfound; i++) {
		for (j = 0; j < sb->ngit &&
		     strcmp(sb->git[j].path, w.found[i].path); j++)
			;
		if (j < sb->ngit)
			free(w.found[i].path); /* known */
		else
			sb->git[sb->ngit++] = w.found[i];
	}
	free(w.found);
	return watch_git(sb, from) < 0 ? (errno = ENOMEM, -1) : 0;
}

/* A whole walk of the workspace, its directories watched anew. */
static int
walk(struct sandbox *sb, int enforce, struct buf *report)
{
	unwatch_all(sb);
	if (sb->watching)
		sb->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	return walk_from(sb, sb->workspace, 0, 1, enforce, report);
}

/* How deep the directory path lies beneath the workspace. */
static int
depth_of(const struct sandbox *sb, const char *path)
{
	const char *p = path + strlen(sb->workspace);
	int n = 0;

	for (; *p; p++)
		n += *p == '/';
	return n;
}

/* Reads the events since the last check, and walks the directories they
 * name: 0 done, 1 a whole walk is needed, -1 (errno set) a failure. */
static int
changes(struct sandbox *sb, int enforce, struct buf *report)
{
	union {
		char buf[16384];
		struct inotify_event align;
	} u;
	const struct inotify_event *e;
	struct sandbox_watch *wi;
	struct buf todo = BUF_INIT(0); /* directories to walk, NUL after each */
	const char *p;
	ssize_t n, off;
	int whole = 0, rc = 0;

	if (sb->watch_fd < 0)
		return 1;
	for (;;) {
		n = read(sb->watch_fd, u.buf, sizeof u.buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			whole = 1;
			break;
		}
		for (off = 0; off < n; off += (ssize_t)(sizeof *e + e->len)) {
			e = (const struct inotify_event *)(u.buf + off);
			if (e->mask & IN_Q_OVERFLOW) {
				whole = 1;
				continue;
			}
			wi = find_watch(sb, e->wd);
			if (!wi)
				continue; /* its IN_IGNORED came first */
			if (e->mask & IN_IGNORED) {
				free(wi->path);
				memmove(wi, wi + 1, (size_t)(sb->watch +
					sb->nwatch - wi - 1) * sizeof *wi);
				sb->nwatch--;
				continue;
			}
			if (e->mask & IN_MOVE_SELF ||
			    (wi->git && e->mask & IN_DELETE_SELF)) {
				whole = 1; /* the paths beneath changed */
				continue;
			}
			if (!e->len || !e->name[0])
				continue;
			if (wi->git) {
				whole |= !strcmp(e->name, "commondir");
				continue;
			}
			if (is_git_name(e->name) ||
			    (e->mask & IN_ISDIR && e->mask & IN_MOVED_FROM)) {
				whole = 1;
				continue;
			}
			/* a directory made, moved in, or whose mode changed
			 * (readable again: what it hid is there now) */
			if (e->mask & IN_ISDIR &&
			    e->mask & (IN_CREATE | IN_MOVED_TO | IN_ATTRIB) &&
			    (buf_printf(&todo, "%s/%s", wi->path, e->name) < 0 ||
			     buf_putc(&todo, '\0') < 0)) {
				buf_free(&todo);
				errno = ENOMEM;
				return -1;
			}
		}
	}
	for (p = todo.data; !whole && !rc && p && p < todo.data + todo.len;
	     p += strlen(p) + 1) {
		if (depth_of(sb, p) > WALK_DEPTH)
			continue;
		if (walk_from(sb, p, depth_of(sb, p), 0, enforce, report) < 0) {
			if (errno == ENOMEM)
				rc = -1;
			else if (errno != ENOENT)
				whole = 1; /* unreadable, replaced, ... */
		}
	}
	buf_free(&todo);
	if (!rc && sb->watch_fd < 0)
		whole = 1; /* a watch failed: the events are not all there */
	return rc ? rc : whole;
}

int
sandbox_scan(struct sandbox *sb, struct ah_error *err)
{
	int r;

	if (sb->mode != SANDBOX_WORKSPACE_WRITE || sb->git_writable)
		return 0;
	r = changes(sb, 0, NULL);
	if (r > 0)
		r = walk(sb, 0, NULL);
	if (r < 0)
		return ah_fail_errno(err, errno, "cannot search '%s' for .git",
				     sb->workspace);
	return 0;
}

int
sandbox_check_git(struct sandbox *sb, struct buf *report)
{
	int r;

	if (sb->mode != SANDBOX_WORKSPACE_WRITE || sb->git_writable)
		return 0;
	r = changes(sb, 1, report);
	if (r > 0)
		r = walk(sb, 1, report);
	if (r < 0) {
		if (errno == ENOMEM)
			return -1;
		return buf_printf(report, "%s[sandbox: cannot search the "
				  "working directory for a new .git: %s]",
				  sep(report), strerror(errno));
	}
	return 0;
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

/* A mount namespace of our own, whose mounts do not propagate back;
 * *userns is set when it needed a user namespace too. */
static int
own_namespace(int *userns, struct ah_error *err)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int rc;

	*userns = 0;
	if (unshare(CLONE_NEWNS) < 0) {
		if (errno != EPERM)
			return ah_fail_errno(err, errno, "cannot create a "
					     "mount namespace");
		/* Without privilege: a user namespace of our own first,
		 * mapping us to ourselves.  Its maps are files of ours only
		 * while we are dumpable (the programs are not, against core
		 * files): for as long as they are written. */
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			return ah_fail_errno(err, errno, "cannot create a user "
					     "and mount namespace (are "
					     "unprivileged user namespaces "
					     "disabled?)");
		}
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid,
			 (unsigned)uid);
		rc = write_proc("/proc/self/setgroups", "deny", err) < 0 ||
		     write_proc("/proc/self/uid_map", map, err) < 0 ? -1 : 0;
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid,
			 (unsigned)gid);
		if (rc == 0)
			rc = write_proc("/proc/self/gid_map", map, err);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		if (rc < 0)
			return -1;
		*userns = 1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ah_fail_errno(err, errno, "cannot make the mounts "
				     "private");
	return 0;
}

/* Mounts p on itself, with what is mounted beneath it; read-only, all of
 * it, or not. */
static int
bind_self(const char *p, int rdonly, struct ah_error *err)
{
	struct mnt_attr ro = { MNT_ATTR_RDONLY, 0, 0, 0 };

	if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0)
		return ah_fail_errno(err, errno, "cannot bind-mount '%s'", p);
	if (rdonly && syscall(SYS_mount_setattr, AT_FDCWD, p,
			      MNT_AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &ro,
			      sizeof ro) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s' read-only",
				     p);
	return 0;
}

/* Makes every mount read-only but the write roots (the workspace in
 * workspace-write mode, the private temporary directory), which stay
 * writable and become nosuid.  Landlock refuses to create, write, remove
 * and rename outside the write roots, but not to change what is already
 * there: chmod, chown, utimes, setxattr (and truncate below Landlock ABI
 * 3).  A read-only mount refuses them all; device nodes (/dev/null, a
 * terminal) stay writable on it.  Each write root is copied (open_tree)
 * before / is made read-only, and the copy, made nosuid, is mounted back
 * on it. */
static int
read_only_but_roots(const struct sandbox *sb, struct ah_error *err)
{
	struct mnt_attr ro = { MNT_ATTR_RDONLY, 0, 0, 0 };
	struct mnt_attr nosuid = { MNT_ATTR_NOSUID, 0, 0, 0 };
	const char *roots[2], *t;
	int fds[2] = { -1, -1 }, rc = -1;
	size_t n = 0, i;

	if (sb->mode == SANDBOX_WORKSPACE_WRITE)
		roots[n++] = sb->workspace;
	if (sb->tmpdir)
		roots[n++] = sb->tmpdir;
	/* The outer one first: the temporary directory may lie inside the
	 * workspace. */
	if (n == 2 && strlen(roots[1]) < strlen(roots[0])) {
		t = roots[0];
		roots[0] = roots[1];
		roots[1] = t;
	}
	for (i = 0; i < n; i++) {
		fds[i] = (int)syscall(SYS_open_tree, AT_FDCWD, roots[i],
				      MNT_OPEN_TREE_CLONE | MNT_AT_RECURSIVE |
				      O_CLOEXEC);
		if (fds[i] < 0) {
			ah_fail_errno(err, errno, "cannot copy the mount of "
				      "'%s'", roots[i]);
			goto out;
		}
	}
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", MNT_AT_RECURSIVE, &ro,
		    sizeof ro) < 0) {
		ah_fail_errno(err, errno, "cannot make the file system "
			      "read-only");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (syscall(SYS_mount_setattr, fds[i], "", AT_EMPTY_PATH |
			    MNT_AT_RECURSIVE, &nosuid, sizeof nosuid) < 0) {
			ah_fail_errno(err, errno, "cannot make '%s' nosuid",
				      roots[i]);
			goto out;
		}
		if (syscall(SYS_move_mount, fds[i], "", AT_FDCWD, roots[i],
			    MNT_MOVE_F_EMPTY_PATH) < 0) {
			ah_fail_errno(err, errno, "cannot mount '%s' writable "
				      "again", roots[i]);
			goto out;
		}
	}
	rc = 0;
out:
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* Makes the existing protected paths read-only bind mounts, and every
 * directory between them and the workspace a mount point, which cannot
 * be renamed or removed. */
static int
protect_paths(const struct sandbox *sb, struct ah_error *err)
{
	struct stat st;
	char **done = NULL, **more, *a, *slash;
	const char *p;
	size_t i, j, ndone = 0, n = strlen(sb->workspace);
	int rc = -1;

	for (i = 0; i < sb->nprotect + sb->ngit; i++) {
		if (i < sb->nprotect)
			p = sb->protect[i];
		else if (sb->git_writable ||
			 sb->git[i - sb->nprotect].kind == GIT_LINK)
			continue; /* its target is in the list */
		else
			p = sb->git[i - sb->nprotect].path;
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
		for (slash = beneath(sb->workspace, p) ?
			     strchr(p + n + 1, '/') : NULL;
		     slash; slash = strchr(slash + 1, '/')) {
			for (j = 0; j < ndone &&
			     (strncmp(done[j], p, (size_t)(slash - p)) ||
			      done[j][slash - p]); j++)
				;
			if (j < ndone)
				continue;
			more = realloc(done, (ndone + 1) * sizeof *done);
			a = strndup(p, (size_t)(slash - p));
			if (more)
				done = more;
			if (!more || !a) {
				free(a);
				ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
				goto out;
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
	free(done);
	return rc;
}

/* --- the view: what a command sees
 *
 * The commands' file system is built afresh, as an allow-list (as
 * bubblewrap builds one): a tmpfs root, read-only, that holds copies of
 * the mounts of the system directories (read-only), the workspace and
 * the private temporary directory (writable, nosuid; the protected paths
 * in them read-only), a tmpfs /tmp of the session's own, a /dev of a few
 * devices, a new devpts and a tmpfs /dev/shm, /proc (over which each
 * call mounts the /proc of its own PID namespace), a short list of
 * harmless files of the home directory, read-only, and what the user
 * let in (--allow-read, --allow-socket).  Nothing else: /run, /var/run,
 * the host's /tmp, $XDG_RUNTIME_DIR, the rest of the home directory and
 * other users' are not there, and with them the sockets of the user's
 * daemons (tmux, D-Bus, docker, gpg-agent, ssh-agent) and the harness's
 * own (the policy server's).  The view is built under VIEW_AT, in the
 * helper's mount namespace, then made its root (pivot_root); the old
 * root is detached. */

#define VIEW_AT "/tmp"

/* Read-only, where they exist; a symbolic link (/bin -> usr/bin) is made
 * again as it is. */
static const char *const view_system[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc", "/opt", "/nix", "/sys",
};

/* Of the home directory, read-only, where they are files. */
static const char *const view_home[] = {
	".gitconfig", ".config/git/config", ".config/git/ignore",
	".config/git/attributes", ".editorconfig", ".inputrc",
};

static const char *const view_devices[] = {
	"null", "zero", "full", "random", "urandom", "tty",
};

struct view_mnt {
	char *dst;  /* where, in the view */
	char *link; /* a symbolic link to make there, or NULL */
	int fd;     /* else the copy of the mount to put there, or -1 */
	int file;   /* the copy is of a file, not a directory */
	int must;   /* a failure to place it is an error */
	int later;  /* placed after the system directories, through which
		       its path may lead (/bin/bash: /bin -> usr/bin) */
};

struct view {
	struct view_mnt *m;
	size_t n;
};

static void
view_free(struct view *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		free(v->m[i].dst);
		free(v->m[i].link);
		if (v->m[i].fd >= 0)
			close(v->m[i].fd);
	}
	free(v->m);
	v->m = NULL;
	v->n = 0;
}

/* Adds src, shown at dst: a copy of its mounts taken now (or, with
 * links, a symbolic link made again).  A src that is not there is
 * skipped unless must. */
static int
view_add(struct view *v, const char *src, const char *dst, int links,
	 int must, struct ah_error *err)
{
	struct view_mnt *more, *m;
	char target[PATH_MAX];
	struct stat st;
	ssize_t len;

	if (lstat(src, &st) < 0) {
		if (!must && (errno == ENOENT || errno == ENOTDIR ||
			      errno == EACCES))
			return 0;
		return ah_fail_errno(err, errno, "cannot show '%s' to the "
				     "commands", src);
	}
	more = realloc(v->m, (v->n + 1) * sizeof *more);
	if (!more)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	v->m = more;
	m = &more[v->n];
	memset(m, 0, sizeof *m);
	m->fd = -1;
	m->must = must;
	m->later = !links;
	m->file = !S_ISDIR(st.st_mode);
	m->dst = strdup(dst);
	if (!m->dst)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	v->n++;
	if (S_ISLNK(st.st_mode) && links) {
		len = readlink(src, target, sizeof target - 1);
		if (len < 0)
			return ah_fail_errno(err, errno, "cannot read the link "
					     "'%s'", src);
		target[len] = '\0';
		m->link = strdup(target);
		return m->link ? 0 : ah_fail(err, AH_ENOMEM, "%s",
					     strerror(ENOMEM));
	}
	m->fd = (int)syscall(SYS_open_tree, AT_FDCWD, src, MNT_OPEN_TREE_CLONE |
			     MNT_AT_RECURSIVE | O_CLOEXEC);
	if (m->fd < 0)
		return ah_fail_errno(err, errno, "cannot copy the mount of "
				     "'%s'", src);
	return 0;
}

/* Makes the directories of path (VIEW_AT and an absolute path) that are
 * missing, and, with file, an empty file at its end. */
static int
view_place(char *path, int file)
{
	char *slash;
	int fd;

	for (slash = strchr(path + strlen(VIEW_AT) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*slash = '/';
			return -1;
		}
		*slash = '/';
	}
	if (!file)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -1;
	close(fd);
	return 0;
}

/* The view's /tmp is writable: the directories made there to hold what
 * is shown beneath it (a workspace in /tmp, a home in /tmp) are not.
 * Each top one (VIEW_AT/tmp/NAME of path) becomes a read-only mount of
 * itself, which cannot be renamed either; what is then mounted in it
 * keeps its own mode. */
static int
view_seal(const char *path, struct ah_error *err)
{
	static const char tmp[] = VIEW_AT "/tmp/";
	struct mnt_attr ro = { MNT_ATTR_RDONLY, 0, 0, 0 };
	struct statvfs sv;
	const char *slash;
	char *top;
	int rc = 0;

	if (strncmp(path, tmp, sizeof tmp - 1))
		return 0;
	slash = strchr(path + sizeof tmp - 1, '/');
	top = slash ? strndup(path, (size_t)(slash - path)) : strdup(path);
	if (!top)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	/* sealed already */
	if (statvfs(top, &sv) == 0 && (sv.f_flag & ST_RDONLY))
		goto out;
	if (mount(top, top, NULL, MS_BIND, NULL) < 0 ||
	    syscall(SYS_mount_setattr, AT_FDCWD, top, AT_SYMLINK_NOFOLLOW, &ro,
		    sizeof ro) < 0)
		rc = ah_fail_errno(err, errno, "cannot make '%s' read-only",
				   top + strlen(VIEW_AT));
out:
	free(top);
	return rc;
}

static int
by_dst(const void *a, const void *b)
{
	const struct view_mnt *x = a, *y = b;

	if (x->later != y->later)
		return x->later - y->later;
	return strcmp(x->dst, y->dst);
}

static int
mount_tmpfs(const char *path, unsigned long flags, const char *opts,
	    struct ah_error *err)
{
	if (mount("tmpfs", path, "tmpfs", flags, opts) < 0)
		return ah_fail_errno(err, errno, "cannot mount a tmpfs on "
				     "'%s'", path);
	return 0;
}

/* A minimal /dev at path (VIEW_AT/dev): the devices of view_devices,
 * bound from the host's, the links to /proc/self/fd, a devpts of its
 * own (best effort) and a tmpfs /dev/shm. */
static int
view_dev(const char *path, struct ah_error *err)
{
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	};
	struct mnt_attr ro = { MNT_ATTR_RDONLY, 0, 0, 0 };
	char p[PATH_MAX], host[64];
	size_t i;
	int fd;

	if (mkdir(path, 0755) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s'", path);
	if (mount_tmpfs(path, MS_NOSUID | MS_NOEXEC, "mode=0755", err) < 0)
		return -1;
	for (i = 0; i < sizeof view_devices / sizeof *view_devices; i++) {
		snprintf(host, sizeof host, "/dev/%s", view_devices[i]);
		snprintf(p, sizeof p, "%s/%s", path, view_devices[i]);
		if (access(host, F_OK) < 0)
			continue;
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0)
			return ah_fail_errno(err, errno, "cannot make '%s'", p);
		close(fd);
		if (mount(host, p, NULL, MS_BIND, NULL) < 0)
			return ah_fail_errno(err, errno, "cannot bind-mount "
					     "'%s'", host);
	}
	for (i = 0; i < sizeof links / sizeof *links; i++) {
		snprintf(p, sizeof p, "%s/%s", path, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			return ah_fail_errno(err, errno, "cannot make '%s'", p);
	}
	/* Terminals of the commands' own (script, expect, a test's pty),
	 * none of the user's. */
	snprintf(p, sizeof p, "%s/pts", path);
	if (mkdir(p, 0755) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s'", p);
	if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") == 0) {
		snprintf(p, sizeof p, "%s/ptmx", path);
		if (symlink("pts/ptmx", p) < 0)
			return ah_fail_errno(err, errno, "cannot make '%s'", p);
	}
	snprintf(p, sizeof p, "%s/shm", path);
	if (mkdir(p, 01777) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s'", p);
	if (mount_tmpfs(p, MS_NOSUID | MS_NODEV, "mode=1777", err) < 0)
		return -1;
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, 0, &ro, sizeof ro) < 0)
		return ah_fail_errno(err, errno, "cannot make '%s' read-only",
				     path);
	return 0;
}

/* The entries of the view, their mounts copied before anything is
 * mounted over them. */
static int
view_collect(const struct sandbox *sb, struct view *v, struct ah_error *err)
{
	const char *home = getenv("HOME");
	char *path, *real;
	struct stat st;
	size_t i;
	int rc;

	for (i = 0; i < sizeof view_system / sizeof *view_system; i++)
		if (view_add(v, view_system[i], view_system[i], 1, 0, err) < 0)
			return -1;
	if (view_add(v, "/proc", "/proc", 0, 1, err) < 0 ||
	    view_add(v, sb->workspace, sb->workspace, 0, 1, err) < 0 ||
	    (sb->tmpdir && view_add(v, sb->tmpdir, sb->tmpdir, 0, 1, err) < 0))
		return -1;
	/* The name servers, where /etc/resolv.conf points elsewhere (to
	 * /run/systemd/resolve, say), when the network is allowed. */
	real = sb->network ? realpath("/etc/resolv.conf", NULL) : NULL;
	if (real && !beneath("/etc", real) && !stat(real, &st) &&
	    S_ISREG(st.st_mode) && view_add(v, real, real, 0, 0, err) < 0) {
		free(real);
		return -1;
	}
	free(real);
	for (i = 0; home && *home == '/' && home[1] &&
	     i < sizeof view_home / sizeof *view_home; i++) {
		if (asprintf(&path, "%s/%s", home, view_home[i]) < 0)
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		real = realpath(path, NULL);
		rc = 0;
		if (real && !stat(real, &st) && S_ISREG(st.st_mode))
			rc = view_add(v, real, path, 0, 0, err);
		free(real);
		free(path);
		if (rc < 0)
			return -1;
	}
	/* (what is in the workspace is there already, writable or not) */
	for (i = 0; i < sb->nallow; i++)
		if (strcmp(sb->allow[i].dst, sb->workspace) &&
		    !beneath(sb->workspace, sb->allow[i].dst) &&
		    view_add(v, sb->allow[i].src, sb->allow[i].dst, 0, 1,
			     err) < 0)
			return -1;
	return 0;
}

/* Builds the view and makes it the root (the working directory is
 * changed by the caller). */
static int
build_view(const struct sandbox *sb, struct ah_error *err)
{
	struct mnt_attr ro = { MNT_ATTR_RDONLY, 0, 0, 0 };
	struct view v = { NULL, 0 };
	const char *home = getenv("HOME");
	char *p = NULL;
	size_t i;
	int pass, rc = -1;

	if (!strcmp(sb->workspace, "/"))
		return ah_fail(err, AH_EIO, "the sandbox cannot show the "
			       "commands / as their workspace and hide the "
			       "rest");
	if (view_collect(sb, &v, err) < 0)
		goto out;
	qsort(v.m, v.n, sizeof *v.m, by_dst);
	if (mount_tmpfs(VIEW_AT, MS_NOSUID | MS_NODEV, "mode=0755", err) < 0)
		goto out;
	if (mkdir(VIEW_AT "/tmp", 01777) < 0) {
		ah_fail_errno(err, errno, "cannot make /tmp in the view");
		goto out;
	}
	if (mount_tmpfs(VIEW_AT "/tmp", MS_NOSUID | MS_NODEV, "mode=1777",
			err) < 0 || view_dev(VIEW_AT "/dev", err) < 0)
		goto out;
	/* An empty home (best effort), and the places in /tmp first; then
	 * those in /tmp sealed. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i <= v.n; i++) {
			free(p);
			p = NULL;
			if (i == v.n ? !home || *home != '/' || !home[1] :
			    v.m[i].link || !beneath("/tmp", v.m[i].dst))
				continue;
			if (asprintf(&p, VIEW_AT "%s", i == v.n ? home :
				     v.m[i].dst) < 0) {
				p = NULL;
				ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
				goto out;
			}
			if (pass == 0)
				view_place(p, i < v.n && v.m[i].file);
			else if (!access(p, F_OK) && view_seal(p, err) < 0)
				goto out;
		}
	for (i = 0; i < v.n; i++) {
		free(p);
		if (asprintf(&p, VIEW_AT "%s", v.m[i].dst) < 0) {
			p = NULL;
			ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
			goto out;
		}
		if (v.m[i].link) {
			if (symlink(v.m[i].link, p) < 0 && v.m[i].must) {
				ah_fail_errno(err, errno, "cannot make '%s'",
					      v.m[i].dst);
				goto out;
			}
			continue;
		}
		if (view_place(p, v.m[i].file) < 0 ||
		    syscall(SYS_move_mount, v.m[i].fd, "", AT_FDCWD, p,
			    MNT_MOVE_F_EMPTY_PATH) < 0) {
			if (!v.m[i].must)
				continue;
			ah_fail_errno(err, errno, "cannot show '%s' to the "
				      "commands", v.m[i].dst);
			goto out;
		}
	}
	if (syscall(SYS_mount_setattr, AT_FDCWD, VIEW_AT, 0, &ro,
		    sizeof ro) < 0) {
		ah_fail_errno(err, errno, "cannot make the commands' root "
			      "read-only");
		goto out;
	}
	/* The view becomes the root; the old one, stacked on it, goes. */
	if (chdir(VIEW_AT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		ah_fail_errno(err, errno, "cannot make the commands' view "
			      "their root");
		goto out;
	}
	rc = 0;
out:
	free(p);
	view_free(&v);
	return rc;
}

/* The mount namespace of the commands: all read-only but the write
 * roots, and in those the protected paths; checked against snap (0, or
 * 1 when what is protected changed since), then the view built from it.
 * The working directory is looked up again, in the view. */
static int
confine_mounts(const struct sandbox *sb, const struct buf *snap, int *userns,
	       struct ah_error *err)
{
	char *cwd;
	int rc;

	if (own_namespace(userns, err) < 0 || read_only_but_roots(sb, err) < 0 ||
	    (sb->mode == SANDBOX_WORKSPACE_WRITE && protect_paths(sb, err) < 0))
		return -1;
	rc = snap ? sandbox_verify(sb, snap, err) : 0;
	if (rc)
		return rc;
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return ah_fail_errno(err, errno, "cannot find the working "
				     "directory");
	rc = build_view(sb, err);
	if (rc == 0 && chdir(cwd) < 0)
		rc = ah_fail_errno(err, errno, "cannot change to '%s'", cwd);
	free(cwd);
	return rc;
}

/* --- capabilities */

/* Empties the bounding set, so that no exec can gain a capability back;
 * the helper keeps its own (it still mounts and creates namespaces). */
static void
drop_bounding(void)
{
	int cap;

	/* Without CAP_SETPCAP this fails, but then there is nothing in the
	 * bounding set that no_new_privs does not already keep out. */
	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno == EINVAL)
			break;
}

static int
drop_capabilities(struct ah_error *err)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
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

/* The Landlock ruleset of the sandbox, built (not enforced): its fd, or
 * -1. */
static int
landlock_ruleset(const struct sandbox *sb, struct ah_error *err)
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

/* A /proc of the command's own PID namespace (called by its pid 1, in a
 * mount namespace of the call's own): ps and pgrep work there (with the
 * host's /proc they fail, "lookup self"), and the harness's processes are
 * not in it.  Where the kernel refuses the mount, the command does not
 * run: the /proc beneath is the host's, whose /proc/PID/root leads to
 * the files and sockets of every process of the user. */
int
sandbox_fresh_proc(struct ah_error *err)
{
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return ah_fail_errno(err, errno, "cannot mount the /proc of "
				     "the command's PID namespace");
	return 0;
}

int
sandbox_setup(const struct sandbox *sb, const struct buf *snap, int *ruleset,
	      int *userns, struct ah_error *err)
{
	int r;

	*ruleset = -1;
	*userns = 0;
	if (sb->mode == SANDBOX_OFF)
		return 0;
	r = confine_mounts(sb, snap, userns, err);
	if (r)
		return r;
	/* System V shared memory, semaphores and message queues, and POSIX
	 * message queues, of the session's own: the user's are not seen,
	 * and what the commands leave goes with the helper. */
	if (unshare(CLONE_NEWIPC) < 0)
		return ah_fail_errno(err, errno, "cannot create an IPC "
				     "namespace");
	/* Abstract unix sockets (which have no file to hide) are out of
	 * reach by Landlock's scope; a kernel without it gets a network
	 * namespace of its own, when the network is not allowed. */
	if (sb->abi < 6 && !sb->network && unshare(CLONE_NEWNET) < 0)
		return ah_fail_errno(err, errno, "cannot create a network "
				     "namespace");
	drop_bounding();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ah_fail_errno(err, errno, "cannot set no_new_privs");
	if (seccomp(sb, err) < 0)
		return -1;
	*ruleset = landlock_ruleset(sb, err);
	return *ruleset < 0 ? -1 : 0;
}

int
sandbox_restrict(const struct sandbox *sb, int ruleset, struct ah_error *err)
{
	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (drop_capabilities(err) < 0)
		return -1;
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return ah_fail_errno(err, errno, "landlock: cannot restrict "
				     "the process");
	close(ruleset);
	return 0;
}

/* --- what the helper protects */

/* One path's part of a snapshot: whether it is there, and what. */
struct snap_entry {
	int exists;
	dev_t dev;
	ino_t ino;
	mode_t mode;
};

static int
snap_path(struct buf *out, const char *path)
{
	struct snap_entry e;
	struct stat st;

	memset(&e, 0, sizeof e);
	if (lstat(path, &st) == 0) {
		e.exists = 1;
		e.dev = st.st_dev;
		e.ino = st.st_ino;
		e.mode = st.st_mode & S_IFMT;
	} else if (errno != ENOENT && errno != ENOTDIR) {
		e.exists = -errno; /* not known: never equal to a later one */
	}
	if (buf_printf(out, "%s", path) < 0 || buf_putc(out, '\0') < 0)
		return -1;
	return buf_append(out, (const char *)&e, sizeof e);
}

int
sandbox_snapshot(const struct sandbox *sb, struct buf *out)
{
	size_t i;

	out->len = 0;
	if (snap_path(out, sb->workspace) < 0 ||
	    (sb->tmpdir && snap_path(out, sb->tmpdir) < 0))
		return -1;
	for (i = 0; i < sb->nprotect; i++)
		if (snap_path(out, sb->protect[i]) < 0)
			return -1;
	for (i = 0; i < sb->ngit && !sb->git_writable; i++)
		if (snap_path(out, sb->git[i].path) < 0)
			return -1;
	return 0;
}

/* Is the mount the path p lies on read-only (1), or not (0)? */
static int
on_read_only(const char *p)
{
	struct statvfs v;

	return statvfs(p, &v) == 0 && (v.f_flag & ST_RDONLY);
}

int
sandbox_verify(const struct sandbox *sb, const struct buf *snap,
	       struct ah_error *err)
{
	struct buf now = BUF_INIT(0);
	const char *p;
	size_t i, n = sb->nprotect + (sb->git_writable ? 0 : sb->ngit);
	int rc = 0;

	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sandbox_snapshot(sb, &now) < 0) {
		buf_free(&now);
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	}
	/* changed since the caller looked: set up again */
	rc = now.len != snap->len || memcmp(now.data, snap->data, now.len);
	buf_free(&now);
	if (rc)
		return 1;
	/* What is protected, as the commands will see it. */
	if (sb->mode == SANDBOX_WORKSPACE_WRITE &&
	    on_read_only(sb->workspace))
		return ah_fail(err, AH_EIO, "'%s' is read-only in the sandbox",
			       sb->workspace);
	for (i = 0; i < n && sb->mode == SANDBOX_WORKSPACE_WRITE; i++) {
		p = i < sb->nprotect ? sb->protect[i]
				     : sb->git[i - sb->nprotect].path;
		if (i >= sb->nprotect && sb->git[i - sb->nprotect].kind ==
		    GIT_LINK)
			continue; /* its target is in the list */
		if (access(p, F_OK) < 0 && (errno == ENOENT ||
					    errno == ENOTDIR))
			continue;
		if (!on_read_only(p))
			return ah_fail(err, AH_EIO, "'%s' is not read-only in "
				       "the sandbox", p);
	}
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

/* Is the open directory dirfd, as the kernel names it, in a .git of the
 * workspace?  1 if so, 0 if not, -1 with errno set. */
static int
in_git(const struct sandbox *sb, int dirfd)
{
	char link[64], real[PATH_MAX];
	size_t n = strlen(sb->workspace);
	ssize_t len;

	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	len = readlink(link, real, sizeof real - 1);
	if (len < 0)
		return -1;
	real[len] = '\0';
	if (!strcmp(sb->workspace, "/"))
		n = 0;
	if (strncmp(real, sb->workspace, n) || (real[n] && real[n] != '/'))
		return 0;
	return sandbox_git_path(real + n);
}

int
sandbox_may_write(const struct sandbox *sb, int dirfd, const char *name,
		  char *msg, size_t size)
{
	struct stat ws, dir, entry, *ep = NULL;
	struct guard *g;
	size_t i, n;
	int fd, next, depth, r, rc = 0;

	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sb->mode == SANDBOX_READ_ONLY) {
		snprintf(msg, size, "the sandbox is read-only (tool-exec "
			 "--sandbox read-only)");
		return 1;
	}
	if (sb->git_writable)
		goto guards;
	if (is_git_name(name)) {
		snprintf(msg, size, "a .git is kept read-only by the sandbox, "
			 "and none may be created: git would run its hooks and "
			 "configuration outside the sandbox");
		return 1;
	}
	r = in_git(sb, dirfd);
	if (r) {
		if (r > 0)
			snprintf(msg, size, "what is in a .git is kept read-only "
				 "by the sandbox");
		return r;
	}
guards:
	if (stat(sb->workspace, &ws) < 0)
		return -1;
	n = sb->nprotect + (sb->git_writable ? 0 : sb->ngit);
	g = calloc(n ? n : 1, sizeof *g);
	if (!g)
		return -1;
	for (i = 0; i < n; i++)
		if (look_up(i < sb->nprotect ? sb->protect[i] :
			    sb->git[i - sb->nprotect].path, &g[i]) < 0) {
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
		for (i = 0; i < n; i++)
			if (hits(&g[i], &dir, depth ? NULL : name,
				 depth ? NULL : ep)) {
				snprintf(msg, size, "'%s' is kept read-only by "
					 "the sandbox", i < sb->nprotect ?
					 sb->protect[i] :
					 sb->git[i - sb->nprotect].path);
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
