/* patch.c: the patch format of apply_patch (OpenAI's, the one its models
 * are trained on): "*** Begin Patch", file operations, "*** End Patch".
 * Parsing it, and making the new text of one file from its hunks; the
 * files themselves are read and written by tools.c.  What is accepted is
 * in tool-exec(1), "apply_patch". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define PATCH_MAX_FILES 256

/* Fills msg with a reason and returns 1. */
/* Does line start with marker? *rest: what follows it. */
static int
marker(const char *line, const char *m, const char **rest)
{
	size_t k = strlen(m);

	if (strncmp(line, m, k))
		return 0;
	if (rest)
		*rest = line + k;
	return 1;
}

/* The length of s without its trailing blanks. */
static size_t
rtrim_len(const char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	return n;
}

/* A marker line, as models write them: trailing blanks do not count. */
static int
is_line(const char *line, const char *m)
{
	return rtrim_len(line) == strlen(m) && !strncmp(line, m, strlen(m));
}

/* Appends s to a growing array of pointers. */
static int
push(const char ***v, size_t *n, size_t *cap, const char *s)
{
	const char **more;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		more = realloc(*v, *cap * sizeof **v);
		if (!more)
			return -1;
		*v = more;
	}
	(*v)[(*n)++] = s;
	return 0;
}

/* A new file operation at the end of p. */
static struct patch_file *
new_file(struct patch *p, int kind, const char *path)
{
	struct patch_file *more;

	more = realloc(p->files, (p->n + 1) * sizeof *p->files);
	if (!more)
		return NULL;
	p->files = more;
	memset(&p->files[p->n], 0, sizeof *p->files);
	p->files[p->n].kind = kind;
	p->files[p->n].path = path;
	return &p->files[p->n++];
}

/* A new, empty hunk at the end of f. */
static struct patch_hunk *
new_hunk(struct patch_file *f)
{
	struct patch_hunk *more;

	more = realloc(f->hunks, (f->nhunks + 1) * sizeof *f->hunks);
	if (!more)
		return NULL;
	f->hunks = more;
	memset(&f->hunks[f->nhunks], 0, sizeof *f->hunks);
	return &f->hunks[f->nhunks++];
}

/* Is line the start of the next file operation, or the end? */
static int
is_header(const char *line)
{
	return marker(line, "*** Add File: ", NULL) ||
	       marker(line, "*** Delete File: ", NULL) ||
	       marker(line, "*** Update File: ", NULL) ||
	       is_line(line, "*** End Patch");
}

/* The path of a header: trailing blanks dropped, one that is empty
 * refused. */
static int
header_path(char *rest, int no, const char *what, char *msg, size_t size)
{
	rest[rtrim_len(rest)] = '\0';
	if (!*rest)
		return say_into(msg, size, 1, "line %d: %s names no path", no, what);
	return 0;
}

/* The hunks of an Update File, from line *i on; *i is left at the next
 * header.  0, 1 (msg) or -1. */
static int
parse_update(struct patch_file *f, char **lines, size_t n, size_t *i,
	     char *msg, size_t size)
{
	struct patch_hunk *h = NULL;
	size_t capa = 0, capo = 0, capn = 0;
	const char *rest;
	char *l;

	for (; *i < n && !is_header(lines[*i]); (*i)++) {
		l = lines[*i];
		if (marker(l, "@@", &rest) && (!*rest || *rest == ' ')) {
			/* @@ after lines starts a hunk; @@ after @@ is one
			 * more anchor of the same hunk */
			if (!h || h->nold || h->nnew || h->eof) {
				if (h && !h->nold && !h->nnew)
					return say_into(msg, size, 1, "line %zu: a "
						      "hunk of '%s' has no lines",
						      *i + 1, f->path);
				if (!(h = new_hunk(f)))
					return -1;
				capa = capo = capn = 0;
			}
			rest += *rest == ' ';
			if (rtrim_len(rest) && push(&h->anchors, &h->nanchors,
						    &capa, rest) < 0)
				return -1;
			continue;
		}
		if (is_line(l, "*** End of File")) {
			if (!h || (!h->nold && !h->nnew))
				return say_into(msg, size, 1, "line %zu: *** End of "
					      "File ends no hunk", *i + 1);
			h->eof = 1;
			continue;
		}
		if (h && h->eof)
			return say_into(msg, size, 1, "line %zu: a line after *** "
				      "End of File (a new hunk starts with @@)",
				      *i + 1);
		/* the first hunk of a file may leave out its @@ */
		if (!h && !(h = new_hunk(f)))
			return -1;
		if (*l == ' ' || !*l) {
			/* a line left empty is an empty line of context */
			if (push(&h->old, &h->nold, &capo, *l ? l + 1 : l) < 0 ||
			    push(&h->new, &h->nnew, &capn, *l ? l + 1 : l) < 0 ||
			    buf_putc(&h->kinds, ' ') < 0)
				return -1;
		} else if (*l == '-') {
			if (push(&h->old, &h->nold, &capo, l + 1) < 0 ||
			    buf_putc(&h->kinds, '-') < 0)
				return -1;
		} else if (*l == '+') {
			if (push(&h->new, &h->nnew, &capn, l + 1) < 0 ||
			    buf_putc(&h->kinds, '+') < 0)
				return -1;
		} else {
			return say_into(msg, size, 1, "line %zu: '%.80s' is no line "
				      "of a hunk of '%s' (those start with ' ', "
				      "'-' or '+'; a hunk with @@)", *i + 1, l,
				      f->path);
		}
	}
	if (h && !h->nold && !h->nnew)
		return say_into(msg, size, 1, "a hunk of '%s' has no lines", f->path);
	if (!f->nhunks && !f->move)
		return say_into(msg, size, 1, "*** Update File: %s has no hunk",
			      f->path);
	return 0;
}

int
patch_parse(const char *text, struct patch *p, char *msg, size_t size)
{
	char **lines = NULL, *s, *e, *rest;
	size_t n = 0, cap = 0, i, capv;
	struct patch_file *f;
	int rc = -1;

	memset(p, 0, sizeof *p);
	/* blank lines around the envelope do not count */
	while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
		text++;
	if (!(p->text = strdup(text)))
		return -1;
	e = p->text + strlen(p->text);
	while (e > p->text && strchr(" \t\r\n", e[-1]))
		*--e = '\0';
	for (s = p->text; s; s = e) {
		e = strchr(s, '\n');
		if (e)
			*e++ = '\0';
		/* lines that end in CR LF: the CR is no part of them */
		if (*s && s[strlen(s) - 1] == '\r')
			s[strlen(s) - 1] = '\0';
		if (n == cap) {
			char **more;

			cap = cap ? cap * 2 : 64;
			if (!(more = realloc(lines, cap * sizeof *lines)))
				goto out;
			lines = more;
		}
		lines[n++] = s;
	}
	rc = 1;
	if (!n || !is_line(lines[0], "*** Begin Patch")) {
		say_into(msg, size, 1, "the patch must start with '*** Begin Patch'");
		goto out;
	}
	if (n < 2 || !is_line(lines[n - 1], "*** End Patch")) {
		say_into(msg, size, 1, "the patch must end with '*** End Patch'");
		goto out;
	}
	for (i = 1; i < n - 1;) {
		if (p->n == PATCH_MAX_FILES) {
			say_into(msg, size, 1, "more than %d files in one patch",
			       PATCH_MAX_FILES);
			goto out;
		}
		if (marker(lines[i], "*** Add File: ", (const char **)&rest)) {
			if (header_path(rest, (int)i + 1, "*** Add File", msg,
					size) || !(f = new_file(p, PATCH_ADD, rest)))
				goto fail;
			capv = 0;
			/* the lines are f's as they come: patch_free frees
			 * them whatever happens next */
			for (i++; i < n - 1 && !is_header(lines[i]); i++) {
				if (lines[i][0] != '+') {
					say_into(msg, size, 1, "line %zu: every line "
					       "of *** Add File: %s starts with "
					       "'+'", i + 1, f->path);
					goto out;
				}
				if (push(&f->new, &f->nnew, &capv,
					 lines[i] + 1) < 0) {
					rc = -1;
					goto out;
				}
			}
		} else if (marker(lines[i], "*** Delete File: ",
				  (const char **)&rest)) {
			if (header_path(rest, (int)i + 1, "*** Delete File",
					msg, size) ||
			    !(f = new_file(p, PATCH_DELETE, rest)))
				goto fail;
			i++;
			if (i < n - 1 && !is_header(lines[i])) {
				say_into(msg, size, 1, "line %zu: *** Delete File: %s "
				       "takes no lines", i + 1, f->path);
				goto out;
			}
		} else if (marker(lines[i], "*** Update File: ",
				  (const char **)&rest)) {
			if (header_path(rest, (int)i + 1, "*** Update File",
					msg, size) ||
			    !(f = new_file(p, PATCH_UPDATE, rest)))
				goto fail;
			i++;
			if (i < n - 1 && marker(lines[i], "*** Move to: ",
						(const char **)&rest)) {
				if (header_path(rest, (int)i + 1, "*** Move to",
						msg, size))
					goto out;
				f->move = rest;
				i++;
			}
			rc = parse_update(f, lines, n - 1, &i, msg, size);
			if (rc)
				goto out;
			rc = 1;
		} else {
			say_into(msg, size, 1, "line %zu: '%.80s' is not '*** Add "
			       "File: ', '*** Delete File: ' nor '*** Update "
			       "File: '", i + 1, lines[i]);
			goto out;
		}
	}
	if (!p->n) {
		say_into(msg, size, 1, "the patch changes no file");
		goto out;
	}
	rc = 0;
	goto out;
fail:
	/* header_path said why, or memory ran out */
	rc = msg[0] ? 1 : -1;
out:
	free(lines);
	if (rc)
		patch_free(p);
	return rc;
}

void
patch_free(struct patch *p)
{
	size_t i, k;

	for (i = 0; p->files && i < p->n; i++) {
		for (k = 0; k < p->files[i].nhunks; k++) {
			free(p->files[i].hunks[k].anchors);
			free(p->files[i].hunks[k].old);
			free(p->files[i].hunks[k].new);
			buf_free(&p->files[i].hunks[k].kinds);
		}
		free(p->files[i].hunks);
		free(p->files[i].new);
	}
	free(p->files);
	free(p->text);
	memset(p, 0, sizeof *p);
}

/* Do a line of the file (its text a[0..an)) and one of the patch match:
 * pass 0 exactly, pass 1 but for trailing blanks. */
static int
same(const char *a, size_t an, const char *b, int pass)
{
	size_t bn = strlen(b);

	if (pass == 1) {
		while (an && strchr(" \t\r", a[an - 1]))
			an--;
		while (bn && strchr(" \t\r", b[bn - 1]))
			bn--;
	}
	return an == bn && !memcmp(a, b, an);
}

/* An anchor matches a line that, leading and trailing blanks aside,
 * is the anchor's text. */
static int
anchor_is(const char *a, size_t an, const char *anchor)
{
	size_t bn;

	while (an && strchr(" \t", *a))
		a++, an--;
	while (an && strchr(" \t\r", a[an - 1]))
		an--;
	while (*anchor == ' ' || *anchor == '\t')
		anchor++;
	bn = rtrim_len(anchor);
	return an == bn && !memcmp(a, anchor, an);
}

/* A line of the file: where it starts and its length. */
struct fline {
	const char *s;
	size_t n;
};

/* The first place at or after from where the k lines of want match,
 * exactly first, then but for trailing blanks; with eof only at the
 * end of the file.  nl places, or (size_t)-1. */
static size_t
seek(const struct fline *fl, size_t nl, size_t from, const char *const *want,
     size_t k, int eof)
{
	size_t at, j, first, last;
	int pass;

	if (k > nl || from > nl - k)
		return (size_t)-1;
	first = eof ? nl - k : from;
	last = nl - k;
	for (pass = 0; pass < 2; pass++)
		for (at = first; at <= last; at++) {
			for (j = 0; j < k; j++)
				if (!same(fl[at + j].s, fl[at + j].n, want[j],
					  pass))
					break;
			if (j == k)
				return at;
		}
	return (size_t)-1;
}

/* Appends k lines, each with a newline, to out. */
static int
put_lines(struct buf *out, const char *const *v, size_t k)
{
	size_t j;

	for (j = 0; j < k; j++)
		if (buf_append(out, v[j], strlen(v[j])) < 0 ||
		    buf_putc(out, '\n') < 0)
			return -1;
	return 0;
}

/* The lines of hunk h in place of the kold lines at fl: those of
 * context as the file has them (they may differ in trailing blanks),
 * the added ones; only the first kold and knew count. */
static int
put_hunk(struct buf *out, const struct patch_hunk *h, const struct fline *fl,
	 size_t kold, size_t knew)
{
	size_t i, io = 0, in = 0;
	const char *s;

	for (i = 0; i < h->kinds.len; i++) {
		if (h->kinds.data[i] == '-') {
			io++;
			continue;
		}
		if (h->kinds.data[i] == ' ' && (io >= kold || in >= knew))
			continue;
		if (h->kinds.data[i] == '+' && in >= knew)
			continue;
		s = h->kinds.data[i] == ' ' ? fl[io].s : h->new[in];
		if (buf_append(out, s, h->kinds.data[i] == ' ' ? fl[io].n
			       : strlen(s)) < 0 || buf_putc(out, '\n') < 0)
			return -1;
		io += h->kinds.data[i] == ' ';
		in++;
	}
	return 0;
}

int
patch_apply(const struct patch_file *f, const char *data, size_t len,
	    struct buf *out, char *msg, size_t size)
{
	struct fline *fl = NULL;
	struct place {
		size_t at, kold, knew;
		const struct patch_hunk *h;
	} *pl = NULL, t;
	const struct patch_hunk *h;
	const char *p = data, *end = data + len, *nl;
	size_t n = 0, pos = 0, copied = 0, at, k, j, kold, knew;
	int rc = -1;

	if (f->kind == PATCH_ADD)
		return put_lines(out, f->new, f->nnew);
	/* the lines of the file; its last newline ends the last line */
	if (!(fl = calloc(len + 1, sizeof *fl)) ||
	    !(pl = calloc(f->nhunks + 1, sizeof *pl))) {
		free(fl);
		return -1;
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		fl[n].s = p;
		fl[n++].n = (size_t)((nl ? nl : end) - p);
		p = nl ? nl + 1 : end;
	}
	for (k = 0; k < f->nhunks; k++) {
		h = &f->hunks[k];
		for (j = 0; j < h->nanchors; j++) {
			for (at = pos; at < n; at++)
				if (anchor_is(fl[at].s, fl[at].n, h->anchors[j]))
					break;
			if (at == n) {
				rc = say_into(msg, size, 1, "hunk %zu of '%s': the "
					    "line '@@ %.100s' was not found%s",
					    k + 1, f->path, h->anchors[j],
					    pos ? " after the hunk before it"
						: "");
				goto out;
			}
			pos = at + 1;
		}
		kold = h->nold;
		knew = h->nnew;
		if (!kold) {
			/* lines added alone: after the anchor, else at the
			 * end of the file (where the hunks after it do not
			 * start their search) */
			at = h->nanchors ? pos : n;
		} else {
			at = seek(fl, n, pos, h->old, kold, h->eof);
			/* an empty line that closes a hunk stands for the
			 * file's last newline: tried without it */
			if (at == (size_t)-1 && kold > 1 && !*h->old[kold - 1]) {
				kold--;
				if (knew && !*h->new[knew - 1])
					knew--;
				at = seek(fl, n, pos, h->old, kold, h->eof);
			}
			if (at == (size_t)-1) {
				char after[48] = "";

				if (pos)
					snprintf(after, sizeof after, " after "
						 "line %zu", pos);
				rc = say_into(msg, size, 1, "hunk %zu of '%s' does "
					    "not match%s: its %zu line%s of "
					    "context and removal, from '%.100s', "
					    "%s not found", k + 1, f->path,
					    after, kold, kold == 1 ? "" : "s",
					    h->old[0], kold == 1 ? "was" : "were");
				goto out;
			}
		}
		pl[k].at = at;
		pl[k].kold = kold;
		pl[k].knew = knew;
		pl[k].h = h;
		if (kold || h->nanchors)
			pos = at + kold;
	}
	/* in the order of the file (stable: added lines at the same place
	 * keep the patch's order) */
	for (k = 1; k < f->nhunks; k++)
		for (j = k; j > 0 && pl[j - 1].at > pl[j].at; j--) {
			t = pl[j - 1];
			pl[j - 1] = pl[j];
			pl[j] = t;
		}
	for (k = 0; k < f->nhunks; k++) {
		for (j = copied; j < pl[k].at; j++)
			if (buf_append(out, fl[j].s, fl[j].n) < 0 ||
			    buf_putc(out, '\n') < 0)
				goto out;
		if (put_hunk(out, pl[k].h, fl + pl[k].at, pl[k].kold,
			     pl[k].knew) < 0)
			goto out;
		if (pl[k].at + pl[k].kold > copied)
			copied = pl[k].at + pl[k].kold;
	}
	for (j = copied; j < n; j++)
		if (buf_append(out, fl[j].s, fl[j].n) < 0 ||
		    buf_putc(out, '\n') < 0)
			goto out;
	rc = 0;
out:
	free(fl);
	free(pl);
	return rc;
}
