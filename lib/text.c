/* text.c: bounded text for the model: keep the head and the tail. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

int
capture_init(struct capture *c, size_t max)
{
	memset(c, 0, sizeof *c);
	if (max < 64)
		max = 64;
	c->hcap = max / 2;
	c->tcap = max - c->hcap;
	c->head = malloc(c->hcap);
	c->tail = malloc(c->tcap);
	if (!c->head || !c->tail) {
		capture_free(c);
		return -1;
	}
	return 0;
}

void
capture_free(struct capture *c)
{
	free(c->head);
	free(c->tail);
	c->head = c->tail = NULL;
}

void
capture_add(struct capture *c, const char *p, size_t n)
{
	size_t k;

	c->total += n;
	if (c->hlen < c->hcap) {
		k = c->hcap - c->hlen < n ? c->hcap - c->hlen : n;
		memcpy(c->head + c->hlen, p, k);
		c->hlen += k;
		p += k;
		n -= k;
	}
	/* The tail is a ring: tpos is where the next byte goes. */
	if (n >= c->tcap) {
		memcpy(c->tail, p + n - c->tcap, c->tcap);
		c->tpos = 0;
		c->tlen = c->tcap;
		return;
	}
	while (n) {
		k = c->tcap - c->tpos < n ? c->tcap - c->tpos : n;
		memcpy(c->tail + c->tpos, p, k);
		c->tpos = (c->tpos + k) % c->tcap;
		c->tlen = c->tlen + k > c->tcap ? c->tcap : c->tlen + k;
		p += k;
		n -= k;
	}
}

char *
capture_text(const struct capture *c, size_t *outlen)
{
	struct buf b = BUF_INIT(0);
	char *tail = NULL, *h = NULL, *t = NULL, *res = NULL;
	size_t start, hl, tl, skip = 0, cut;

	tail = malloc(c->tlen + 1);
	if (!tail)
		goto out;
	/* the ring in order: oldest byte first */
	start = c->tlen < c->tcap ? 0 : c->tpos;
	memcpy(tail, c->tail + start, c->tlen - start);
	memcpy(tail + (c->tlen - start), c->tail, start);
	if (c->total == c->hlen + c->tlen) {
		/* nothing was cut: one piece */
		if (buf_append(&b, c->head, c->hlen) < 0 ||
		    buf_append(&b, tail, c->tlen) < 0)
			goto out;
		res = utf8_sanitize(b.data ? b.data : "", b.len,
				    UTF8_REPLACE_NUL, outlen);
		goto out;
	}
	/* Cut on character boundaries: the head ends before a split
	 * sequence, the tail starts after one. */
	hl = utf8_floor(c->head, c->hlen, c->hlen);
	while (skip < 3 && skip < c->tlen &&
	       ((unsigned char)tail[skip] & 0xC0) == 0x80)
		skip++;
	tl = c->tlen - skip;
	cut = c->total - hl - tl;
	h = utf8_sanitize(c->head, hl, UTF8_REPLACE_NUL, &hl);
	t = utf8_sanitize(tail + skip, tl, UTF8_REPLACE_NUL, &tl);
	if (!h || !t || buf_append(&b, h, hl) < 0 ||
	    buf_printf(&b, "\n[... %zu bytes cut ...]\n", cut) < 0 ||
	    buf_append(&b, t, tl) < 0)
		goto out;
	res = buf_detach(&b, outlen);
out:
	buf_free(&b);
	free(tail);
	free(h);
	free(t);
	return res;
}

char *
text_bound(const char *s, size_t n, size_t max, size_t *outlen)
{
	struct capture c;
	char *r;

	if (capture_init(&c, max) < 0)
		return NULL;
	capture_add(&c, s, n);
	r = capture_text(&c, outlen);
	capture_free(&c);
	return r;
}
