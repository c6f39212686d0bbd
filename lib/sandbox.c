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
 * starts a new helper whenever it changed (sandbox_snapshot).
 *
 * The files, one job each: sandbox.c (this: the sandbox's paths, its
 * setup in the helper, what the helper protects, the file tools' check),
 * gitwalk.c (every .git of the workspace, found and watched), mountview.c
 * (the mount namespace and the view a command sees), landlock.c (the
 * ruleset), seccomp.c (the filter, the capabilities dropped); what they
 * share is in priv.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "priv.h"

/* The state directory (AGENT_STATE_DIR, where a session is kept outside
 * the workspace) needs nothing here: state_dir_check refuses it inside
 * the workspace (but for WORKSPACE/.agent, protected below), so it lies
 * outside the write roots, read-only like every mount there, and is not
 * in the commands' view (mountview.c) unless --allow-read lets it in,
 * read-only. */

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
	sb->abi = sb_landlock_abi();
	if (sb->abi < 1)
		return ah_fail(err, AH_EIO, "the sandbox needs Landlock, which "
			       "this kernel does not offer (%s)",
			       strerror(errno));
	if (!sb_seccomp_arch())
		return ah_fail(err, AH_EIO, "the sandbox's seccomp filter does "
			       "not know this architecture");
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

void
sb_free_git(struct sandbox_git *g, size_t n)
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
	sb_free_git(sb->git, sb->ngit);
	sb_unwatch_all(sb);
	free(sb->workspace);
	memset(sb, 0, sizeof *sb);
}

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
	r = sb_confine_mounts(sb, snap, userns, err);
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
	sb_drop_bounding();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ah_fail_errno(err, errno, "cannot set no_new_privs");
	if (sb_seccomp(sb, err) < 0)
		return -1;
	*ruleset = sb_landlock_ruleset(sb, err);
	return *ruleset < 0 ? -1 : 0;
}

int
sandbox_restrict(const struct sandbox *sb, int ruleset, struct ah_error *err)
{
	if (sb->mode == SANDBOX_OFF)
		return 0;
	if (sb_drop_capabilities(err) < 0)
		return -1;
	return sb_landlock_enforce(ruleset, err);
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
	char real[PATH_MAX];
	const char *rest;
	int r = fd_path_beneath(dirfd, sb->workspace, real, sizeof real, &rest);

	return r <= 0 ? r : sandbox_git_path(rest);
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
	if (sb_is_git_name(name)) {
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
