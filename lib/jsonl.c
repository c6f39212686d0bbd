/* jsonl.c: JSON Lines in and out. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

#define JSONL_CHUNK 65536

void
jsonl_reader_init(struct jsonl_reader *r, int fd, const char *name,
		  size_t max)
{
	struct buf b = BUF_INIT(max ? max : JSONL_MAX_LINE);

	r->fd = fd;
	r->name = name;
	r->lineno = 0;
	r->partial = 0;
	r->eof = 0;
	r->line = b;
	r->inpos = r->inlen = 0;
	r->in = NULL; /* allocated by the first read */
}

void
jsonl_reader_free(struct jsonl_reader *r)
{
	buf_free(&r->line);
	free(r->in);
	r->in = NULL;
}

int
jsonl_read_line(struct jsonl_reader *r, struct ah_error *err)
{
	const char *nl;
	size_t n;
	ssize_t got;
	int any = 0;

	buf_reset(&r->line);
	for (;;) {
		if (r->inpos < r->inlen) {
			n = r->inlen - r->inpos;
			nl = memchr(r->in + r->inpos, '\n', n);
			if (nl)
				n = (size_t)(nl - (r->in + r->inpos));
			if (buf_append(&r->line, r->in + r->inpos, n) < 0)
				return ah_fail(err, AH_ETOOBIG,
					       "%s: line %lu: longer than %zu "
					       "bytes", r->name, r->lineno + 1,
					       r->line.max);
			any = 1;
			r->inpos += n;
			if (nl) {
				r->inpos++;
				r->partial = 0;
				break;
			}
		}
		if (r->eof) {
			if (!any)
				return 0;
			r->partial = 1;
			break;
		}
		if (!r->in && !(r->in = malloc(JSONL_CHUNK)))
			return ah_fail(err, AH_ENOMEM, "cannot read %s: %s",
				       r->name, strerror(ENOMEM));
		got = read(r->fd, r->in, JSONL_CHUNK);
		if (got < 0) {
			if (errno == EINTR)
				return ah_fail(err, AH_EINTR, "%s: %s", r->name,
					       strerror(EINTR));
			return ah_fail_errno(err, errno, "cannot read %s",
					     r->name);
		}
		r->inpos = 0;
		r->inlen = (size_t)got;
		if (got == 0)
			r->eof = 1;
	}
	r->lineno++;
	if (!r->line.data && buf_append(&r->line, "", 0) < 0)
		return ah_fail(err, AH_ENOMEM, "%s: %s", r->name,
			       strerror(ENOMEM));
	return 1;
}

int
jsonl_ready(struct jsonl_reader *r)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };

	if (r->eof || (r->inpos < r->inlen &&
			memchr(r->in + r->inpos, '\n', r->inlen - r->inpos)))
		return 1;
	return poll(&p, 1, 0) > 0;
}

static long
hex4(const char *p, size_t n, size_t j)
{
	long v = 0;
	size_t k;

	if (j + 4 > n)
		return -1;
	for (k = j; k < j + 4; k++) {
		int c = (unsigned char)p[k], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* The \u escapes in strings of p that cJSON cannot keep: lone UTF-16
 * surrogates, which it refuses and the JSON grammar allows, and \u0000,
 * at which it would end the string, the rest of it lost (a command run
 * cut short of what the policy saw).  With fix, each becomes \ufffd, of
 * the same length.  Returns how many there are. */
static size_t
bad_escapes(char *p, size_t n, int fix)
{
	size_t i, count = 0;
	int in = 0;
	long c, d;

	for (i = 0; i < n; i++) {
		if (!in) {
			in = p[i] == '"';
			continue;
		}
		if (p[i] == '"') {
			in = 0;
			continue;
		}
		if (p[i] != '\\' || i + 1 >= n)
			continue;
		if (p[i + 1] != 'u' || (c = hex4(p, n, i + 2)) < 0) {
			i++;
			continue;
		}
		if (c >= 0xD800 && c <= 0xDBFF) {
			d = i + 7 < n && p[i + 6] == '\\' && p[i + 7] == 'u'
				    ? hex4(p, n, i + 8) : -1;
			if (d >= 0xDC00 && d <= 0xDFFF) {
				i += 11;
				continue;
			}
		} else if (c && (c < 0xDC00 || c > 0xDFFF)) {
			i += 5;
			continue;
		}
		count++;
		if (fix)
			memcpy(p + i + 2, "fffd", 4);
		i += 5;
	}
	return count;
}

cJSON *
json_parse(const char *s, size_t n, size_t *erroff)
{
	const char *end = NULL;
	char *fixed = NULL;
	const char *p = s;
	cJSON *v;
	size_t i;

	if (utf8_valid_prefix(s, n) != n) {
		fixed = utf8_sanitize(s, n, UTF8_KEEP_NUL, &n);
		if (!fixed)
			return NULL;
		p = fixed;
	}
	/* \u0000 parses, cut short: looked for first (the text alone is
	 * rare, and cheap to find). */
	v = memmem(p, n, "\\u0000", 6) && bad_escapes((char *)p, n, 0) ? NULL
		: cJSON_ParseWithLengthOpts(p, n, &end, 0);
	if (!v && bad_escapes((char *)p, n, 0)) {
		/* Repaired as invalid UTF-8 bytes are: U+FFFD. */
		if (!fixed) {
			fixed = malloc(n ? n : 1);
			if (!fixed)
				return NULL;
			memcpy(fixed, s, n);
			p = fixed;
		}
		bad_escapes(fixed, n, 1);
		v = cJSON_ParseWithLengthOpts(p, n, &end, 0);
	}
	if (!v) {
		if (erroff)
			*erroff = end ? (size_t)(end - p) : 0;
		goto out;
	}
	for (i = (size_t)(end - p); i < n; i++) {
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' &&
		    p[i] != '\n') {
			cJSON_Delete(v);
			v = NULL;
			if (erroff)
				*erroff = i;
			break;
		}
	}
out:
	free(fixed);
	return v;
}

/* The number tokens of text, in order: where each starts, and its
 * length.  Strings are skipped whole. */
struct num_spans {
	size_t *off, *len;
	size_t n, cap;
};

static int
num_spans(struct num_spans *ns, const char *t, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		if (t[i] == '"') {
			for (i++; i < n && t[i] != '"'; i++)
				if (t[i] == '\\')
					i++;
			i++;
			continue;
		}
		if (t[i] != '-' && (t[i] < '0' || t[i] > '9')) {
			i++;
			continue;
		}
		for (k = i; k < n && strchr("+-.eE0123456789", t[k]) && t[k];
		     k++)
			;
		if (ns->n == ns->cap) {
			size_t cap = ns->cap ? 2 * ns->cap : 16;
			size_t *o = realloc(ns->off, cap * sizeof *o), *l;

			if (!o)
				return -1;
			ns->off = o;
			l = realloc(ns->len, cap * sizeof *l);
			if (!l)
				return -1;
			ns->len = l;
			ns->cap = cap;
		}
		ns->off[ns->n] = i;
		ns->len[ns->n++] = k - i;
		i = k;
	}
	return 0;
}

/* Walks v in document order, *k counting its numbers; those inside sub
 * (inside once v is sub) become raw items of their text. */
static int
exact_walk(cJSON *v, const cJSON *sub, int inside, const char *t,
	   const struct num_spans *ns, size_t *k)
{
	cJSON *c;

	inside |= v == sub;
	if (cJSON_IsNumber(v)) {
		size_t at = (*k)++;
		char *text, *end;

		if (!inside || at >= ns->n)
			return 0;
		text = strndup(t + ns->off[at], ns->len[at]);
		if (!text)
			return -1;
		/* the token must be this number, else it is left as it is */
		if (strtod(text, &end) != v->valuedouble || *end) {
			free(text);
			return 0;
		}
		v->type = cJSON_Raw;
		v->valuestring = text;
		return 0;
	}
	for (c = v->child; c; c = c->next)
		if (exact_walk(c, sub, inside, t, ns, k) < 0)
			return -1;
	return 0;
}

int
json_exact_numbers(cJSON *root, const cJSON *sub, const char *text, size_t n)
{
	struct num_spans ns = { 0 };
	size_t k = 0;
	int rc = -1;

	if (num_spans(&ns, text, n) == 0 &&
	    exact_walk(root, sub, 0, text, &ns, &k) == 0)
		rc = 0;
	free(ns.off);
	free(ns.len);
	return rc;
}

int
jsonl_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

int
jsonl_read_object(struct jsonl_reader *r, cJSON **out, struct ah_error *err)
{
	size_t off;
	cJSON *v;
	int rc;

	*out = NULL;
	do {
		rc = jsonl_read_line(r, err);
		if (rc <= 0)
			return rc;
	} while (jsonl_blank(r->line.data, r->line.len));
	if (memchr(r->line.data, '\0', r->line.len))
		return ah_fail(err, AH_EFORMAT,
			       "%s: line %lu: not valid JSON (a NUL byte)",
			       r->name, r->lineno);
	v = json_parse(r->line.data, r->line.len, &off);
	if (!v)
		return ah_fail(err, AH_EFORMAT,
			       "%s: line %lu: not valid JSON (at byte %zu)",
			       r->name, r->lineno, off + 1);
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return ah_fail(err, AH_EFORMAT,
			       "%s: line %lu: not a JSON object", r->name,
			       r->lineno);
	}
	*out = v;
	return 1;
}

int
jsonl_write(FILE *fp, const cJSON *obj, struct ah_error *err)
{
	char *s = cJSON_PrintUnformatted(obj);
	int rc = 0, e;

	if (!s)
		return ah_fail(err, AH_ENOMEM, "cannot encode JSON: %s",
			       strerror(ENOMEM));
	errno = 0;
	if (fputs(s, fp) == EOF || putc('\n', fp) == EOF || fflush(fp) == EOF) {
		e = errno ? errno : EIO;
		rc = ah_fail_errno(err, e, "cannot write");
		errno = e;
	}
	free(s);
	return rc;
}

struct keyref {
	const char *key;
	size_t pos;
};

static int
keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The position of the first member of obj whose key a later member
 * repeats; n (the number of members) when no key repeats.  Sorting makes
 * it O(n log n): a model's call with 100k keys must not take minutes.
 * Without memory for the sort, it compares every pair. */
static size_t
first_repeated(const cJSON *obj, size_t n)
{
	struct keyref *refs = n > 16 ? malloc(n * sizeof *refs) : NULL;
	const cJSON *a, *b;
	size_t i, j, first = n;

	if (!refs) {
		for (a = obj->child, i = 0; a; a = a->next, i++)
			for (b = a->next; a->string && b; b = b->next)
				if (b->string && !strcmp(a->string, b->string))
					return i;
		return n;
	}
	for (a = obj->child, i = j = 0; a; a = a->next, i++)
		if (a->string)
			refs[j++] = (struct keyref){ a->string, i };
	qsort(refs, j, sizeof *refs, keyref_cmp);
	/* a run of equal keys starts at its first position */
	for (i = 0; i + 1 < j; i++)
		if (!strcmp(refs[i].key, refs[i + 1].key)) {
			if (refs[i].pos < first)
				first = refs[i].pos;
			while (i + 1 < j && !strcmp(refs[i].key, refs[i + 1].key))
				i++;
		}
	free(refs);
	return first;
}

int
json_has_duplicate_keys(const cJSON *obj, const char **key)
{
	const cJSON *a;
	size_t i, n = 0, dup;

	if (!obj)
		return 0;
	for (a = obj->child; a; a = a->next)
		n++;
	dup = cJSON_IsObject(obj) ? first_repeated(obj, n) : n;
	/* the first member repeated, or one inside the members before it */
	for (a = obj->child, i = 0; a; a = a->next, i++) {
		if (i == dup) {
			if (key)
				*key = a->string;
			return 1;
		}
		if ((cJSON_IsObject(a) || cJSON_IsArray(a)) &&
		    json_has_duplicate_keys(a, key))
			return 1;
	}
	return 0;
}

int
jsonl_repair_tail(int fd, size_t *cut, struct ah_error *err)
{
	char block[65536];
	struct stat st;
	off_t end, pos;
	ssize_t n, i;

	*cut = 0;
	if (fstat(fd, &st) < 0)
		return ah_fail_errno(err, errno, "cannot stat");
	end = st.st_size;
	if (!S_ISREG(st.st_mode) || end == 0)
		return 0;
	/* Backwards, a block at a time, to the last newline. */
	for (pos = end; pos > 0; pos -= n) {
		n = pos < (off_t)sizeof block ? (ssize_t)pos
					      : (ssize_t)sizeof block;
		if (pread(fd, block, (size_t)n, pos - n) != n)
			return ah_fail_errno(err, errno ? errno : EIO,
					     "cannot read");
		for (i = n; i > 0; i--)
			if (block[i - 1] == '\n')
				break;
		if (i > 0) {
			pos = pos - n + i;
			break;
		}
	}
	if (pos < 0)
		pos = 0;
	if (pos == end)
		return 0;
	if (ftruncate(fd, pos) < 0)
		return ah_fail_errno(err, errno, "cannot cut the torn last "
				     "line");
	*cut = (size_t)(end - pos);
	return 0;
}
