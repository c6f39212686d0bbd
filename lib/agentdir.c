/* agentdir.c: the harness's own files (a transcript, the audit log),
 * opened without following symbolic links.
 *
 * A repository can ship .agent/audit.jsonl as a link to ~/.bashrc, or
 * .agent itself as a link to ~/.ssh: whatever the harness appends to its
 * log would land there.  So from the component named ".agent" on, each
 * directory is opened with O_DIRECTORY|O_NOFOLLOW beneath the one before
 * it, and the file with O_NOFOLLOW beneath the last; only what comes
 * before .agent (the working directory, which the user chose) is
 * resolved as usual.  A file that is not a regular file (a FIFO would
 * hang us, a device would take our writes) is refused before it is
 * opened, and again after, on the descriptor, for a swap in between. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

static const char *
kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISREG(m))
		return "a regular file";
	return "of an unknown type";
}

/* The message for an entry of type m at shown (the path up to it). */
static int
refuse(struct ah_error *err, const char *what, const char *path,
       const char *shown, mode_t m, int inside)
{
	int same = !strcmp(path, shown);

	if (S_ISLNK(m))
		return ah_fail(err, AH_EFORMAT, "cannot open %s'%s': %s%s%sis "
			       "a symbolic link, %s", what, path,
			       same ? "" : "'", same ? "" : shown,
			       same ? "it " : "' ", inside ? "and nothing "
			       "under .agent is opened through one"
			       : "not followed");
	return ah_fail(err, AH_EFORMAT, "cannot open %s'%s': %s%s%sis %s, "
		       "not a regular file", what, path, same ? "" : "'",
		       same ? "" : shown, same ? "it " : "' ", kind(m));
}

/* Opens the last component name beneath dfd: refused when it is a link
 * or not a regular file, before and after the open. */
static int
open_file(int dfd, const char *name, const char *what, const char *path,
	  int flags, mode_t mode, int inside, struct ah_error *err)
{
	struct stat st;
	int fd, fl;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode))
		return refuse(err, what, path, path, st.st_mode, inside);
	/* O_NONBLOCK: a FIFO swapped in after the check must not hang the
	 * open; O_NOCTTY: nor may a terminal become ours */
	fd = openat(dfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == ELOOP &&
		    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			return refuse(err, what, path, path, st.st_mode, inside);
		return ah_fail_errno(err, errno, "cannot open %s'%s'", what,
				     path);
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return ah_fail_errno(err, e, "cannot open %s'%s'", what, path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(err, what, path, path, st.st_mode, inside);
	}
	/* A file under .agent that we write has no other name: an archive
	 * (tar keeps hard links) can ship .agent/audit.jsonl as another
	 * name of a file of the workspace, through which the commands of a
	 * session (to which .agent is read-only) would rewrite what we
	 * log. */
	if (inside && (flags & (O_WRONLY | O_RDWR)) && st.st_nlink != 1) {
		close(fd);
		return ah_fail(err, AH_EFORMAT, "cannot open %s'%s': it has "
			       "%ju names (hard links), and what is written "
			       "there could be rewritten through another one: "
			       "remove it", what, path,
			       (uintmax_t)st.st_nlink);
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		return ah_fail_errno(err, e, "cannot open %s'%s'", what, path);
	}
	return fd;
}

/* The length of AGENT_STATE_DIR without its trailing slashes, when it is
 * an absolute path other than "/"; else 0. */
static size_t
state_env(const char **dir)
{
	const char *e = getenv("AGENT_STATE_DIR");
	size_t n;

	if (!e || *e != '/')
		return 0;
	n = strlen(e);
	while (n > 1 && e[n - 1] == '/')
		n--;
	*dir = e;
	return n > 1 ? n : 0;
}

/* Where the walk without links begins: the offset of the state
 * directory's last component when path is it or beneath it (as spelled
 * in AGENT_STATE_DIR, which is how state_path spells it; *state set),
 * else of the first component of path named ".agent", else -1. */
static long
agent_component(const char *path, int *state)
{
	const char *p = path, *sd = NULL;
	size_t len = state_env(&sd);

	*state = 0;
	if (len && !strncmp(path, sd, len) && (path[len] == '/' ||
						!path[len])) {
		while (sd[len - 1] != '/')
			len--;
		*state = 1;
		return (long)len;
	}
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 6 && !memcmp(p, ".agent", 6))
			return (long)(p - path);
		p += n;
		while (*p == '/')
			p++;
	}
	return -1;
}

int
agent_path_inside(const char *path)
{
	int state;

	return agent_component(path, &state) >= 0;
}

/* The directory of path's last component (the whole of path when
 * whole), as an O_PATH descriptor: from the component named .agent (or
 * the state directory, when state) on (at, its offset), each directory
 * is opened beneath the one before without following a link, ".."
 * refused; with create, a missing one is made (.agent 0777, the state
 * directory and those under either 0700, less the umask).  *last is set
 * to the last component (unless whole).  -1 on error. */
static int
walk(const char *path, long at, int state, const char *what, int create,
     int whole, const char **last, struct ah_error *err)
{
	char shown[PATH_MAX], *dir = NULL;
	const char *p, *slash;
	int dfd, next;
	size_t n;

	/* what comes before .agent is resolved as usual */
	if (at == 0)
		dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else {
		dir = strndup(path, (size_t)at);
		if (!dir)
			return ah_fail(err, AH_ENOMEM, "out of memory");
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(dir);
	}
	if (dfd < 0)
		return ah_fail_errno(err, errno, "cannot open %s'%s'", what, path);
	p = path + at;
	while (*p) {
		n = strcspn(p, "/");
		slash = p + n;
		while (*slash == '/')
			slash++;
		memcpy(shown, path, (size_t)(p - path) + n);
		shown[(p - path) + n] = '\0';
		if (!whole && !*slash && (n != 1 || *p != '.')) {
			*last = p; /* p is the file */
			return dfd;
		}
		if (n == 2 && !memcmp(p, "..", 2)) {
			ah_fail(err, AH_EFORMAT, "cannot open %s'%s': '..' under "
				".agent is refused", what, path);
			goto fail;
		}
		if (!whole && !*slash) {
			ah_fail(err, AH_EFORMAT, "cannot open %s'%s': it names "
				"a directory", what, path);
			goto fail;
		}
		if (n == 1 && *p == '.') {
			p = slash;
			continue;
		}
		{
			char comp[NAME_MAX + 1];
			struct stat st;

			if (n > NAME_MAX) {
				ah_fail_errno(err, ENAMETOOLONG, "cannot open "
					      "%s'%s'", what, path);
				goto fail;
			}
			memcpy(comp, p, n);
			comp[n] = '\0';
			next = openat(dfd, comp, O_PATH | O_DIRECTORY |
				      O_NOFOLLOW | O_CLOEXEC);
			/* the directories a new file needs are made here,
			 * beneath the one before, never through a link */
			if (next < 0 && errno == ENOENT && create) {
				if (mkdirat(dfd, comp, p == path + at &&
					    !state ? 0777 : 0700) < 0 &&
				    errno != EEXIST) {
					ah_fail_errno(err, errno, "cannot create "
						      "'%s'", shown);
					goto fail;
				}
				next = openat(dfd, comp, O_PATH | O_DIRECTORY |
					      O_NOFOLLOW | O_CLOEXEC);
			}
			if (next < 0) {
				int e = errno;

				if ((e == ELOOP || e == ENOTDIR) &&
				    fstatat(dfd, comp, &st,
					    AT_SYMLINK_NOFOLLOW) == 0 &&
				    !S_ISDIR(st.st_mode)) {
					if (S_ISLNK(st.st_mode))
						refuse(err, what, path, shown,
						       st.st_mode, 1);
					else
						ah_fail(err, AH_EFORMAT, "cannot "
							"open %s'%s': '%s' is %s, "
							"not a directory", what,
							path, shown,
							kind(st.st_mode));
				} else
					ah_fail_errno(err, e, "cannot open "
						      "%s'%s'", what, path);
				goto fail;
			}
		}
		close(dfd);
		dfd = next;
		p = slash;
	}
	if (!whole) {
		ah_fail(err, AH_EFORMAT, "cannot open %s'%s': it names a "
			"directory", what, path);
		goto fail;
	}
	return dfd;
fail:
	n = (size_t)errno; /* the caller may look at errno (ENOENT) */
	close(dfd);
	errno = (int)n;
	return -1;
}

int
agent_open(const char *path, const char *what, int flags, mode_t mode,
	   struct ah_error *err)
{
	char *dir = NULL;
	int state, dfd = -1, fd = -1;
	long at = agent_component(path, &state);
	const char *slash, *last = NULL;
	size_t n;

	if (!what)
		what = "";
	if (strlen(path) >= PATH_MAX)
		return ah_fail(err, AH_EFORMAT, "cannot open %s'%.200s...': "
			       "the path is too long", what, path);
	if (at < 0) {
		/* a file the user named elsewhere: its last component */
		slash = strrchr(path, '/');
		if (!slash)
			return open_file(AT_FDCWD, path, what, path, flags, mode,
					 0, err);
		if (!slash[1])
			return ah_fail(err, AH_EFORMAT, "cannot open %s'%s': "
				       "it names a directory", what, path);
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
		if (!dir)
			return ah_fail(err, AH_ENOMEM, "out of memory");
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(dir);
		if (dfd < 0)
			return ah_fail_errno(err, errno, "cannot open %s'%s'",
					     what, path);
		fd = open_file(dfd, slash + 1, what, path, flags, mode, 0, err);
		close(dfd);
		return fd;
	}
	dfd = walk(path, at, state, what, (flags & O_CREAT) != 0, 0, &last,
		   err);
	if (dfd < 0)
		return -1;
	n = strcspn(last, "/");
	if (n > NAME_MAX)
		ah_fail_errno(err, ENAMETOOLONG, "cannot open %s'%s'", what,
			      path);
	else if (n == 2 && !memcmp(last, "..", 2))
		ah_fail(err, AH_EFORMAT, "cannot open %s'%s': '..' under "
			".agent is refused", what, path);
	else {
		char name[NAME_MAX + 1];

		memcpy(name, last, n);
		name[n] = '\0';
		fd = open_file(dfd, name, what, path, flags, mode, 1, err);
	}
	n = (size_t)errno; /* the caller may look at errno (ENOENT) */
	close(dfd);
	errno = (int)n;
	return fd;
}

int
agent_open_dir(const char *path, int create, struct ah_error *err)
{
	int state, dfd, fd;
	long at = agent_component(path, &state);

	if (strlen(path) >= PATH_MAX)
		return ah_fail(err, AH_EFORMAT, "cannot open '%.200s...': the "
			       "path is too long", path);
	if (at < 0) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return ah_fail_errno(err, errno, "cannot open directory "
					     "'%s'", path);
		return fd;
	}
	dfd = walk(path, at, state, "", create, 1, NULL, err);
	if (dfd < 0)
		return -1;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		ah_fail_errno(err, errno, "cannot open directory '%s'", path);
	close(dfd);
	return fd;
}

/* --- the state directory ------------------------------------------------
 *
 * Where a session is kept: WORKSPACE/.agent, or the directory that
 * AGENT_STATE_DIR names (agent-run --state-dir), which then plays its
 * role for everything the harness writes (transcripts, records, the
 * lock, the audit log, snapshots, plan mode's plan and todo list); what
 * the project ships as configuration (.agent/policy.json, .agent/skills)
 * stays in the workspace.  Such a directory is the user's and the
 * session's alone, so it is refused unless (fail closed): it is an
 * absolute path; it is not a symbolic link, and a link beneath it is
 * never followed (agent_open); it belongs to the user and is not
 * writable by its group or others; each directory above it (once the
 * links above it are resolved, as those before .agent are) belongs to
 * the user or root and is not writable by others unless sticky (/tmp),
 * so that nobody else can put another directory in its place; it is
 * neither inside the workspace (but for WORKSPACE/.agent itself, which
 * is the default) nor around it.  One state directory serves one
 * workspace (two would mix their sessions and locks): its file
 * "workspace" names the physical path of the one it serves, written
 * when the directory is made, or taken up while it is still empty; a
 * directory that is not empty and has no such file is not a state
 * directory and is refused. */

#define STATE_MARK "workspace"

const char *
state_dir(void)
{
	static char dir[PATH_MAX];
	const char *e = getenv("AGENT_STATE_DIR"), *sd;
	size_t n;

	if (!e || !*e)
		return ".agent";
	n = state_env(&sd);
	if (!n || n >= sizeof dir)
		return e; /* refused by state_dir_check */
	memcpy(dir, sd, n);
	dir[n] = '\0';
	return dir;
}

int
state_dir_given(void)
{
	const char *e = getenv("AGENT_STATE_DIR");

	return e && *e;
}

int
state_path(char *buf, size_t size, const char *name, struct ah_error *err)
{
	int n = snprintf(buf, size, "%s/%s", state_dir(), name);

	if (n < 0 || (size_t)n >= size)
		return ah_fail(err, AH_EFORMAT, "'%s/%s': the path is too long",
			       state_dir(), name);
	return 0;
}

/* Each directory from / down to dir (a physical path) belongs to the
 * user or root, and is not writable by its group or others unless it is
 * sticky. */
static int
safe_above(const char *shown, const char *dir, struct ah_error *err)
{
	char p[PATH_MAX];
	struct stat st;
	size_t i, n = strlen(dir);

	for (i = 1; i <= n; i++) {
		if (i < n && dir[i] != '/')
			continue;
		memcpy(p, dir, i);
		p[i] = '\0';
		if (stat(p, &st) < 0)
			return ah_fail_errno(err, errno, "cannot use '%s' as the "
					     "state directory: '%s'", shown, p);
		if (st.st_uid != 0 && st.st_uid != geteuid())
			return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the "
				       "state directory: '%s' above it belongs "
				       "to another user (uid %lu)", shown, p,
				       (unsigned long)st.st_uid);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    !(st.st_mode & S_ISVTX))
			return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the "
				       "state directory: '%s' above it is "
				       "writable by others (group or world, "
				       "not sticky)", shown, p);
	}
	return 0;
}

/* Is the directory dfd empty? 1 yes, 0 no, -1 error (errno). */
static int
empty_dir(int dfd)
{
	struct dirent *de;
	DIR *d;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 1;

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			rc = 0;
			break;
		}
	closedir(d);
	return rc;
}

/* The workspace that the state directory dfd serves, in have: 1 when
 * its mark is there, 0 when it is not, -1 with err. */
static int
read_mark(int dfd, const char *shown, char *have, size_t size,
	  struct ah_error *err)
{
	struct stat st;
	ssize_t got;
	int fd = openat(dfd, STATE_MARK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: its '" STATE_MARK "' is not a "
			       "regular file", shown);
	}
	got = read(fd, have, size - 1);
	close(fd);
	if (got < 0)
		return ah_fail_errno(err, errno, "cannot read '%s/" STATE_MARK
				     "'", shown);
	have[got] = '\0';
	if (got && have[got - 1] == '\n')
		have[got - 1] = '\0';
	return 1;
}

int
state_dir_workspace(const char *dir, char *ws, size_t size,
		    struct ah_error *err)
{
	char given[PATH_MAX], parent[PATH_MAX];
	const char *base;
	char *slash;
	int pfd, dfd, rc;

	if (*dir != '/' || snprintf(given, sizeof given, "%s", dir) >=
	    (int)sizeof given)
		return 0;
	slash = strrchr(given, '/');
	while (slash && slash > given && !slash[1]) {
		*slash = '\0'; /* trailing slashes */
		slash = strrchr(given, '/');
	}
	base = slash + 1;
	*slash = '\0';
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	    !realpath(*given ? given : "/", parent))
		return 0;
	pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	close(pfd);
	if (dfd < 0)
		return 0;
	rc = read_mark(dfd, dir, ws, size, err);
	close(dfd);
	return rc;
}

int
state_dir_check(const char *workspace, int create, struct ah_error *err)
{
	const char *e = getenv("AGENT_STATE_DIR"), *base;
	char given[PATH_MAX], parent[PATH_MAX], phys[PATH_MAX];
	char ws[PATH_MAX], have[PATH_MAX + 2];
	int pfd = -1, dfd = -1, rc = -1, made = 0, n;
	struct stat st;
	char *slash;

	if (!e || !*e)
		return 0;
	if (*e != '/')
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: it is not an absolute path", e);
	if (snprintf(given, sizeof given, "%s", state_dir()) >=
	    (int)sizeof given - 64)
		return ah_fail(err, AH_EFORMAT, "cannot use '%.200s...' as the "
			       "state directory: the path is too long", e);
	slash = strrchr(given, '/');
	base = slash + 1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: it must end in a name, not '/', "
			       "'.' or '..'", e);
	*slash = '\0';
	if (!realpath(*given ? given : "/", parent)) {
		ah_fail_errno(err, errno, "cannot use '%s/%s' as the state "
			      "directory: its parent '%s'", given, base,
			      *given ? given : "/");
		*slash = '/';
		return -1;
	}
	*slash = '/';
	n = snprintf(phys, sizeof phys, "%s%s%s", parent,
		     strcmp(parent, "/") ? "/" : "", base);
	if (n < 0 || n >= (int)sizeof phys)
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: the path is too long", given);
	if (!realpath(workspace, ws))
		return ah_fail_errno(err, errno, "cannot resolve the workspace "
				     "'%s'", workspace);
	/* WORKSPACE/.agent itself: the default, kept as it is kept */
	n = snprintf(have, sizeof have, "%s%s.agent", ws,
		     strcmp(ws, "/") ? "/" : "");
	if (n > 0 && n < (int)sizeof have && !strcmp(have, phys))
		return 0;
	if (path_within(phys, ws))
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: it is inside the workspace '%s' "
			       "(of the workspace, only '%s' may be)", given, ws,
			       have);
	if (path_within(ws, phys))
		return ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			       "directory: the workspace '%s' is inside it",
			       given, ws);
	if (safe_above(given, parent, err) < 0)
		return -1;
	pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return ah_fail_errno(err, errno, "cannot open '%s'", parent);
	dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && create) {
		if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST) {
			ah_fail_errno(err, errno, "cannot create '%s', where the "
				      "session is kept", given);
			goto out;
		}
		made = 1;
		dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC);
	}
	if (dfd < 0) {
		int e2 = errno;

		if (e2 == ENOENT && !create) {
			rc = 1;
			goto out;
		}
		if ((e2 == ELOOP || e2 == ENOTDIR) &&
		    fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
				"directory: it is %s, not a directory%s", given,
				kind(st.st_mode), S_ISLNK(st.st_mode) ?
				" (a link is never followed there)" : "");
		else
			ah_fail_errno(err, e2, "cannot open the state directory "
				      "'%s'", given);
		goto out;
	}
	if (fstat(dfd, &st) < 0) {
		ah_fail_errno(err, errno, "cannot stat '%s'", given);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			"directory: it belongs to another user (uid %lu)", given,
			(unsigned long)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			"directory: it is writable by its group or others "
			"(chmod go-w '%s')", given, given);
		goto out;
	}
	n = read_mark(dfd, given, have, sizeof have, err);
	if (n < 0)
		goto out;
	if (n == 0) {
		int fd, empty = made ? 1 : empty_dir(dfd);
		size_t len = strlen(ws);

		if (empty < 0) {
			ah_fail_errno(err, errno, "cannot read '%s'", given);
			goto out;
		}
		if (!empty) {
			ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
				"directory: it is not empty, and no '"
				STATE_MARK "' file says which workspace it "
				"serves (give a new or an empty directory)",
				given);
			goto out;
		}
		if (!create) {
			rc = 1; /* nothing kept there yet */
			goto out;
		}
		fd = openat(dfd, STATE_MARK, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			ws[len] = '\n';
			if (write(fd, ws, len + 1) != (ssize_t)len + 1) {
				int e2 = errno;

				close(fd);
				unlinkat(dfd, STATE_MARK, 0);
				ah_fail_errno(err, e2, "cannot write '%s/"
					      STATE_MARK "'", given);
				goto out;
			}
			ws[len] = '\0';
			if (close(fd) < 0) {
				ah_fail_errno(err, errno, "cannot write '%s/"
					      STATE_MARK "'", given);
				goto out;
			}
			snprintf(have, sizeof have, "%s", ws);
		} else if (errno != EEXIST) {
			ah_fail_errno(err, errno, "cannot create '%s/"
				      STATE_MARK "'", given);
			goto out;
		} else {
			/* another run made it meanwhile: its word counts */
			n = read_mark(dfd, given, have, sizeof have, err);
			if (n == 0)
				ah_fail(err, AH_EIO, "'%s/" STATE_MARK "' went "
					"away", given);
			if (n <= 0)
				goto out;
		}
	}
	if (strcmp(have, ws)) {
		ah_fail(err, AH_EFORMAT, "cannot use '%s' as the state "
			"directory: it keeps the sessions of the workspace '%s', "
			"not of '%s' (one state directory serves one "
			"workspace: give another)", given, have, ws);
		goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	if (pfd >= 0)
		close(pfd);
	return rc;
}
