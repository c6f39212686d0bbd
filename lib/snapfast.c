/* snapfast.c: the checkpoint stage's snapshots from the paths changed
 * since its last one (agent-snap(1), "What a snapshot costs").
 *
 * A whole walk (git add -A) stats every file and reads every directory,
 * and git reads and writes its whole index: at 20,000 files, tens to
 * hundreds of ms a snapshot.  agent-snap checkpoint lives as long as the
 * ring, so it keeps, between its snapshots:
 *   - an inotify watch on every directory of the workspace (but .agent
 *     and the .git directories), which names every path made, written,
 *     changed in mode, renamed or removed since, by any process;
 *   - the tree of its last snapshot, in memory: the files (path, mode,
 *     blob) and the ids of the directories' trees;
 * and a snapshot is the last one with the paths the events name hashed
 * again, and the trees above them made anew (the objects written by us,
 * as git writes loose ones): no git reads the index, no directory is
 * walked.
 *
 * It fails closed: whenever the events may not name every change, the
 * snapshot is a whole walk, after which the watches and the tree are made
 * again from it.  That is: the first two snapshots (the watches are made
 * for the second: a stage of --step takes one); an event queue that
 * overflowed; an event about a directory (made, removed, renamed, its
 * mode), about a name that starts with ".git" (.gitignore,
 * .gitattributes, a repository), with no name, or from a watch not known;
 * a path that is new (whether git ignores it is git's to say: but a file
 * it ignored at the last whole walk is still ignored, below), that has
 * more than one link (it may have been written through another name),
 * that is neither a file nor a symbolic link, or whose name git would
 * quote (a newline in it, a leading double quote); a directory left without
 * files (empty directories are recorded apart; the top left without
 * files is the empty tree, as git writes it: a workspace empty, or of
 * only ignored files, takes the fast path); a submodule in the tree;
 * a workspace on a file system not known to report every change through
 * inotify (only ext2/3/4, xfs, btrfs, tmpfs and f2fs are), or with
 * another file system mounted in it; a watch that cannot be added
 * (fs.inotify.max_user_watches); the last snapshot dropped meanwhile
 * (gc); any failure of the long-lived git programs.
 *
 * The files git ignored at the last whole walk (ls-files -o -i) are left
 * out without one when an event names them: whether git ignores a path
 * is its .gitignore files' to say (the shadow repository's own excludes
 * are fixed, the user's are /dev/null), and a change to any of those, or
 * to a directory above the path, is a whole walk, after which the list
 * is made anew.  Only files: a directory git lists (one it ignores, or
 * one all of whose files it ignores: ls-files does not tell them apart)
 * is not taken, and a change under it is walked for.  No file is taken
 * as ignored while a .gitignore is a symbolic link (a git before 2.32
 * reads its target, which may be outside the workspace, unwatched), nor
 * with --include-ignored (which takes them all).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "priv.h"

#define FAST_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		   IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVE_SELF | \
		   IN_DELETE_SELF | IN_ONLYDIR)
/* the most directories watched, and how deep */
#define FAST_MAX_DIRS 500000
#define FAST_MAX_DEPTH 256
/* the file in which a tree or a commit is handed to git */
/* the largest file hashed here (a larger one: a whole walk) */
#define FAST_MAX_FILE (64u << 20)
/* room for an object's header before its body */
#define HEAD_ROOM 32

struct fent {
	char *path;
	unsigned mode;  /* 0: removed since */
	char oid[41];
	unsigned char bin[20];
	size_t off;     /* where its entry begins in its directory's body */
};

struct fdir {
	char *path;     /* "" for the top */
	char oid[41];
	unsigned char bin[20];
	int dirty;      /* its tree is to be written anew */
	int valid;      /* body is its tree's (but for the ids patched in) */
	struct buf body; /* HEAD_ROOM bytes, then the tree's entries */
	size_t off;     /* where its id is in its parent's body */
};

struct fwatch {
	int wd;
	int seen;
	char *path;     /* "" for the top */
};

struct snap_fast {
	int off;            /* a whole walk every time, from now on */
	int walked;         /* a snapshot was taken (the first is unwatched) */
	int ifd;            /* the inotify, -1 */
	dev_t dev;
	struct fwatch *w;
	size_t nw;
	int have;           /* the tree below is the last snapshot's */
	char base[41], tree[41];
	unsigned long seq;
	cJSON *dirs;
	struct fent *e;
	size_t ne;
	struct fdir *d;
	size_t nd;
	struct buf ignbuf;  /* the files git ignored at the last whole walk */
	char **ign;         /* into ignbuf, sorted */
	size_t nign;
};

/* --- objects ------------------------------------------------------------- */

/* SHA-1 (FIPS 180-4), the hash git names its objects by.  (git's own
 * detects the known way of making two files collide; this one does not:
 * see agent-snap(1).) */
struct sha1 {
	uint32_t h[5];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
};

static uint32_t
rol(uint32_t x, int n)
{
	return x << n | x >> (32 - n);
}

static void
sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
			(uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

static void
sha1_init(struct sha1 *c)
{
	static const uint32_t h0[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE,
					0x10325476, 0xC3D2E1F0 };

	memcpy(c->h, h0, sizeof h0);
	c->len = 0;
	c->n = 0;
}

static void
sha1_add(struct sha1 *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t take;

	c->len += len;
	if (c->n) {
		take = 64 - c->n < len ? 64 - c->n : len;
		memcpy(c->buf + c->n, p, take);
		c->n += take;
		p += take;
		len -= take;
		if (c->n < 64)
			return;
		sha1_block(c->h, c->buf);
		c->n = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		sha1_block(c->h, p);
	memcpy(c->buf, p, len);
	c->n = len;
}

static void
sha1_hex(struct sha1 *c, char hex[41])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t n = c->n < 56 ? 56 - c->n : 120 - c->n;
	int i;

	for (i = 0; i < 8; i++)
		pad[n + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_add(c, pad, n + 8);
	for (i = 0; i < 5; i++)
		snprintf(hex + 8 * i, 9, "%08x", c->h[i]);
}

/* The object of type whose body is data[hlen..hlen+len) (data[0..hlen)
 * is the caller's room for the header): its id into oid, and, unless
 * dry or there already, written as git writes a loose object (zlib, a
 * temporary file linked to its name).  -1 with errno on failure. */
static int
put_object(struct snap *s, const char *type, unsigned char *data,
	   size_t hlen, size_t len, int dry, char oid[41])
{
	char head[64], name[96], tmp[96];
	struct sha1 c;
	unsigned char *z = NULL, r[6];
	uLongf zlen;
	int n, fd = -1, made = 0, rc = -1;

	n = snprintf(head, sizeof head, "%s %zu", type, len) + 1;
	if ((size_t)n > hlen)
		return errno = EINVAL, -1;
	memcpy(data + hlen - (size_t)n, head, (size_t)n);
	sha1_init(&c);
	sha1_add(&c, data + hlen - (size_t)n, (size_t)n + len);
	sha1_hex(&c, oid);
	if (dry)
		return 0;
	snprintf(name, sizeof name, "git/objects/%.2s/%s", oid, oid + 2);
	if (faccessat(s->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	name[14] = '\0';
	if (mkdirat(s->dirfd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	name[14] = '/';
	zlen = compressBound((uLong)((size_t)n + len));
	if (!(z = malloc(zlen)))
		return -1;
	/* a tree is mostly ids, which do not compress: stored as they are
	 * (git reads any level; gc packs them) */
	if (compress2(z, &zlen, data + hlen - (size_t)n,
		      (uLong)((size_t)n + len), strcmp(type, "tree") ? 1 :
		      Z_NO_COMPRESSION) != Z_OK) {
		errno = EIO;
		goto out;
	}
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		goto out;
	snprintf(tmp, sizeof tmp, "git/objects/%.2s/tmp_obj_%02x%02x%02x%02x"
		 "%02x%02x", oid, r[0], r[1], r[2], r[3], r[4], r[5]);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0444);
	if (fd < 0)
		goto out;
	made = 1;
	errno = 0;
	if (write(fd, z, zlen) != (ssize_t)zlen) {
		if (!errno)
			errno = EIO;
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (linkat(s->dirfd, tmp, s->dirfd, name, 0) < 0 && errno != EEXIST)
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (made) {
		int e = errno;

		unlinkat(s->dirfd, tmp, 0);
		errno = e;
	}
	free(z);
	return rc;
}

/* --- the watches --------------------------------------------------------- */

static int
watch_cmp(const void *a, const void *b)
{
	const struct fwatch *x = a, *y = b;

	return (x->wd > y->wd) - (x->wd < y->wd);
}

static struct fwatch *
find_watch(struct snap_fast *f, int wd)
{
	struct fwatch key = { wd, 0, NULL };

	return f->nw ? bsearch(&key, f->w, f->nw, sizeof *f->w, watch_cmp)
		: NULL;
}

static void
unwatch(struct snap_fast *f)
{
	size_t i;

	if (f->ifd >= 0)
		close(f->ifd);
	f->ifd = -1;
	for (i = 0; i < f->nw; i++)
		free(f->w[i].path);
	free(f->w);
	f->w = NULL;
	f->nw = 0;
}

/* Watches the open directory fd, named rel; the table is sorted after
 * the walk. */
static int
add_watch(struct snap_fast *f, int fd, const char *rel)
{
	char link[64];
	struct fwatch *nw;
	size_t i;
	int wd;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(f->ifd, link, FAST_MASK);
	if (wd < 0)
		return -1;
	for (i = 0; i < f->nw; i++)
		if (f->w[i].wd == wd)
			break;
	if (i == f->nw) {
		if (f->nw >= FAST_MAX_DIRS)
			return -1;
		nw = realloc(f->w, (f->nw + 1) * sizeof *nw);
		if (!nw)
			return -1;
		f->w = nw;
		f->w[f->nw].wd = wd;
		f->w[f->nw].path = NULL;
		f->nw++;
	}
	free(f->w[i].path);
	f->w[i].path = strdup(rel);
	f->w[i].seen = 1;
	return f->w[i].path ? 0 : -1;
}

/* Walks the directory fd (rel) and those under it, watching each. */
static int
walk(struct snap_fast *f, int fd, const char *rel, int depth)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (depth > FAST_MAX_DEPTH || fstat(fd, &st) < 0 ||
	    st.st_dev != f->dev || add_watch(f, fd, rel) < 0) {
		close(fd);
		return -1;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while (!rc && (de = readdir(d))) {
		char *sub;
		int cfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".git") ||
		    (!*rel && !strcmp(de->d_name, ".agent")))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			if (errno == ENOTDIR || errno == ELOOP ||
			    errno == ENOENT)
				continue; /* not a directory (or gone) */
			rc = -1;      /* unreadable: what is in it unknown */
			break;
		}
		if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name) < 0) {
			close(cfd);
			rc = -1;
			break;
		}
		rc = walk(f, cfd, sub, depth + 1);
		free(sub);
	}
	closedir(d);
	return rc;
}

/* The file systems known to report every change of their files through
 * inotify: local ones (a network or FUSE one does not see the changes
 * made elsewhere). */
static int
local_fs(long type)
{
	static const long ok[] = {
		0xEF53,     /* ext2, ext3, ext4 */
		0x58465342, /* xfs */
		0x9123683E, /* btrfs */
		0x01021994, /* tmpfs */
		0xF2F52010, /* f2fs */
	};
	size_t i;

	for (i = 0; i < sizeof ok / sizeof *ok; i++)
		if (type == ok[i])
			return 1;
	return 0;
}

/* Watches every directory of the workspace (those watched already keep
 * their watch); -1 when one cannot be. */
static int
rewalk(struct snap_fast *f)
{
	struct statfs sf;
	struct stat st;
	size_t i, j;
	int fd;

	if (f->ifd < 0) {
		if (statfs(".", &sf) < 0 || !local_fs((long)sf.f_type) ||
		    stat(".", &st) < 0)
			return -1;
		f->dev = st.st_dev;
		f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (f->ifd < 0)
			return -1;
	}
	for (i = 0; i < f->nw; i++)
		f->w[i].seen = 0;
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || walk(f, fd, "", 0) < 0)
		return -1;
	/* the directories gone or moved out: no longer watched */
	for (i = j = 0; i < f->nw; i++) {
		if (f->w[i].seen) {
			f->w[j++] = f->w[i];
			continue;
		}
		inotify_rm_watch(f->ifd, f->w[i].wd);
		free(f->w[i].path);
	}
	f->nw = j;
	if (f->nw)
		qsort(f->w, f->nw, sizeof *f->w, watch_cmp);
	return 0;
}

/* Reads the events since the last call: the paths they name into paths
 * (NUL after each); 1 when they may not name every change. */
static int
drain(struct snap_fast *f, struct buf *paths)
{
	union {
		char buf[65536];
		struct inotify_event align;
	} u;
	const struct inotify_event *e;
	struct fwatch *wi;
	ssize_t n, off;
	int whole = 0;

	if (f->ifd < 0)
		return 1;
	for (;;) {
		n = read(f->ifd, u.buf, sizeof u.buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return 1;
		for (off = 0; off < n; off += (ssize_t)(sizeof *e + e->len)) {
			e = (const struct inotify_event *)(u.buf + off);
			if (e->mask & IN_IGNORED) {
				/* its directory is gone: so is the watch */
				wi = find_watch(f, e->wd);
				if (wi) {
					free(wi->path);
					memmove(wi, wi + 1, (size_t)(f->w +
						f->nw - wi - 1) * sizeof *wi);
					f->nw--;
					whole = 1;
				}
				/* (else one we took off ourselves) */
				continue;
			}
			wi = find_watch(f, e->wd);
			if (whole || e->mask & (IN_Q_OVERFLOW | IN_ISDIR |
						IN_MOVE_SELF | IN_DELETE_SELF) ||
			    !wi || !e->len || !e->name[0] ||
			    !strncmp(e->name, ".git", 4)) {
				whole = 1;
				continue;
			}
			if (!*wi->path && !strcmp(e->name, ".agent"))
				continue;
			if (buf_printf(paths, "%s%s%s", wi->path,
				       *wi->path ? "/" : "", e->name) < 0 ||
			    buf_putc(paths, '\0') < 0)
				whole = 1;
		}
	}
	return whole;
}

/* --- the tree of the last snapshot --------------------------------------- */

static int
ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fent *)a)->path,
		      ((const struct fent *)b)->path);
}

static int
dir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fdir *)a)->path,
		      ((const struct fdir *)b)->path);
}

static void
forget(struct snap_fast *f)
{
	size_t i;

	for (i = 0; i < f->ne; i++)
		free(f->e[i].path);
	for (i = 0; i < f->nd; i++) {
		free(f->d[i].path);
		buf_free(&f->d[i].body);
	}
	free(f->e);
	free(f->d);
	f->e = NULL;
	f->d = NULL;
	f->ne = f->nd = 0;
	free(f->ign);
	f->ign = NULL;
	f->nign = 0;
	buf_free(&f->ignbuf);
	cJSON_Delete(f->dirs);
	f->dirs = NULL;
	f->have = 0;
}

/* The first entry whose path is not below key (strcmp order). */
static size_t
lower(const struct snap_fast *f, const char *key)
{
	size_t lo = 0, hi = f->ne, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(f->e[mid].path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct fent *
find_ent(struct snap_fast *f, const char *path)
{
	size_t i = lower(f, path);

	return i < f->ne && !strcmp(f->e[i].path, path) ? &f->e[i] : NULL;
}

static struct fdir *
find_dir(struct snap_fast *f, const char *path)
{
	struct fdir key = { .path = (char *)path };

	return f->nd ? bsearch(&key, f->d, f->nd, sizeof *f->d, dir_cmp)
		: NULL;
}

static int
hex_to_bin(const char *hex, unsigned char bin[20])
{
	int i, h, l;

	for (i = 0; i < 20; i++) {
		h = hex[2 * i];
		l = hex[2 * i + 1];
		h = h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= '0' && h <= '9'
			? h - '0' : -1;
		l = l >= 'a' && l <= 'f' ? l - 'a' + 10 : l >= '0' && l <= '9'
			? l - '0' : -1;
		if (h < 0 || l < 0)
			return -1;
		bin[i] = (unsigned char)(h << 4 | l);
	}
	return 0;
}

static int write_dirty(struct snap *s, struct snap_fast *f, int dry);

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
is_gitignore(const char *path)
{
	const char *slash = strrchr(path, '/');

	return !strcmp(slash ? slash + 1 : path, ".gitignore");
}

/* Did git ignore the file path at the last whole walk? */
static int
ignored(const struct snap_fast *f, const char *path)
{
	return f->nign && bsearch(&path, f->ign, f->nign, sizeof *f->ign,
				  str_cmp);
}

/* The files git ignores now (just after a whole walk, the table loaded),
 * into f->ign; none (the changes to them are walked for) when a
 * .gitignore is a symbolic link, with --include-ignored, or when git
 * fails. */
static void
load_ignored(struct snap *s, struct snap_fast *f)
{
	struct ah_error err = { 0 };
	struct stat st;
	size_t i, n = 0;
	char *p;

	if (s->include_ignored)
		return;
	for (i = 0; i < f->ne; i++)
		if (f->e[i].mode == 0120000 && is_gitignore(f->e[i].path))
			return;
	if (snap_ignored(s, &f->ignbuf, &err) < 0)
		goto none;
	for (i = 0; i < f->ignbuf.len; i++)
		n += !f->ignbuf.data[i];
	if (!n || !(f->ign = calloc(n, sizeof *f->ign)))
		goto none;
	for (p = f->ignbuf.data; p < f->ignbuf.data + f->ignbuf.len;
	     p += strlen(p) + 1) {
		size_t len = strlen(p);

		if (!len || p[len - 1] == '/')
			continue; /* a directory: not taken */
		if (is_gitignore(p) && (lstat(p, &st) < 0 || !S_ISREG(st.st_mode)))
			goto none;
		f->ign[f->nign++] = p;
	}
	qsort(f->ign, f->nign, sizeof *f->ign, str_cmp);
	return;
none:
	free(f->ign);
	f->ign = NULL;
	f->nign = 0;
	buf_free(&f->ignbuf);
}

/* The tree of the snapshot commit (whose empty directories are dirs,
 * taken), from git ls-tree. */
static int
load(struct snap *s, struct snap_fast *f, const char *commit,
     const char *tree, cJSON *dirs)
{
	const char *args[] = { "ls-tree", "-r", "-t", "-z", "--full-tree",
			       tree, NULL };
	struct ah_error err = { 0 };
	struct buf out = BUF_INIT(0);
	size_t i, lines = 1;
	int rc = -1;

	forget(f);
	f->dirs = dirs;
	if (snap_git_out(s, args, &out, &err) < 0)
		goto out;
	for (i = 0; i < out.len; i++)
		lines += !out.data[i];
	f->e = calloc(lines, sizeof *f->e);
	f->d = calloc(lines + 1, sizeof *f->d);
	if (!f->e || !f->d || !(f->d[0].path = strdup("")))
		goto out;
	memcpy(f->d[0].oid, tree, 41);
	f->nd = 1;
	for (i = 0; i < out.len;) {
		char *line = out.data + i, *tab, *path;
		unsigned mode;
		char type[16], oid[41];

		i += strlen(line) + 1;
		tab = strchr(line, '\t');
		if (!tab || sscanf(line, "%o %15s %40s", &mode, type, oid) != 3 ||
		    strlen(oid) != 40)
			goto out;
		if (!strcmp(type, "commit"))
			goto out; /* a submodule: its commit is not ours to see */
		if (!(path = strdup(tab + 1)))
			goto out;
		if (!strcmp(type, "tree") && !hex_to_bin(oid, f->d[f->nd].bin)) {
			f->d[f->nd].path = path;
			memcpy(f->d[f->nd++].oid, oid, 41);
		} else if (!strcmp(type, "blob") && (mode == 0100644 ||
			   mode == 0100755 || mode == 0120000) &&
			   !hex_to_bin(oid, f->e[f->ne].bin)) {
			f->e[f->ne].path = path;
			f->e[f->ne].mode = mode;
			memcpy(f->e[f->ne++].oid, oid, 41);
		} else {
			free(path);
			goto out;
		}
	}
	qsort(f->e, f->ne, sizeof *f->e, ent_cmp);
	qsort(f->d, f->nd, sizeof *f->d, dir_cmp);
	/* our trees are git's: the top one made here from the table, every
	 * directory anew, is the one git wrote (else nothing is made here) */
	for (i = 0; i < f->nd; i++)
		f->d[i].dirty = 1;
	if (write_dirty(s, f, 1) < 0 || strcmp(f->d[0].oid, tree))
		goto out;
	memcpy(f->base, commit, 41);
	memcpy(f->tree, tree, 41);
	f->seq = s->seq;
	f->have = 1;
	load_ignored(s, f);
	rc = 0;
out:
	if (rc < 0)
		forget(f);
	buf_free(&out);
	return rc;
}

/* Appends a tree entry: "MODE NAME\0" and the 20 bytes of the id. */
static int
put_entry(struct buf *t, unsigned mode, const char *name, size_t n,
	  const unsigned char bin[20])
{
	const char *m = mode == 0100644 ? "100644 " : mode == 0100755 ?
		"100755 " : mode == 0120000 ? "120000 " : "40000 ";

	return buf_append(t, m, strlen(m)) < 0 ||
		buf_append(t, name, n) < 0 || buf_putc(t, '\0') < 0 ||
		buf_append(t, bin, 20) < 0 ? -1 : 0;
}

/* The body of directory dir's tree, made anew from the table: its files
 * as they are, its subdirectories' ids as they are (where each entry is
 * noted in it).  -1 when it is left without files, but the top, which
 * is then the empty tree. */
static int
scan_dir(struct snap_fast *f, struct fdir *dir)
{
	static const char room[HEAD_ROOM];
	struct buf key = BUF_INIT(0), *t = &dir->body;
	size_t plen = strlen(dir->path) + (*dir->path ? 1 : 0), i;
	int rc = -1;

	buf_reset(t);
	if (buf_printf(&key, "%s%s", dir->path, *dir->path ? "/" : "") < 0 ||
	    buf_append(t, room, sizeof room) < 0)
		goto out;
	for (i = lower(f, key.data); i < f->ne &&
	     !strncmp(f->e[i].path, key.data, plen);) {
		const char *rest = f->e[i].path + plen, *slash;
		struct fdir *sub;
		size_t n;

		if (!f->e[i].mode) {
			i++;
			continue;
		}
		slash = strchr(rest, '/');
		if (!slash) {
			f->e[i].off = t->len;
			if (put_entry(t, f->e[i].mode, rest, strlen(rest),
				      f->e[i].bin) < 0)
				goto out;
			i++;
			continue;
		}
		n = (size_t)(slash - f->e[i].path);
		buf_reset(&key);
		if (buf_append(&key, f->e[i].path, n) < 0 ||
		    !(sub = find_dir(f, key.data)))
			goto out;
		if (put_entry(t, 040000, rest, (size_t)(slash - rest),
			      sub->bin) < 0 || buf_putc(&key, '0') < 0)
			goto out;
		sub->off = t->len - 20;
		/* past everything under it: "NAME0" follows "NAME/..." */
		i = lower(f, key.data);
		buf_reset(&key);
		if (buf_printf(&key, "%s%s", dir->path, *dir->path ? "/" : "")
		    < 0)
			goto out;
	}
	/* a directory left without files is no tree of its parent's, but
	 * an empty directory, recorded apart (a whole walk); the top left
	 * without files is the empty tree, which git writes for an empty
	 * workspace (or one of only ignored files) too */
	if (t->len == HEAD_ROOM && *dir->path)
		goto out;
	dir->valid = 1;
	rc = 0;
out:
	buf_free(&key);
	return rc;
}

static int
deeper(const void *a, const void *b)
{
	size_t x = strlen((*(struct fdir *const *)a)->path);
	size_t y = strlen((*(struct fdir *const *)b)->path);

	return (x < y) - (x > y);
}

/* The directory above path ("" for the top). */
static struct fdir *
parent_of(struct snap_fast *f, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *p;
	struct fdir *d;

	if (!slash)
		return find_dir(f, "");
	if (!(p = strndup(path, (size_t)(slash - path))))
		return NULL;
	d = find_dir(f, p);
	free(p);
	return d;
}

/* Writes the trees of the dirty directories anew (dry: their ids only),
 * the deepest first, each id into its parent's body. */
static int
write_dirty(struct snap *s, struct snap_fast *f, int dry)
{
	struct fdir **q = NULL, *up;
	size_t n = 0, i;
	int rc = -1;

	for (i = 0; i < f->nd; i++)
		n += f->d[i].dirty;
	if (!n)
		return 0;
	if (!(q = malloc(n * sizeof *q)))
		return -1;
	for (i = n = 0; i < f->nd; i++)
		if (f->d[i].dirty)
			q[n++] = &f->d[i];
	qsort(q, n, sizeof *q, deeper);
	for (i = 0; i < n; i++) {
		if ((!q[i]->valid && scan_dir(f, q[i]) < 0) ||
		    put_object(s, "tree", (unsigned char *)q[i]->body.data,
			       HEAD_ROOM, q[i]->body.len - HEAD_ROOM, dry,
			       q[i]->oid) < 0 ||
		    hex_to_bin(q[i]->oid, q[i]->bin) < 0)
			goto out;
		q[i]->dirty = 0;
		if (!*q[i]->path)
			continue;
		if (!(up = parent_of(f, q[i]->path)))
			goto out;
		if (up->valid)
			memcpy(up->body.data + q[i]->off, q[i]->bin, 20);
	}
	rc = 0;
out:
	free(q);
	return rc;
}

/* Marks the directories above the entry e to be written anew, its own
 * body patched (or, e removed, made anew). */
static int
dirty_above(struct snap_fast *f, const struct fent *e)
{
	const char *base = strrchr(e->path, '/');
	struct fdir *d = parent_of(f, e->path);
	char *p, *slash;

	if (!d)
		return -1;
	base = base ? base + 1 : e->path;
	if (!e->mode)
		d->valid = 0;
	else if (d->valid) {
		memcpy(d->body.data + e->off, e->mode == 0100644 ? "100644" :
		       e->mode == 0100755 ? "100755" : "120000", 6);
		memcpy(d->body.data + e->off + 7 + strlen(base) + 1, e->bin,
		       20);
	}
	if (!(p = strdup(e->path)))
		return -1;
	while ((slash = strrchr(p, '/'))) {
		*slash = '\0';
		if (!(d = find_dir(f, p))) {
			free(p);
			return -1;
		}
		d->dirty = 1;
	}
	free(p);
	if (!(d = find_dir(f, "")))
		return -1;
	d->dirty = 1;
	return 0;
}

/* The path's blob (written) and mode as they are now; 1: not a file or
 * link of the tree any more (gone), -1: a whole walk is needed. */
static int
rehash(struct snap *s, const char *path, unsigned *mode, char oid[41])
{
	unsigned char *b = NULL;
	struct stat st, fst;
	size_t got = 0;
	ssize_t r;
	int fd, rc = -1;

	if (lstat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
	if (S_ISLNK(st.st_mode)) {
		if (!(b = malloc(HEAD_ROOM + PATH_MAX)))
			return -1;
		r = readlink(path, (char *)b + HEAD_ROOM, PATH_MAX);
		*mode = 0120000;
		if (r >= 0 && r < PATH_MAX)
			rc = put_object(s, "blob", b, HEAD_ROOM, (size_t)r, 0,
					oid);
		free(b);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (uintmax_t)st.st_size > FAST_MAX_FILE)
		return -1;
	*mode = st.st_mode & S_IXUSR ? 0100755 : 0100644;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	/* the file lstat saw, whole (one that grows meanwhile is named
	 * by an event again) */
	if (fstat(fd, &fst) < 0 || fst.st_ino != st.st_ino ||
	    fst.st_dev != st.st_dev ||
	    !(b = malloc(HEAD_ROOM + (size_t)st.st_size + 1)))
		goto out;
	while ((r = read(fd, b + HEAD_ROOM + got,
			 (size_t)st.st_size + 1 - got)) > 0)
		got += (size_t)r;
	if (r < 0 || got != (size_t)st.st_size)
		goto out;
	rc = put_object(s, "blob", b, HEAD_ROOM, got, 0, oid);
out:
	free(b);
	close(fd);
	return rc;
}

/* The snapshot from the last one and the paths changed since: 0 done,
 * 1 a whole walk is needed (the table may be half changed: forgotten). */
static int
from_changes(struct snap *s, struct snap_fast *f, const struct snap_meta *m,
	     char commit[41])
{
	struct buf paths = BUF_INIT(0), obj = BUF_INIT(0);
	char **v = NULL, tree[41], *msg = NULL;
	size_t n = 0, i, j;
	long files = 0;
	int rc = 1;

	if (!f->have || !snap_ref_is(s, f->seq, f->base))
		goto out; /* dropped by gc, or never taken */
	if (drain(f, &paths))
		goto out;
	for (i = 0; i < paths.len; i += strlen(paths.data + i) + 1)
		n++;
	if (!(v = calloc(n + 1, sizeof *v)))
		goto out;
	for (i = j = 0; i < paths.len; i += strlen(paths.data + i) + 1)
		v[j++] = paths.data + i;
	qsort(v, n, sizeof *v, str_cmp);
	for (i = 0; i < n; i++) {
		struct fent *e;
		unsigned mode = 0;
		char oid[41];
		int r;

		if (i && !strcmp(v[i], v[i - 1]))
			continue;
		if (strchr(v[i], '\n') || v[i][0] == '"')
			goto out;
		e = find_ent(f, v[i]);
		if (!e && ignored(f, v[i]))
			continue; /* git ignores it, as at the last walk */
		r = rehash(s, v[i], &mode, oid);
		if (r < 0)
			goto out;
		if (r == 1) { /* gone */
			if (!e || !e->mode)
				continue;
			e->mode = 0; /* (its directory emptied: build fails) */
		} else if (!e) {
			goto out; /* new: ignored or not, git says */
		} else if (e->mode == mode && !strcmp(e->oid, oid)) {
			continue;
		} else {
			e->mode = mode;
			memcpy(e->oid, oid, 41);
			if (hex_to_bin(oid, e->bin) < 0)
				goto out;
		}
		if (dirty_above(f, e) < 0)
			goto out;
		files++;
	}
	if (write_dirty(s, f, 0) < 0)
		goto out;
	memcpy(tree, find_dir(f, "")->oid, 41);
	if (!(msg = snap_message(m, files, "changes", f->dirs)))
		goto out;
	{
		static const char room[HEAD_ROOM];
		long long now = (long long)time(NULL);

		/* what git commit-tree writes, with TZ=UTC */
		if (buf_append(&obj, room, sizeof room) < 0 ||
		    buf_printf(&obj, "tree %s\nauthor agent-snap "
			       "<agent-snap@localhost> %lld +0000\ncommitter "
			       "agent-snap <agent-snap@localhost> %lld +0000\n"
			       "\n%s\n", tree, now, now, msg) < 0 ||
		    put_object(s, "commit", (unsigned char *)obj.data,
			       HEAD_ROOM, obj.len - HEAD_ROOM, 0, commit) < 0)
			goto out;
	}
	{
		struct ah_error err = { 0 };

		if (snap_write_ref(s, commit, f->seq + 1, NULL, &err) < 0)
			goto out;
	}
	/* the table is the new snapshot's */
	for (i = j = 0; i < f->ne; i++) {
		if (f->e[i].mode)
			f->e[j++] = f->e[i];
		else
			free(f->e[i].path);
	}
	f->ne = j;
	memcpy(f->base, commit, 41);
	memcpy(f->tree, tree, 41);
	f->seq = s->seq;
	rc = 0;
out:
	if (rc)
		forget(f);
	free(v);
	free(msg);
	buf_free(&paths);
	buf_free(&obj);
	return rc;
}

/* --- the stage's snapshots ----------------------------------------------- */

struct snap_fast *
snap_fast_new(int full)
{
	struct snap_fast *f = calloc(1, sizeof *f);

	if (!f)
		return NULL;
	f->ifd = -1;
	f->off = full;
	return f;
}

void
snap_fast_free(struct snap_fast *f)
{
	if (!f)
		return;
	unwatch(f);
	forget(f);
	free(f);
}

int
snap_fast_take(struct snap *s, struct snap_fast *f, const struct snap_meta *m,
	       char id[41], struct ah_error *err)
{
	struct buf gone = BUF_INIT(0);
	char tree[41];
	cJSON *dirs = NULL;
	int watch;

	if (!f->off && from_changes(s, f, m, id) == 0)
		return 0;
	/* a whole walk: what changed before it is in it, and the watches
	 * are in place (made after the queue is read) before it begins.
	 * But not for the first snapshot: a stage of --step takes one only,
	 * and would pay for watches it never reads (their making, the
	 * tree's loading, and at its exit the kernel's freeing them, which
	 * waits a grace period: 14 ms); so the second snapshot is a whole
	 * walk too, and the third the first from the changes. */
	watch = !f->off && f->walked;
	f->walked = 1;
	if (watch) {
		drain(f, &gone);
		buf_free(&gone);
		if (rewalk(f) < 0) {
			unwatch(f);
			f->off = 1;
			watch = 0;
		}
	}
	if (snap_take_full(s, m, id, tree, &dirs, err) < 0)
		return -1;
	if (!watch || load(s, f, id, tree, dirs) < 0) {
		/* (load took dirs, and forgot them on failure) */
		if (!watch)
			cJSON_Delete(dirs);
		/* a submodule, or ls-tree failed: walks from now on */
		else {
			unwatch(f);
			f->off = 1;
		}
	}
	return 0;
}
