/* fuzz target: the HTTP/1.1 answer reader of lib/http.c, the input the
 * bytes a server sends, then its close, over a socket pair. */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "priv.h"

struct seen {
	size_t head, body;
};

static void
on_header(void *ctx, const char *line, size_t len)
{
	struct seen *s = ctx;

	/* one line, its end stripped, a C string with no NUL inside */
	CHECK(line[len] == '\0');
	CHECK(strlen(line) == len);
	CHECK(!memchr(line, '\n', len));
	s->head += len;
}

static int
on_body(void *ctx, const char *p, size_t len)
{
	struct seen *s = ctx;

	CHECK(p != NULL && len > 0);
	s->body += len;
	return 0;
}

static ssize_t
no_read(void *ctx, char *dst, size_t max)
{
	(void)ctx, (void)dst, (void)max;
	return 0;
}

static int
no_rewind(void *ctx)
{
	(void)ctx;
	return 1;
}

static int
no_stop(void *ctx, long long sent)
{
	(void)ctx, (void)sent;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const secrets[] = { "sk-fuzz-secret", NULL };
	struct seen s = { 0, 0 };
	struct http_io io = { on_header, on_body, no_read, no_rewind, no_stop,
			      &s, secrets };
	char errbuf[512];
	int sv[2], keep, r, big = 1 << 20;
	size_t off = 0, i;
	ssize_t n;
	long status;

	if (size > 256 * 1024)
		return 0;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	while (off < size) {
		n = write(sv[0], data + off, size - off);
		CHECK(n > 0);
		off += (size_t)n;
	}
	shutdown(sv[0], SHUT_WR);
	r = http_read(sv[1], &io, &status, &keep, errbuf, sizeof errbuf);
	close(sv[0]);
	close(sv[1]);
	CHECK(r == 0 || r == HTTP_FAILED);
	/* nothing is made up: what was passed on came in */
	CHECK(s.head + s.body <= size);
	if (r == 0) {
		CHECK(status >= 200 && status <= 999);
	} else {
		/* a reason, printable, the secret never in it */
		CHECK(errbuf[0] != '\0');
		for (i = 0; errbuf[i]; i++)
			CHECK(errbuf[i] >= 0x20 && errbuf[i] < 0x7f);
		CHECK(!strstr(errbuf, "sk-fuzz-secret"));
	}
	return 0;
}
