/*
 * projwalk.c: where the project's instructions are (agent-session(1),
 * --project --walk): AGENTS.md (CLAUDE.md in a directory without one)
 * of each directory from the repository's top (the nearest one up with
 * a .git, else the workspace) down to the workspace.  Never through a
 * symbolic link, never a FIFO, never another user's file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "priv.h"

/* path is the user's, or root's (what git accepts as a repository by
 * default: safe.directory).  As test -O (the file a link names) and
 * stat -c %u (the link itself) said it in agent-run. */
static int
ours(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && st.st_uid == geteuid())
		return 1;
	return lstat(path, &st) == 0 && st.st_uid == 0;
}

static int
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* d made its parent: "/a/b" -> "/a", "/a" -> "/" */
static void
up(char *d)
{
	char *slash = strrchr(d, '/');

	if (!slash || slash == d) {
		d[0] = '/';
		d[1] = '\0';
	} else
		*slash = '\0';
}

static int
note(struct buf *notes, struct ah_error *err, const char *fmt,
     const char *a, const char *b)
{
	if (buf_printf(notes, fmt, a, b) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	return 0;
}

/* a/b, or NULL */
static char *
join(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	char *s = malloc(n + m + 2);

	if (s) {
		memcpy(s, a, n);
		s[n] = '/';
		memcpy(s + n + 1, b, m + 1);
		if (n == 1 && a[0] == '/')
			memmove(s + 1, s + 2, m + 1);
	}
	return s;
}

void
project_walk_free(char **pairs, int n)
{
	int i;

	for (i = 0; pairs && i < n; i++)
		free(pairs[i]);
	free(pairs);
}

int
project_walk(const char *dir, char ***pairs, int *n, struct buf *notes,
	     struct ah_error *err)
{
	static const char *const names[] = { "AGENTS.md", "CLAUDE.md" };
	char *top = NULL, *d = NULL, *f = NULL, *git = NULL, **more;
	struct stat st;
	size_t k, len;
	int rc = -1;

	*pairs = NULL;
	*n = 0;
	if (dir[0] != '/')
		return ah_fail(err, AH_EFORMAT, "'%s' is not an absolute "
			       "path", dir);
	top = strdup(dir);
	d = strdup(dir);
	if (!top || !d)
		goto oom;
	/* the top: the nearest directory up with a .git; a repository git
	 * would not work in (another user's, in a shared /tmp say) is not
	 * ours to take rules from */
	for (;;) {
		free(git);
		if (!(git = join(d, ".git")))
			goto oom;
		if (exists(git)) {
			if (ours(d) && ours(git)) {
				free(top);
				if (!(top = strdup(d)))
					goto oom;
			} else if (note(notes, err, "'%s' is another user's "
					"repository: its AGENTS.md files are "
					"left out\n", d, "") < 0)
				goto out;
			break;
		}
		if (!strcmp(d, "/"))
			break;
		up(d);
	}
	/* from the workspace (the most specific) up to the top */
	memcpy(d, dir, strlen(dir) + 1);
	for (;;) {
		for (k = 0; k < sizeof names / sizeof *names; k++) {
			free(f);
			if (!(f = join(d, names[k])))
				goto oom;
			if (exists(f) && (!ours(d) || !ours(f))) {
				if (note(notes, err, "'%s' is another user's: "
					 "left out\n", f, "") < 0)
					goto out;
				break;
			}
			if ((lstat(f, &st) == 0 && S_ISLNK(st.st_mode)) ||
			    (stat(f, &st) == 0 && !S_ISREG(st.st_mode))) {
				if (note(notes, err, "'%s' is not a regular "
					 "file: left out\n", f, "") < 0)
					goto out;
				break;
			}
			if (stat(f, &st) == 0) {
				/* REL: its path under the top */
				len = !strcmp(top, "/") ? 1 : strlen(top) + 1;
				more = realloc(*pairs, (size_t)(*n + 2) *
					       sizeof *more);
				if (!more)
					goto oom;
				*pairs = more;
				if (!(more[*n] = strdup(f + len)))
					goto oom;
				more[++*n] = f;
				++*n;
				f = NULL;
				break;
			}
		}
		if (!strcmp(d, top))
			break;
		up(d);
	}
	rc = 0;
	goto out;
oom:
	ah_fail(err, AH_ENOMEM, "out of memory");
out:
	if (rc < 0) {
		project_walk_free(*pairs, *n);
		*pairs = NULL;
		*n = 0;
	}
	free(top);
	free(d);
	free(f);
	free(git);
	return rc;
}
