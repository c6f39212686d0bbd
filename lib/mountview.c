/* mountview.c: the sandbox's mount namespace and the view a command sees
 * (see sandbox.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
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

/* --- the mount namespace */

/* Is p strictly beneath the directory dir? */
int
sb_beneath(const char *dir, const char *p)
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
		for (slash = sb_beneath(sb->workspace, p) ?
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
	if (real && !sb_beneath("/etc", real) && !stat(real, &st) &&
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
		    !sb_beneath(sb->workspace, sb->allow[i].dst) &&
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
			    v.m[i].link || !sb_beneath("/tmp", v.m[i].dst))
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
int
sb_confine_mounts(const struct sandbox *sb, const struct buf *snap,
		  int *userns, struct ah_error *err)
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
