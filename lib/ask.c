/* ask.c: what a person approving a tool call is shown.
 *
 * The question must show the call as it will run, on one screen: a
 * command of "rm -rf src tests", 150 blank lines and "make test" must not
 * scroll its first line away before "Allow?".  So runs of blank lines are
 * collapsed into one line that counts them, a long text is cut with a
 * count of what is not shown, and the first line is kept apart for the
 * caller to repeat next to the question.  A change to a file is shown as
 * a unified diff of the file as it is and as it would be. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

/* Is line[0..n) empty, or spaces and tabs only (as escaped: a tab stays
 * a tab)? */
static int
blank(const char *line, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (line[i] != ' ' && line[i] != '\t')
			return 0;
	return 1;
}

/* The blank lines held back, as the text shows them: one stays a blank
 * line, more become one line that counts them. */
static int
put_blanks(struct buf *b, size_t run)
{
	if (run == 1)
		return buf_putc(b, '\n');
	return run ? buf_printf(b, "[%zu blank lines]\n", run) : 0;
}

int
ask_text(const char *s, size_t n, size_t max_lines, size_t max_bytes,
	 struct ask_shown *out)
{
	struct buf b = BUF_INIT(0), first = BUF_INIT(0);
	size_t len, pos = 0, lines = 0, run = 0, total = 0, cut_at = 0, k, shown;
	char *t = utf8_for_terminal(s, n, TERM_KEEP_LINES | TERM_SHOW_HIDDEN,
				    &len);
	int cut = 0;

	memset(out, 0, sizeof *out);
	if (!t)
		return -1;
	/* the lines of the text (a last one without newline counts) */
	for (k = 0; k < len; k++)
		total += t[k] == '\n';
	total += len && t[len - 1] != '\n';
	out->lines = total;
	while (pos < len) {
		const char *line = t + pos, *nl = memchr(line, '\n', len - pos);
		size_t ln = nl ? (size_t)(nl - line) : len - pos;

		if (blank(line, ln)) {
			run++;
			pos += ln + (nl != NULL);
			continue;
		}
		if (!first.len && (buf_append(&first, line, ln > 100 ?
					      utf8_floor(line, ln, 100) : ln) < 0 ||
				   (ln > 100 && buf_append(&first, " [...]", 6) < 0)))
			goto fail;
		if (put_blanks(&b, run) < 0)
			goto fail;
		lines += run > 1 ? 1 : run;
		run = 0;
		if (lines >= max_lines || b.len >= max_bytes) {
			cut = 1;
			cut_at = pos;
			break;
		}
		shown = ln;
		if (b.len + ln > max_bytes) {
			shown = utf8_floor(line, ln, max_bytes - b.len);
			cut = 1;
		}
		if (buf_append(&b, line, shown) < 0 || buf_putc(&b, '\n') < 0)
			goto fail;
		lines++;
		pos += shown;
		if (cut) {
			cut_at = pos;
			break;
		}
		pos += nl != NULL;
	}
	if (!cut && put_blanks(&b, run) < 0)
		goto fail;
	if (cut) {
		size_t more = 0;

		for (k = cut_at; k < len; k++)
			more += t[k] == '\n';
		more += t[len - 1] != '\n';
		if (buf_printf(&b, "[... %zu more line%s (%zu bytes) not shown: "
			       "%zu lines in all ...]\n", more, more == 1 ? ""
			       : "s", len - cut_at, total) < 0)
			goto fail;
	}
	if (buf_append(&b, "", 0) < 0 || buf_append(&first, "", 0) < 0)
		goto fail;
	free(t);
	out->text = buf_detach(&b, NULL);
	out->first = buf_detach(&first, NULL);
	return 0;
fail:
	free(t);
	buf_free(&b);
	buf_free(&first);
	return -1;
}

void
ask_shown_free(struct ask_shown *s)
{
	free(s->text);
	free(s->first);
	memset(s, 0, sizeof *s);
}

/* --- a unified diff, bounded */

struct lines {
	const char **p; /* the start of each line */
	size_t *n;      /* its length, without the newline */
	size_t count;
};

static int
split(const char *s, size_t len, struct lines *l)
{
	size_t i, k = 0, cap = 1;

	for (i = 0; i < len; i++)
		cap += s[i] == '\n';
	l->p = malloc(cap * sizeof *l->p);
	l->n = malloc(cap * sizeof *l->n);
	l->count = 0;
	if (!l->p || !l->n)
		return -1;
	for (i = 0; i <= len; i++)
		if (i == len || s[i] == '\n') {
			if (i == len && i == k)
				break; /* no line after the last newline */
			l->p[l->count] = s + k;
			l->n[l->count++] = i - k;
			k = i + 1;
		}
	return 0;
}

static int
same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], a->n[i]);
}

/* One line of the diff, marked. */
static int
put_line(struct buf *b, char mark, const char *p, size_t n)
{
	return buf_putc(b, mark) < 0 || buf_append(b, p, n) < 0 ||
	       buf_putc(b, '\n') < 0 ? -1 : 0;
}

#define DIFF_CONTEXT 3
#define DIFF_MAX_CELLS 250000 /* the longest-common-subsequence table */

int
ask_diff(const char *path, const char *old, size_t olen, const char *new,
	 size_t nlen, char **out)
{
	struct lines a = { 0 }, b = { 0 };
	struct buf d = BUF_INIT(0);
	size_t pre = 0, suf = 0, m, n, i, j, start, k;
	uint32_t *t = NULL;
	char *ops = NULL; /* ' ', '-', '+' for each line of the middle */
	size_t nops = 0;
	int rc = -1;

	*out = NULL;
	if (split(old, olen, &a) < 0 || split(new, nlen, &b) < 0)
		goto out;
	while (pre < a.count && pre < b.count && same(&a, pre, &b, pre))
		pre++;
	while (suf < a.count - pre && suf < b.count - pre &&
	       same(&a, a.count - 1 - suf, &b, b.count - 1 - suf))
		suf++;
	m = a.count - pre - suf;
	n = b.count - pre - suf;
	ops = malloc(m + n + 1);
	if (!ops)
		goto out;
	if (m && n && (m + 1) * (n + 1) <= DIFF_MAX_CELLS) {
		/* t[i][j]: the longest common subsequence of the middle's
		 * lines from i and from j on */
		t = calloc((m + 1) * (n + 1), sizeof *t);
		if (!t)
			goto out;
		for (i = m; i-- > 0;)
			for (j = n; j-- > 0;)
				t[i * (n + 1) + j] = same(&a, pre + i, &b, pre + j)
					? t[(i + 1) * (n + 1) + j + 1] + 1
					: t[(i + 1) * (n + 1) + j] >
					  t[i * (n + 1) + j + 1]
					? t[(i + 1) * (n + 1) + j]
					: t[i * (n + 1) + j + 1];
		for (i = j = 0; i < m || j < n;)
			if (i < m && j < n && same(&a, pre + i, &b, pre + j)) {
				ops[nops++] = ' ';
				i++;
				j++;
			} else if (j == n || (i < m &&
				   t[(i + 1) * (n + 1) + j] >=
				   t[i * (n + 1) + j + 1])) {
				ops[nops++] = '-';
				i++;
			} else {
				ops[nops++] = '+';
				j++;
			}
	} else {
		/* too large to compare line by line: all out, all in */
		memset(ops, '-', m);
		memset(ops + m, '+', n);
		nops = m + n;
	}
	if (buf_printf(&d, "--- %s\n+++ %s\n", path, path) < 0)
		goto out;
	if (!nops) {
		if (buf_printf(&d, "(no change)\n") < 0)
			goto out;
		rc = 0;
		goto out;
	}
	/* one hunk: the middle, with its context */
	start = pre > DIFF_CONTEXT ? pre - DIFF_CONTEXT : 0;
	{
		size_t oc = 0, nc = 0, after = suf < DIFF_CONTEXT ? suf
							     : DIFF_CONTEXT;

		for (k = 0; k < nops; k++) {
			oc += ops[k] != '+';
			nc += ops[k] != '-';
		}
		oc += pre - start + after;
		nc += pre - start + after;
		if (buf_printf(&d, "@@ -%zu,%zu +%zu,%zu @@\n", oc ? start + 1
			       : start, oc, nc ? start + 1 : start, nc) < 0)
			goto out;
		for (k = start; k < pre; k++)
			if (put_line(&d, ' ', a.p[k], a.n[k]) < 0)
				goto out;
		for (k = 0, i = pre, j = pre; k < nops; k++)
			if (ops[k] == ' ') {
				if (put_line(&d, ' ', a.p[i], a.n[i]) < 0)
					goto out;
				i++;
				j++;
			} else if (ops[k] == '-') {
				if (put_line(&d, '-', a.p[i], a.n[i]) < 0)
					goto out;
				i++;
			} else {
				if (put_line(&d, '+', b.p[j], b.n[j]) < 0)
					goto out;
				j++;
			}
		for (k = 0; k < after; k++)
			if (put_line(&d, ' ', a.p[a.count - suf + k],
				     a.n[a.count - suf + k]) < 0)
				goto out;
	}
	if (olen && old[olen - 1] != '\n' &&
	    buf_printf(&d, "\\ No newline at end of file (before)\n") < 0)
		goto out;
	if (nlen && new[nlen - 1] != '\n' &&
	    buf_printf(&d, "\\ No newline at end of file (after)\n") < 0)
		goto out;
	rc = 0;
out:
	if (rc == 0 && buf_append(&d, "", 0) == 0)
		*out = buf_detach(&d, NULL);
	else
		rc = -1;
	buf_free(&d);
	free(t);
	free(ops);
	free(a.p);
	free(a.n);
	free(b.p);
	free(b.n);
	return rc;
}
