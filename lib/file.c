/* file.c: reading and atomically replacing whole files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

int
fd_read(int fd, const char *name, size_t max, char **data, size_t *len,
	struct ah_error *err)
{
	struct buf b = BUF_INIT(max);
	char chunk[65536];
	ssize_t n;
	int rc = -1;

	*data = NULL;
	*len = 0;
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ah_fail_errno(err, errno, "cannot read %s", name);
			goto out;
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n) < 0) {
			ah_fail(err, AH_ETOOBIG,
				"cannot read %s: larger than %zu bytes", name,
				max);
			goto out;
		}
	}
	if (buf_append(&b, "", 0) < 0) {
		ah_fail(err, AH_ENOMEM, "cannot read %s: %s", name,
			strerror(ENOMEM));
		goto out;
	}
	*data = buf_detach(&b, len);
	rc = 1;
out:
	buf_free(&b);
	return rc;
}

int
file_read(const char *path, size_t max, char **data, size_t *len,
	  struct ah_error *err)
{
	char name[PATH_MAX + 2];
	int fd, rc;

	*data = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return ah_fail_errno(err, errno, "cannot open '%s'", path);
	}
	snprintf(name, sizeof name, "'%s'", path);
	rc = fd_read(fd, name, max, data, len, err);
	close(fd);
	return rc;
}

int
write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
file_replace_at(int dfd, const char *name, const char *shown,
		const void *data, size_t len, struct ah_error *err)
{
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd = -1, rc = -1, e;

	if (!*name || strlen(name) + 6 > NAME_MAX)
		return ah_fail(err, AH_EIO, "cannot write '%s': %s", shown,
			       strerror(*name ? ENAMETOOLONG : EISDIR));
	snprintf(tmp, sizeof tmp, ".%s.tmp", name);
	/* The lock makes the temporary name ours: two writers never share
	 * it, and a writer killed mid-way leaves a stale one that the next
	 * writer truncates.  flock is released when its holder dies. */
	while (flock(dfd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock the "
					     "directory of '%s'", shown);
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0666);
	if (fd < 0) {
		ah_fail_errno(err, errno, "cannot create a temporary file "
			      "for '%s'", shown);
		goto out;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		fchmod(fd, st.st_mode & 07777);
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		goto unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		goto unlink;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, name) < 0) {
		ah_fail_errno(err, errno, "cannot replace '%s'", shown);
		goto unlink;
	}
	/* Without this the rename may not survive a power cut. */
	if (fsync(dfd) < 0 && errno != EINVAL) {
		ah_fail_errno(err, errno, "cannot sync the directory of '%s'",
			      shown);
		goto out;
	}
	rc = 0;
	goto out;
unlink:
	e = errno;
	unlinkat(dfd, tmp, 0);
	errno = e;
out:
	if (fd >= 0)
		close(fd);
	flock(dfd, LOCK_UN);
	return rc;
}

int
file_replace(const char *path, const void *data, size_t len,
	     struct ah_error *err)
{
	char dir[PATH_MAX];
	const char *base, *slash;
	int dfd, rc;

	slash = strrchr(path, '/');
	if (slash) {
		if ((size_t)(slash - path) >= sizeof dir)
			return ah_fail(err, AH_EIO, "cannot write '%s': %s",
				       path, strerror(ENAMETOOLONG));
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if (!dir[0])
			snprintf(dir, sizeof dir, "/");
		base = slash + 1;
	} else {
		snprintf(dir, sizeof dir, ".");
		base = path;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ah_fail_errno(err, errno, "cannot open directory '%s'",
				     dir);
	rc = file_replace_at(dfd, base, path, data, len, err);
	close(dfd);
	return rc;
}
