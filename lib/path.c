/* path.c: opening files the model names, never outside the working
 * directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "priv.h"

int
path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

int
root_open(struct root *rt, const char *dir, struct ah_error *err)
{
	rt->fd = -1;
	rt->path = realpath(dir, NULL);
	if (!rt->path)
		return ah_fail_errno(err, errno, "cannot resolve '%s'", dir);
	rt->fd = open(rt->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rt->fd < 0) {
		ah_fail_errno(err, errno, "cannot open directory '%s'", dir);
		free(rt->path);
		rt->path = NULL;
		return -1;
	}
	return 0;
}

void
root_close(struct root *rt)
{
	if (rt->fd >= 0)
		close(rt->fd);
	free(rt->path);
	rt->fd = -1;
	rt->path = NULL;
}

/* Appends the components of p to out, dropping "." and empty ones. */
static int
components(struct buf *out, const char *p)
{
	const char *e;
	size_t n;

	while (*p) {
		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n && !(n == 1 && *p == '.')) {
			if ((out->len && buf_putc(out, '/') < 0) ||
			    buf_append(out, p, n) < 0)
				return -1;
		}
		p = e;
	}
	return 0;
}

int
root_relative(const struct root *rt, const char *path, char **rel,
	      char *msg, size_t size)
{
	struct buf b = BUF_INIT(PATH_MAX);
	size_t n = strlen(rt->path);

	*rel = NULL;
	if (!*path) {
		snprintf(msg, size, "Error: path is empty.");
		return 1;
	}
	if (strlen(path) >= PATH_MAX) {
		snprintf(msg, size, "Error: path is too long (%zu bytes; at "
			 "most %d).", strlen(path), PATH_MAX - 1);
		return 1;
	}
	if (path[0] == '/') {
		/* Inside the root only when its components come first: the
		 * root /w/p does not contain /w/project. */
		if (!strcmp(rt->path, "/"))
			path++;
		else if (!strncmp(path, rt->path, n) &&
			 (path[n] == '/' || path[n] == '\0'))
			path += n;
		else {
			snprintf(msg, size, "Error: path '%.200s' is outside "
				 "the working directory %s.", path, rt->path);
			return 1;
		}
	}
	if (components(&b, path) < 0) {
		buf_free(&b);
		snprintf(msg, size, "Error: out of memory.");
		return -1;
	}
	if (!b.len && buf_putc(&b, '.') < 0) {
		buf_free(&b);
		snprintf(msg, size, "Error: out of memory.");
		return -1;
	}
	*rel = buf_detach(&b, NULL);
	return 0;
}

/*
 * Where openat2 is missing (Linux before 5.6, or under valgrind), find
 * where the path leads with an O_PATH descriptor, refuse it when outside,
 * and only then open it for real through that descriptor.  That refuses
 * the same paths and tells nothing of what lies outside.  Files are never
 * created through here: callers create them with O_NOFOLLOW in a
 * directory opened through here.
 */
static int
open_checked(const struct root *rt, const char *rel, int flags, mode_t mode)
{
	char link[64];
	char *real = NULL;
	int fd, e, out;

	fd = openat(rt->fd, rel, O_PATH | O_CLOEXEC | (flags & O_NOFOLLOW));
	if (fd < 0)
		return -1;
	if (root_realpath(rt, fd, &real) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	free(real);
	if ((flags & O_ACCMODE) == O_RDONLY && (flags & O_PATH))
		return fd;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	out = open(link, (flags | O_CLOEXEC) & ~(O_CREAT | O_EXCL), mode);
	e = errno;
	close(fd);
	errno = e;
	return out;
}

int
root_openat(const struct root *rt, const char *rel, int flags, mode_t mode)
{
	static int have_openat2 = -1;
	struct open_how how;
	long fd;

	/* AH_NO_OPENAT2 makes the tests go through the fallback too */
	if (have_openat2 < 0)
		have_openat2 = !getenv("AH_NO_OPENAT2");
	if (have_openat2) {
		memset(&how, 0, sizeof how);
		how.flags = (unsigned long long)(flags | O_CLOEXEC);
		how.mode = (flags & O_CREAT) ? mode : 0;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		fd = syscall(SYS_openat2, rt->fd, rel, &how, sizeof how);
		if (fd >= 0 || errno != ENOSYS)
			return (int)fd;
		have_openat2 = 0;
	}
	return open_checked(rt, rel, flags, mode);
}

int
fd_path_beneath(int fd, const char *dir, char *real, size_t size,
		const char **rest)
{
	char link[64];
	size_t n = strlen(dir);
	ssize_t len;

	*rest = NULL;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	len = readlink(link, real, size - 1);
	if (len < 0)
		return -1;
	real[len] = '\0';
	if (!strcmp(dir, "/"))
		n = 0;
	if (strncmp(real, dir, n) || (real[n] && real[n] != '/'))
		return 0;
	*rest = real + n;
	return 1;
}

int
root_realpath(const struct root *rt, int fd, char **rel)
{
	char real[PATH_MAX];
	const char *rest;
	int r;

	*rel = NULL;
	r = fd_path_beneath(fd, rt->path, real, sizeof real, &rest);
	if (r < 0)
		return -1;
	if (!r) {
		errno = EXDEV;
		return -1;
	}
	*rel = strdup(*rest ? rest + 1 : ".");
	return *rel ? 0 : -1;
}

int
root_mkdirs(const struct root *rt, const char *rel)
{
	char *p = strdup(rel), *slash;
	int fd, rc = -1;

	if (!p)
		return -1;
	/* Each level is created inside a parent opened beneath the root, so
	 * a symlinked component cannot lead the creation outside. */
	for (slash = p;; slash++) {
		slash = strchr(slash, '/');
		if (slash)
			*slash = '\0';
		fd = root_openat(rt, p, O_PATH | O_DIRECTORY, 0);
		if (fd < 0 && errno == ENOENT) {
			char *last = strrchr(p, '/');
			int pfd;

			if (last) {
				*last = '\0';
				pfd = root_openat(rt, p, O_PATH | O_DIRECTORY, 0);
				*last = '/';
			} else
				pfd = dup(rt->fd);
			if (pfd < 0)
				goto out;
			if (mkdirat(pfd, last ? last + 1 : p, 0777) < 0 &&
			    errno != EEXIST) {
				int e = errno;

				close(pfd);
				errno = e;
				goto out;
			}
			close(pfd);
		} else if (fd < 0)
			goto out;
		else
			close(fd);
		if (!slash)
			break;
		*slash = '/';
	}
	rc = 0;
out:
	free(p);
	return rc;
}
