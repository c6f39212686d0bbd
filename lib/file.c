/* file.c: reading and atomically replacing whole files. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

#define TEMP_RANDOM 12 /* random characters in a temporary name */

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

ssize_t
read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int
file_read(const char *path, size_t max, char **data, size_t *len,
	  struct ah_error *err)
{
	char name[PATH_MAX + 2];
	int fd, rc;

	*data = NULL;
	*len = 0;
	/* under .agent, never through a link (agent_open) */
	if (agent_path_inside(path)) {
		struct ah_error e = { 0, "" };

		fd = agent_open(path, NULL, O_RDONLY, 0, &e);
		if (fd < 0) {
			if (errno == ENOENT && e.code == AH_EIO)
				return 0;
			if (err)
				*err = e;
			return -1;
		}
	} else
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

/* The temporary name beside name: ".NAME.XXXXXX.tmp", the X random. */
static int
temp_name(char *tmp, size_t size, const char *name)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[TEMP_RANDOM];
	size_t i, n;
	ssize_t got;

	for (n = 0; n < sizeof r; n += (size_t)got) {
		got = getrandom(r + n, sizeof r - n, 0);
		if (got < 0 && errno == EINTR)
			got = 0;
		else if (got < 0)
			return -1;
	}
	n = (size_t)snprintf(tmp, size, ".%s.", name);
	for (i = 0; i < sizeof r && n + 1 < size; i++)
		tmp[n++] = set[r[i] % (sizeof set - 1)];
	snprintf(tmp + n, size - n, ".tmp");
	return 0;
}

/* Is entry a temporary file of ours for name (".NAME.XXXXXX.tmp")? */
static int
is_temp_of(const char *entry, const char *name)
{
	size_t k = strlen(name), i;

	if (entry[0] != '.' || strncmp(entry + 1, name, k) ||
	    entry[k + 1] != '.')
		return 0;
	entry += k + 2;
	for (i = 0; i < TEMP_RANDOM; i++)
		if (!isalnum((unsigned char)entry[i]))
			return 0;
	return !strcmp(entry + TEMP_RANDOM, ".tmp");
}

/* Removes the temporary files a writer killed mid-way left for name.
 * Called under the directory's lock, so none of them is in use. */
static void
remove_stale(int dfd, const char *name)
{
	struct dirent *e;
	DIR *d;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (is_temp_of(e->d_name, name))
			unlinkat(dfd, e->d_name, 0); /* never a directory */
	closedir(d);
}

int
file_stage_at(int dfd, const char *name, const char *shown, const void *data,
	      size_t len, char *tmp, size_t size, struct ah_error *err)
{
	struct stat st;
	int fd = -1, tries;

	if (!*name || strlen(name) + TEMP_RANDOM + 6 > NAME_MAX ||
	    size < NAME_MAX + 1)
		return ah_fail(err, AH_EIO, "cannot write '%s': %s", shown,
			       strerror(*name ? ENAMETOOLONG : EISDIR));
	for (tries = 0; fd < 0; tries++) {
		if (temp_name(tmp, size, name) < 0)
			return ah_fail_errno(err, errno, "cannot name a "
					     "temporary file for '%s'", shown);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
		if (fd < 0 && (errno != EEXIST || tries == 99))
			return ah_fail_errno(err, errno, "cannot create a "
					     "temporary file for '%s'", shown);
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		fchmod(fd, st.st_mode & 01777);
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		close(fd);
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	if (close(fd) < 0) {
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	return 0;
}

int
file_replace_at(int dfd, const char *name, const char *shown,
		const void *data, size_t len, struct ah_error *err)
{
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd = -1, rc = -1, e, tries;

	if (!*name || strlen(name) + TEMP_RANDOM + 6 > NAME_MAX)
		return ah_fail(err, AH_EIO, "cannot write '%s': %s", shown,
			       strerror(*name ? ENAMETOOLONG : EISDIR));
	/* The lock keeps writers of one directory in turn, so that the
	 * temporary files of name that are left when it is taken are those
	 * of writers killed mid-way.  flock is released when its holder
	 * dies. */
	while (flock(dfd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock the "
					     "directory of '%s'", shown);
	}
	remove_stale(dfd, name);
	/* A name nobody can guess, created here and now: whatever was
	 * planted at a name (a FIFO, a symlink) is never opened. */
	for (tries = 0; fd < 0; tries++) {
		if (temp_name(tmp, sizeof tmp, name) < 0) {
			ah_fail_errno(err, errno, "cannot name a temporary "
				      "file for '%s'", shown);
			goto out;
		}
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
		if (fd < 0 && (errno != EEXIST || tries == 99)) {
			ah_fail_errno(err, errno, "cannot create a temporary "
				      "file for '%s'", shown);
			goto out;
		}
	}
	/* An existing file keeps its permissions, but for the set-id bits,
	 * which a write clears as well. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		fchmod(fd, st.st_mode & 01777);
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		goto unlink;
	}
	e = close(fd);
	fd = -1;
	if (e < 0) {
		ah_fail_errno(err, errno, "cannot write '%s'", shown);
		goto unlink;
	}
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
	if (fd >= 0)
		close(fd);
	fd = -1;
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
	/* under .agent, no link followed (agent_open_dir) */
	dfd = agent_open_dir(dir, 0, err);
	if (dfd < 0)
		return -1;
	rc = file_replace_at(dfd, base, path, data, len, err);
	close(dfd);
	return rc;
}
