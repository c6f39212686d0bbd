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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		return ah_fail_errno(err, e, "cannot open %s'%s'", what, path);
	}
	return fd;
}

/* The offset of the first component of path named ".agent", or -1. */
static long
agent_component(const char *path)
{
	const char *p = path;

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
	return agent_component(path) >= 0;
}

/* The directory of path's last component (the whole of path when
 * whole), as an O_PATH descriptor: from the component named .agent on
 * (at, its offset), each directory is opened beneath the one before
 * without following a link, ".." refused; with create, a missing one is
 * made (.agent 0777, those under it 0700, less the umask).  *last is set
 * to the last component (unless whole).  -1 on error. */
static int
walk(const char *path, long at, const char *what, int create, int whole,
     const char **last, struct ah_error *err)
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
				if (mkdirat(dfd, comp, p == path + at ? 0777
					    : 0700) < 0 && errno != EEXIST) {
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
	long at = agent_component(path);
	const char *slash, *last = NULL;
	int dfd = -1, fd = -1;
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
	dfd = walk(path, at, what, (flags & O_CREAT) != 0, 0, &last, err);
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
	long at = agent_component(path);
	int dfd, fd;

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
	dfd = walk(path, at, "", create, 1, NULL, err);
	if (dfd < 0)
		return -1;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		ah_fail_errno(err, errno, "cannot open directory '%s'", path);
	close(dfd);
	return fd;
}
