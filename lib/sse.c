/* sse.c: server-sent events, read from the bytes of a stream as they
 * come (the WHATWG event-stream format).  It knows no API: the caller
 * takes each event whole and gives it to the file of its API. */
#include <stdio.h>
#include <string.h>

#include "priv.h"

void
sse_init(struct sse *s, size_t max)
{
	struct buf b = BUF_INIT(max);

	memset(s, 0, sizeof *s);
	s->line = b;
	s->data = b;
}

void
sse_free(struct sse *s)
{
	buf_free(&s->line);
	buf_free(&s->data);
}

/* The event taken: a new one starts. */
static void
next_event(struct sse *s)
{
	if (s->ready) {
		buf_reset(&s->data);
		s->event[0] = '\0';
		s->ready = 0;
	}
}

/* One line (without its LF): 1 when it ends an event that has data. */
static int
line(struct sse *s, const char *p, size_t n, struct ah_error *err)
{
	if (n && p[n - 1] == '\r')
		n--;
	if (!n) {
		if (s->data.len)
			return s->ready = 1;
		s->event[0] = '\0'; /* an event of no data is none */
		return 0;
	}
	if (p[0] == ':')
		return 0; /* a comment, or a keep-alive */
	if (n >= 5 && !memcmp(p, "data:", 5)) {
		p += 5;
		n -= 5;
		if (n && *p == ' ') {
			p++;
			n--;
		}
		if ((s->data.len && buf_putc(&s->data, '\n') < 0) ||
		    buf_append(&s->data, p, n) < 0)
			return ah_fail(err, AH_ETOOBIG, "an event of the stream "
				       "is larger than %zu bytes", s->data.max);
		return 0;
	}
	if (n >= 6 && !memcmp(p, "event:", 6)) {
		p += 6;
		n -= 6;
		while (n && *p == ' ') {
			p++;
			n--;
		}
		snprintf(s->event, sizeof s->event, "%.*s", (int)n, p);
	}
	return 0; /* id:, retry: and unknown fields are ignored */
}

int
sse_feed(struct sse *s, const char *p, size_t n, size_t *used,
	 struct ah_error *err)
{
	const char *start = p, *nl;
	int rc = 0;

	next_event(s);
	while (n && !rc) {
		nl = memchr(p, '\n', n);
		if (!nl) {
			if (buf_append(&s->line, p, n) < 0)
				return ah_fail(err, AH_ETOOBIG, "a line of the "
					       "stream is larger than %zu bytes",
					       s->line.max);
			p += n;
			break;
		}
		if (s->line.len) {
			if (buf_append(&s->line, p, (size_t)(nl - p)) < 0)
				return ah_fail(err, AH_ETOOBIG, "a line of the "
					       "stream is larger than %zu bytes",
					       s->line.max);
			rc = line(s, s->line.data, s->line.len, err);
			buf_reset(&s->line);
		} else
			rc = line(s, p, (size_t)(nl - p), err);
		if (rc < 0)
			return -1;
		n -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	*used = (size_t)(p - start);
	return rc;
}

int
sse_end(struct sse *s, struct ah_error *err)
{
	next_event(s);
	/* a last line, and a last event, not followed by a blank line */
	if (s->line.len) {
		int rc = line(s, s->line.data, s->line.len, err);

		buf_reset(&s->line);
		if (rc)
			return rc;
	}
	return s->data.len ? (s->ready = 1) : 0;
}
