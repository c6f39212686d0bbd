/* body.c: a request body in parts, read out as it is sent. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

struct body_part {
	char kind;          /* 'h' held, 'b' borrowed, 'p' printed */
	const char *data;   /* borrowed: the bytes */
	size_t off;         /* held: where they are in body.held */
	size_t arg;         /* printed: what the print function prints */
	size_t len;
};

#define NONE ((size_t)-1)

void
model_body_reset(struct model_body *b, body_print_fn print, const void *ctx)
{
	b->nparts = b->len = b->at = b->off = 0;
	b->piece_of = NONE;
	buf_reset(&b->held);
	buf_reset(&b->piece);
	buf_reset(&b->flat);
	b->print = print;
	b->ctx = ctx;
}

void
model_body_init(struct model_body *b, body_print_fn print, const void *ctx)
{
	struct buf empty = BUF_INIT(0);

	memset(b, 0, sizeof *b);
	b->held = b->piece = b->flat = empty;
	model_body_reset(b, print, ctx);
}

void
model_body_free(struct model_body *b)
{
	free(b->parts);
	buf_free(&b->held);
	buf_free(&b->piece);
	buf_free(&b->flat);
	model_body_init(b, NULL, NULL);
}

static struct body_part *
new_part(struct model_body *b, char kind, size_t len)
{
	struct body_part *p;

	if (len > SIZE_MAX - b->len)
		return NULL;
	if (b->nparts == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;

		p = realloc(b->parts, cap * sizeof *p);
		if (!p)
			return NULL;
		b->parts = p;
		b->cap = cap;
	}
	p = &b->parts[b->nparts++];
	memset(p, 0, sizeof *p);
	p->kind = kind;
	p->len = len;
	b->len += len;
	return p;
}

int
model_body_hold(struct model_body *b, const void *data, size_t len)
{
	struct body_part *last = b->nparts ? &b->parts[b->nparts - 1] : NULL;
	size_t off = b->held.len;

	if (!len)
		return 0;
	if (buf_append(&b->held, data, len) < 0)
		return -1;
	/* pieces held one after another are one part */
	if (last && last->kind == 'h' && last->off + last->len == off) {
		last->len += len;
		b->len += len;
		return 0;
	}
	if (!(last = new_part(b, 'h', len))) {
		b->held.len = off;
		b->held.data[off] = '\0';
		return -1;
	}
	last->off = off;
	return 0;
}

int
model_body_borrow(struct model_body *b, const void *data, size_t len)
{
	struct body_part *p;

	if (!len)
		return 0;
	if (!(p = new_part(b, 'b', len)))
		return -1;
	p->data = data;
	return 0;
}

int
model_body_printed(struct model_body *b, size_t arg, size_t *len)
{
	struct body_part *p;

	if (!*len) {
		buf_reset(&b->piece);
		b->piece_of = NONE;
		if (!b->print || b->print(b->ctx, arg, &b->piece) < 0)
			return -1;
		*len = b->piece.len;
		if (!*len)
			return 0;
		b->piece_of = b->nparts;
	}
	if (!(p = new_part(b, 'p', *len))) {
		b->piece_of = NONE;
		return -1;
	}
	p->arg = arg;
	return 0;
}

int
model_body_seek(struct model_body *b, size_t pos)
{
	size_t i;

	if (pos > b->len)
		return -1;
	for (i = 0; i < b->nparts && pos >= b->parts[i].len; i++)
		pos -= b->parts[i].len;
	b->at = i;
	b->off = pos;
	return 0;
}

ssize_t
model_body_read(struct model_body *b, char *dst, size_t n,
		struct ah_error *err)
{
	size_t done = 0, k;
	const struct body_part *p;
	const char *src;

	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	while (done < n && b->at < b->nparts) {
		p = &b->parts[b->at];
		if (p->kind == 'h')
			src = b->held.data + p->off;
		else if (p->kind == 'b')
			src = p->data;
		else {
			if (b->piece_of != b->at) {
				buf_reset(&b->piece);
				b->piece_of = NONE;
				if (b->print(b->ctx, p->arg, &b->piece) < 0)
					return ah_fail(err, AH_ENOMEM, "cannot "
						       "build the request: out "
						       "of memory");
				/* its length went into Content-Length */
				if (b->piece.len != p->len)
					return ah_fail(err, AH_EIO, "cannot "
						       "build the request: a "
						       "part of it changed "
						       "while it was sent");
				b->piece_of = b->at;
			}
			src = b->piece.data;
		}
		k = p->len - b->off < n - done ? p->len - b->off : n - done;
		memcpy(dst + done, src + b->off, k);
		done += k;
		b->off += k;
		if (b->off == p->len) {
			b->at++;
			b->off = 0;
		}
	}
	return (ssize_t)done;
}

const char *
model_body_flat(struct model_body *b, struct ah_error *err)
{
	size_t at = b->at, off = b->off;
	ssize_t n;

	if (b->nparts == 1 && b->parts[0].kind == 'b')
		return b->parts[0].data;
	if (b->flat.cap < b->len + 1) {
		char *p = realloc(b->flat.data, b->len + 1);

		if (!p) {
			ah_fail(err, AH_ENOMEM, "cannot build the request: out "
				"of memory");
			return NULL;
		}
		b->flat.data = p;
		b->flat.cap = b->len + 1;
	}
	model_body_seek(b, 0);
	n = model_body_read(b, b->flat.data, b->len, err);
	b->at = at;
	b->off = off;
	if (n < 0)
		return NULL;
	b->flat.len = (size_t)n;
	b->flat.data[n] = '\0';
	return b->flat.data;
}
