/* http.c: HTTP/1.1 over a plain TCP connection, for a model at an http://
 * URL (a server on this machine or the local network).  It does what
 * agent-step asks of HTTP and no more, so that agent-step starts without
 * libcurl, whose thirty-odd libraries cost more time and memory than the
 * rest of a step; model.c loads libcurl for anything else (https://, a
 * proxy, a user name in the URL).
 *
 * One request at a time, on a connection kept alive between requests.  A
 * connection the server closed meanwhile is found out before the request
 * is sent, or by an answer that never began, and the request goes again
 * on a new connection, as libcurl does.  Whatever the server sends is
 * bounded here: the status line and headers to 100 KB in all, a chunk's
 * size line to 1 KB; what the caller keeps of the body is its own bound. */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "priv.h"

#define HEAD_MAX (100 * 1024) /* the answer's status line and headers */
#define SIZE_LINE_MAX 1024    /* a chunk's size line */
#define SEND_PIECE (64 * 1024)

struct http {
	char host[300];  /* host[:port] as the URL names it, for Host: */
	char name[256];  /* the host to resolve: an IPv6 address unbracketed */
	char port[8];
	char *target;    /* the path and query */
	double connect_timeout;
	int fd;          /* the connection kept alive, or -1 */
	struct hcurl *curl; /* http_open's over libcurl: all the rest unused */
};

/* One exchange: the answer as it is read. */
struct xfer {
	struct http *h;
	const struct http_io *io;
	char *errbuf;
	size_t errsize;
	long long sent;
	char in[16384];
	size_t pos, len; /* what of in is still to be parsed */
	int eof;
	int reset;       /* the end was a reset, not the server's close */
};

static int
fail(struct xfer *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->errbuf, x->errsize, fmt, ap);
	va_end(ap);
	return HTTP_FAILED;
}

/* The server's bytes, as a message may show them: printable ASCII only
 * (no escape reaches the terminal), at most n - 1 of them; the secrets
 * redacted first, whole, as the message would cut one short and its
 * redaction then miss it. */
static void
shown(struct xfer *x, char *dst, size_t n, const char *src, size_t len)
{
	char *copy = strndup(src, len);
	size_t i;

	if (copy) {
		redact(copy, x->io->secrets);
		src = copy;
		len = strlen(copy);
	} else {
		len = 0; /* nothing rather than a key */
	}
	for (i = 0; i < len && i + 1 < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
	free(copy);
}

int
http_url_plain(const char *url)
{
	const char *a, *end;

	if (strncasecmp(url, "http://", 7))
		return 0;
	a = url + 7;
	end = a + strcspn(a, "/?#");
	/* credentials in the URL: libcurl's */
	return end > a && !memchr(a, '@', (size_t)(end - a));
}

/* The path and query to send: to the fragment, which is not sent, bytes
 * past ASCII percent-encoded (as libcurl sends them). */
static char *
target(const char *path)
{
	size_t n = strcspn(path, "#"), i, k = 0;
	char *t = malloc(3 * n + 1);

	if (!t)
		return NULL;
	for (i = 0; i < n; i++)
		if ((unsigned char)path[i] >= 0x80) {
			t[k++] = '%';
			t[k++] = "0123456789ABCDEF"[(unsigned char)path[i] >> 4];
			t[k++] = "0123456789ABCDEF"[path[i] & 15];
		} else {
			t[k++] = path[i];
		}
	t[k] = '\0';
	return t;
}

struct http *
http_new(const char *url, double connect_timeout, struct ah_error *err)
{
	struct http *h;
	const char *a = url + 7, *end, *colon, *name = a;
	size_t namelen;
	char *stop;
	long port = 80;

	if (!http_url_plain(url)) {
		ah_fail(err, AH_EFORMAT, "'%s' is not a plain http:// URL", url);
		return NULL;
	}
	/* a space or a line end would end the request line, or start a
	 * header of its own: refused, as libcurl refuses them */
	for (end = url; *end; end++)
		if ((unsigned char)*end <= ' ' || *end == 0x7f) {
			ah_fail(err, AH_EFORMAT, "the URL holds a space or a "
				"control character");
			return NULL;
		}
	end = a + strcspn(a, "/?#");
	if (*a == '[') {
		colon = memchr(a, ']', (size_t)(end - a));
		if (!colon)
			goto bad;
		name = a + 1;
		namelen = (size_t)(colon - name);
		colon++;
		if (colon < end && *colon != ':')
			goto bad;
	} else {
		colon = memchr(a, ':', (size_t)(end - a));
		namelen = (size_t)((colon ? colon : end) - a);
	}
	/* an empty port is the default, as RFC 3986 has it */
	if (colon && colon < end && colon + 1 < end) {
		if (!isdigit((unsigned char)colon[1]))
			goto bad;
		errno = 0;
		port = strtol(colon + 1, &stop, 10);
		if (stop != end || errno || port < 1 || port > 65535)
			goto bad;
	}
	if (!namelen || namelen >= sizeof h->name ||
	    (size_t)(end - a) >= sizeof h->host)
		goto bad;
	h = calloc(1, sizeof *h);
	if (!h || !(h->target = target(*end == '/' ? end : "/"))) {
		free(h);
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	memcpy(h->host, a, (size_t)(end - a));
	memcpy(h->name, name, namelen);
	snprintf(h->port, sizeof h->port, "%ld", port);
	h->connect_timeout = connect_timeout;
	h->fd = -1;
	return h;
bad:
	ah_fail(err, AH_EFORMAT, "cannot read the host and port of '%s'",
		url);
	return NULL;
}

static void
drop(struct http *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

void
http_free(struct http *h)
{
	if (!h)
		return;
	hcurl_free(h->curl);
	drop(h);
	free(h->target);
	free(h);
}

struct http *
http_open(const char *url, double connect_timeout, const char *cafile,
	  struct ah_error *err)
{
	struct http *h;

	if (!http_needs_curl(url))
		return http_new(url, connect_timeout, err);
	h = calloc(1, sizeof *h);
	if (!h) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	h->fd = -1;
	h->curl = hcurl_new(url, connect_timeout, cafile, err);
	if (!h->curl) {
		free(h);
		return NULL;
	}
	return h;
}

/* Waits up to ms for events on fd, telling the caller at least once a
 * second: 1 ready, 0 not yet (the caller tries again), HTTP_STOPPED. */
static int
wait_fd(struct xfer *x, int fd, short events, int ms)
{
	struct pollfd p = { fd, events, 0 };
	int n = poll(&p, 1, ms > 1000 ? 1000 : ms);

	if (x->io->tick(x->io->ctx, x->sent))
		return HTTP_STOPPED;
	return n > 0;
}

/* A connection to one address: 0, or why not (an errno), or
 * HTTP_STOPPED. */
static int
connect_one(struct xfer *x, const struct addrinfo *ai, double until)
{
	socklen_t len = sizeof(int);
	int fd, r, e = 0, one = 1;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			e = errno;
			close(fd);
			return e;
		}
		for (;;) {
			double left = until - mono_now();

			if (left <= 0) {
				close(fd);
				return ETIMEDOUT;
			}
			r = wait_fd(x, fd, POLLOUT, (int)(left * 1000) + 1);
			if (r == HTTP_STOPPED) {
				close(fd);
				return r;
			}
			if (r)
				break;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e) {
			close(fd);
			return e;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	x->h->fd = fd;
	return 0;
}

/* A new connection, to the first of the host's addresses that takes it. */
static int
connect_new(struct xfer *x)
{
	struct http *h = x->h;
	struct addrinfo hints = { 0 }, *res, *ai;
	double until = mono_now() + h->connect_timeout;
	int r, n, last = ECONNREFUSED;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(h->name, h->port, &hints, &res);
	if (r)
		return fail(x, "cannot resolve '%s': %s", h->name,
			    r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
	for (n = 0, ai = res; ai; ai = ai->ai_next)
		n++;
	/* each address its share of the time left: one that does not
	 * answer leaves time for the next */
	for (ai = res; ai; ai = ai->ai_next, n--) {
		double now = mono_now();

		r = connect_one(x, ai, now + (until - now) / n);
		if (r <= 0)
			break;
		last = r;
	}
	freeaddrinfo(res);
	if (r <= 0)
		return r;
	if (last == ETIMEDOUT)
		return fail(x, "cannot connect to %s port %s within %g s",
			    h->name, h->port, h->connect_timeout);
	return fail(x, "cannot connect to %s port %s: %s", h->name, h->port,
		    strerror(last));
}

/* Sends n bytes; ECONNRESET or EPIPE as -errno (the caller may connect
 * again), else HTTP_FAILED or HTTP_STOPPED. */
static int
send_all(struct xfer *x, const char *p, size_t n)
{
	ssize_t k;
	int r;

	while (n) {
		k = send(x->h->fd, p, n, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
			x->sent += k;
			continue;
		}
		if (errno == EAGAIN || errno == EINTR) {
			r = wait_fd(x, x->h->fd, POLLOUT, 1000);
			if (r == HTTP_STOPPED)
				return r;
			continue;
		}
		if (errno == ECONNRESET || errno == EPIPE)
			return -errno;
		return fail(x, "cannot send the request: %s", strerror(errno));
	}
	return 0;
}

/* The request: its head, and the body whole (flat) or read out. */
static int
send_request(struct xfer *x, const char *const *headers, const char *flat,
	     size_t len)
{
	struct buf head = BUF_INIT(0);
	char piece[SEND_PIECE];
	ssize_t k;
	int r = 0, bad;
	size_t i;

	bad = buf_printf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\n",
			 x->h->target, x->h->host) < 0;
	for (i = 0; headers[i]; i++)
		bad |= buf_printf(&head, "%s\r\n", headers[i]) < 0;
	bad |= buf_printf(&head, "Content-Length: %zu\r\n\r\n", len) < 0;
	/* a small body in the same write, so in the same packet */
	if (flat && len <= SEND_PIECE)
		bad |= buf_append(&head, flat, len) < 0;
	if (bad) {
		r = fail(x, "cannot make the request: %s", strerror(ENOMEM));
		goto out;
	}
	x->sent = 0;
	r = send_all(x, head.data, head.len);
	if (r || (flat && len <= SEND_PIECE))
		goto out;
	if (flat) {
		r = send_all(x, flat, len);
		goto out;
	}
	while ((k = x->io->read(x->io->ctx, piece, sizeof piece)) > 0)
		if ((r = send_all(x, piece, (size_t)k)) != 0)
			goto out;
	if (k < 0)
		r = HTTP_STOPPED;
out:
	/* the head holds the API key */
	if (head.data)
		explicit_bzero(head.data, head.len);
	buf_free(&head);
	return r;
}

/* More of the answer into x->in, once all of it was parsed (its callers
 * take every byte before they ask for more): 1, or 0 at its end (x->eof),
 * or HTTP_FAILED / HTTP_STOPPED. */
static int
fill(struct xfer *x)
{
	ssize_t n;
	int r;

	x->pos = x->len = 0;
	for (;;) {
		n = recv(x->h->fd, x->in + x->len, sizeof x->in - x->len, 0);
		if (n > 0) {
			x->len += (size_t)n;
			/* heeded: a server that never pauses is never waited
			 * for, so wait_fd would never tick */
			if (x->io->tick(x->io->ctx, x->sent))
				return HTTP_STOPPED;
			return 1;
		}
		if (n == 0) {
			x->eof = 1;
			return 0;
		}
		if (errno == ECONNRESET) {
			x->eof = 1;
			x->reset = 1;
			return 0;
		}
		if (errno != EAGAIN && errno != EINTR)
			return fail(x, "cannot read the answer: %s",
				    strerror(errno));
		r = wait_fd(x, x->h->fd, POLLIN, 1000);
		if (r == HTTP_STOPPED)
			return r;
	}
}

/* One line of the head into line (its CR LF stripped): its length, or
 * HTTP_FAILED / HTTP_STOPPED; *used counts the head's bytes. */
static int
read_line(struct xfer *x, struct buf *line, size_t *used, size_t max)
{
	char *nl;
	size_t n;
	int r;

	buf_reset(line);
	for (;;) {
		nl = memchr(x->in + x->pos, '\n', x->len - x->pos);
		n = nl ? (size_t)(nl - (x->in + x->pos)) + 1 : x->len - x->pos;
		if (*used + n > max)
			return fail(x, "the answer's head is longer than %zu "
				    "bytes", max);
		*used += n;
		if (buf_append(line, x->in + x->pos, n) < 0)
			return fail(x, "%s", strerror(ENOMEM));
		x->pos += n;
		if (nl)
			break;
		r = fill(x);
		if (r < 0)
			return r;
		if (!r)
			return fail(x, "the connection closed in the middle of "
				    "the answer's head");
	}
	while (line->len && (line->data[line->len - 1] == '\n' ||
			     line->data[line->len - 1] == '\r'))
		line->data[--line->len] = '\0';
	/* the lines are read as C strings: a NUL would hide the rest */
	if (memchr(line->data, '\0', line->len))
		return fail(x, "the answer's head holds a NUL byte");
	return (int)line->len;
}

/* How the body of the answer ends. */
struct framing {
	long status;
	int chunked;
	long long length; /* -1: none given */
	int close;        /* the connection cannot be kept */
};

/* A header line the client itself needs, read into f. */
static int
frame_header(struct xfer *x, struct framing *f, const char *line)
{
	const char *colon = strchr(line, ':'), *v;
	char *end, what[64];
	size_t k;
	long long n;

	if (!colon)
		return 0;
	k = (size_t)(colon - line);
	v = colon + 1 + strspn(colon + 1, " \t");
	if (k == 14 && !strncasecmp(line, "content-length", k)) {
		errno = 0;
		n = isdigit((unsigned char)*v) ? strtoll(v, &end, 10) : -1;
		if (n < 0 || errno || end[strspn(end, " \t")] ||
		    (f->length >= 0 && f->length != n))
			return fail(x, "the answer's Content-Length is not "
				    "one number");
		f->length = n;
	} else if (k == 17 && !strncasecmp(line, "transfer-encoding", k)) {
		/* chunked must come last; anything else was not asked for */
		if (strcasecmp(v, "chunked")) {
			shown(x, what, sizeof what, v, strlen(v));
			return fail(x, "the answer's Transfer-Encoding is '%s', "
				    "which this client does not decode", what);
		}
		f->chunked = 1;
	} else if (k == 16 && !strncasecmp(line, "content-encoding", k)) {
		if (*v && strcasecmp(v, "identity")) {
			shown(x, what, sizeof what, v, strlen(v));
			return fail(x, "the answer is encoded ('%s'), which was "
				    "not asked for", what);
		}
	} else if (k == 10 && !strncasecmp(line, "connection", k)) {
		if (strcasestr(v, "close"))
			f->close = 1;
		else if (strcasestr(v, "keep-alive"))
			f->close = 0;
	}
	return 0;
}

/* The status line and the headers, to the blank line; 1xx answers are
 * passed over.  Each line goes to the caller's header, as received. */
static int
read_head(struct xfer *x, struct framing *f, long *status)
{
	struct buf line = BUF_INIT(0);
	char what[48];
	size_t used = 0;
	int r, minor;

	for (;;) {
		memset(f, 0, sizeof *f);
		f->length = -1;
		r = read_line(x, &line, &used, HEAD_MAX);
		if (r < 0)
			goto out;
		if (line.len < 12 || memcmp(line.data, "HTTP/1.", 7) ||
		    !isdigit((unsigned char)line.data[7]) ||
		    line.data[8] != ' ' || !isdigit((unsigned char)line.data[9]) ||
		    !isdigit((unsigned char)line.data[10]) ||
		    !isdigit((unsigned char)line.data[11]) ||
		    (line.len > 12 && line.data[12] != ' ')) {
			shown(x, what, sizeof what, line.data, line.len);
			r = fail(x, "the answer does not begin as HTTP/1.x "
				 "does: '%s'", what);
			goto out;
		}
		minor = line.data[7] - '0';
		f->status = strtol(line.data + 9, NULL, 10);
		if (f->status < 100) {
			r = fail(x, "the answer's status (%03ld) is not one "
				 "HTTP has", f->status);
			goto out;
		}
		f->close = minor == 0;
		x->io->header(x->io->ctx, line.data, line.len);
		for (;;) {
			r = read_line(x, &line, &used, HEAD_MAX);
			if (r < 0)
				goto out;
			if (!line.len)
				break;
			x->io->header(x->io->ctx, line.data, line.len);
			if ((r = frame_header(x, f, line.data)) < 0)
				goto out;
		}
		if (f->status >= 200)
			break;
		if (f->status == 101) {
			r = fail(x, "the server switched protocols (101), "
				 "which was not asked for");
			goto out;
		}
	}
	*status = f->status;
	r = 0;
out:
	buf_free(&line);
	return r;
}

/* n bytes of the body, or all to the end (n < 0), to the caller. */
static int
read_body(struct xfer *x, long long n)
{
	size_t k;
	int r;

	while (n) {
		if (x->pos == x->len) {
			r = fill(x);
			if (r < 0)
				return r;
			/* an answer to the end of the connection ends at
			 * the server's close only */
			if (!r && x->reset)
				return fail(x, "the connection was reset before "
					    "the end of the answer");
			if (!r)
				return n < 0 ? 0 : fail(x, "the connection "
							"closed %lld bytes "
							"before the end of "
							"the answer", n);
		}
		k = x->len - x->pos;
		if (n > 0 && (long long)k > n)
			k = (size_t)n;
		if (x->io->body(x->io->ctx, x->in + x->pos, k))
			return HTTP_STOPPED;
		x->pos += k;
		if (n > 0)
			n -= (long long)k;
	}
	return 0;
}

/* A chunked body: each chunk's size line, its bytes, its CR LF; the
 * trailers after the last are read and dropped. */
static int
read_chunks(struct xfer *x)
{
	struct buf line = BUF_INIT(0);
	char what[48];
	const char *p, *start;
	size_t used;
	long long n;
	int r, digits;

	for (;;) {
		used = 0;
		r = read_line(x, &line, &used, SIZE_LINE_MAX);
		if (r < 0)
			goto out;
		n = 0;
		digits = 0;
		start = line.len ? line.data : "";
		for (p = start; isxdigit((unsigned char)*p); p++) {
			/* leading zeros are no digits of the size */
			if ((n || *p != '0') && ++digits > 12)
				break;
			n = n * 16 + (isdigit((unsigned char)*p) ? *p - '0' :
				      tolower((unsigned char)*p) - 'a' + 10);
		}
		if (p == start || digits > 12 ||
		    (*p && *p != ';' && *p != ' ' && *p != '\t')) {
			shown(x, what, sizeof what, line.len ? line.data : "",
			      line.len);
			r = fail(x, "a chunk of the answer has no size: '%s'",
				 what);
			goto out;
		}
		if (!n)
			break;
		if ((r = read_body(x, n)) < 0)
			goto out;
		used = 0;
		r = read_line(x, &line, &used, SIZE_LINE_MAX);
		if (r < 0)
			goto out;
		if (line.len) {
			r = fail(x, "a chunk of the answer is longer than its "
				 "size");
			goto out;
		}
	}
	used = 0;
	do
		r = read_line(x, &line, &used, HEAD_MAX);
	while (r > 0);
out:
	buf_free(&line);
	return r < 0 ? r : 0;
}

/* The answer, its status line on: 0 when it came whole (*keep: the
 * connection may serve the next request), or HTTP_FAILED / HTTP_STOPPED. */
static int
read_answer(struct xfer *x, long *status, int *keep)
{
	struct framing f;
	int r, bodiless;

	*keep = 0;
	r = read_head(x, &f, status);
	bodiless = f.status == 204 || f.status == 304;
	if (r == 0 && !bodiless) {
		if (f.chunked)
			r = read_chunks(x);
		else
			r = read_body(x, f.length);
	}
	if (r < 0)
		return r;
	/* kept only when the answer ended where its framing said, with
	 * nothing after it */
	*keep = !f.close && !x->eof && x->pos == x->len &&
		/* both: which framing the server meant is not known
		 * (RFC 9112, 6.3) */
		!(f.chunked && f.length >= 0) &&
		(f.chunked || f.length >= 0 || bodiless);
	return 0;
}

/* Is the kept connection still open, nothing unasked for waiting on it? */
static int
still_open(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 0;
}

int
http_post(struct http *h, const char *const *headers, const char *flat,
	  size_t len, const struct http_io *io, long *status, char *errbuf,
	  size_t errsize)
{
	struct xfer x;
	int r, tries, reused, keep, cut = 0;

	if (h->curl)
		return hcurl_post(h->curl, headers, flat, len, io, status,
				  errbuf, errsize);
	memset(&x, 0, sizeof x);
	x.h = h;
	x.io = io;
	x.errbuf = errbuf;
	x.errsize = errsize;
	errbuf[0] = '\0';
	*status = 0;
	for (tries = 0;; tries++) {
		if (h->fd >= 0 && !still_open(h->fd))
			drop(h);
		reused = h->fd >= 0;
		if (!reused && (r = connect_new(&x)) < 0)
			return r;
		if (tries && !flat && io->rewind(io->ctx))
			return fail(&x, "cannot send the request again on a "
				    "new connection");
		x.pos = x.len = 0;
		x.eof = x.reset = 0;
		r = send_request(&x, headers, flat, len);
		/* a server may answer (413, say) and close before it reads
		 * all of the request: its answer is read all the same */
		cut = r == -ECONNRESET || r == -EPIPE;
		if (r == 0 || cut) {
			/* the answer's first bytes */
			r = fill(&x);
			if (r > 0)
				break;
			if (r == 0)
				r = -ECONNRESET;
		}
		drop(h);
		/* A kept connection the server had closed: once more on a
		 * new one, as nothing of the answer came. */
		if (r == -ECONNRESET || r == -EPIPE) {
			if (reused && !tries)
				continue;
			return fail(&x, "the server closed the connection "
				    "without an answer");
		}
		return r;
	}
	r = read_answer(&x, status, &keep);
	if (r < 0 || cut || !keep)
		drop(h);
	return r;
}

int
http_read(int fd, const struct http_io *io, long *status, int *keep,
	  char *errbuf, size_t errsize)
{
	struct http h;
	struct xfer x;

	memset(&h, 0, sizeof h);
	h.fd = fd;
	memset(&x, 0, sizeof x);
	x.h = &h;
	x.io = io;
	x.errbuf = errbuf;
	x.errsize = errsize;
	errbuf[0] = '\0';
	*status = 0;
	return read_answer(&x, status, keep);
}
