/* gitwalk.c: the .git walk of the sandbox: every .git of the workspace
 * found, watched and kept read-only to the commands (see sandbox.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "priv.h"

/* --- .git */

/* A .git anywhere in the workspace runs its hooks and its configuration
 * (core.fsmonitor, core.pager, ...) at the user's next git command there,
 * outside the sandbox; so does a git directory a .git file points to.
 * Every one that exists before a command is kept read-only to it; one the
 * command creates is removed after it (sandbox_check_git). */

#define WALK_DEPTH 256 /* directories deeper are not searched */

/* What goes before a line added to b: a newline, unless b is empty or
 * ends with one. */
static const char *
sep(const struct buf *b)
{
	return b->len && b->data[b->len - 1] != '\n' ? "\n" : "";
}

int
sb_is_git_name(const char *name)
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

void
sb_unwatch_all(struct sandbox *sb)
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
		sb_unwatch_all(sb);
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
	if ((strcmp(real, w->sb->workspace) && !sb_beneath(w->sb->workspace,
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
		sb_unwatch_all(w->sb);
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
		if (sb_is_git_name(e->d_name)) {
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
				sb_unwatch_all(w->sb);
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
		sb_free_git(w.found, w.nfound);
		errno = ENOMEM;
		return -1;
	}
	if (whole) {
		sb_free_git(sb->git, sb->ngit);
		sb->git = w.found;
		sb->ngit = w.nfound;
		sb->scanned = now;
		return watch_git(sb, 0) < 0 ? (errno = ENOMEM, -1) : 0;
	}
	more = realloc(sb->git, (sb->ngit + w.nfound + 1) * sizeof *more);
	if (!more) {
		sb_free_git(w.found, w.nfound);
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
	sb_unwatch_all(sb);
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
			if (sb_is_git_name(e->name) ||
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
