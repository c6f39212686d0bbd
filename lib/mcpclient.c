/* mcpclient.c: tool-exec's side of mcp-bridge --serve: a Unix socket, one
 * JSON line asked, one answered.  See mcp-bridge(1), "The socket". */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "priv.h"

#define MCP_ANSWER_MAX (64u << 20)

static int
connect_to(const char *path, struct ah_error *err)
{
	struct sockaddr_un a;
	int fd;

	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof a.sun_path)
		return ah_fail(err, AH_EIO, "the socket path '%s' is too long",
			       path);
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot make a socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		ah_fail_errno(err, errno, "cannot reach mcp-bridge at '%s'",
			      path);
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends line (with its newline) and reads the one line answered into b;
 * a set *interrupted, or timeout seconds (0: none), end the wait: 1.
 * 0 for an answer, -1 on error. */
static int
exchange(int fd, const char *line, struct buf *b,
	 volatile sig_atomic_t *interrupted, double timeout,
	 struct ah_error *err)
{
	double until = timeout > 0 ? mono_now() + timeout : 0;
	struct pollfd p;
	char chunk[65536];
	ssize_t n;

	if (write_all(fd, line, strlen(line)) < 0 || write_all(fd, "\n", 1) < 0)
		return ah_fail_errno(err, errno, "cannot write to mcp-bridge");
	for (;;) {
		if (b->len && b->data[b->len - 1] == '\n') {
			b->data[--b->len] = '\0';
			return 0;
		}
		if (interrupted && *interrupted)
			return 1;
		if (until && mono_now() > until)
			return 1;
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return ah_fail_errno(err, errno, "poll");
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ah_fail_errno(err, errno, "cannot read from "
					     "mcp-bridge");
		if (n == 0)
			return ah_fail(err, AH_EIO, "mcp-bridge closed the "
				       "connection without an answer");
		if (buf_append(b, chunk, (size_t)n) < 0)
			return ah_fail(err, AH_ETOOBIG, "mcp-bridge's answer is "
				       "too large");
	}
}

char *
mcp_client_schema(const char *path, struct ah_error *err)
{
	struct buf b = BUF_INIT(MCP_ANSWER_MAX);
	int fd = connect_to(path, err), rc;

	if (fd < 0)
		return NULL;
	{
		const char *t = getenv("AGENT_MCP_TOKEN");
		cJSON *req = cJSON_CreateObject();
		char *line = NULL;

		if (!req || !cJSON_AddStringToObject(req, "op", "schema") ||
		    !cJSON_AddStringToObject(req, "token", t ? t : "") ||
		    !(line = cJSON_PrintUnformatted(req))) {
			cJSON_Delete(req);
			close(fd);
			ah_fail(err, AH_ENOMEM, "out of memory");
			return NULL;
		}
		cJSON_Delete(req);
		rc = exchange(fd, line, &b, NULL, 0, err);
		free(line);
	}
	close(fd);
	if (rc != 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

int
mcp_client_call(const char *path, const char *name, const char *args,
		volatile sig_atomic_t *interrupted, double timeout, char **res)
{
	struct ah_error err = { 0 };
	struct buf b = BUF_INIT(MCP_ANSWER_MAX);
	cJSON *req = cJSON_CreateObject(), *ans = NULL;
	const cJSON *content, *status;
	char *line = NULL;
	int fd = -1, rc = -1, x;

	*res = NULL;
	if (!req || !cJSON_AddStringToObject(req, "op", "call") ||
	    !cJSON_AddStringToObject(req, "name", name) ||
	    !cJSON_AddStringToObject(req, "arguments", args) ||
	    !cJSON_AddStringToObject(req, "token", getenv("AGENT_MCP_TOKEN")
				     ? getenv("AGENT_MCP_TOKEN") : "") ||
	    !(line = cJSON_PrintUnformatted(req)))
		goto out;
	fd = connect_to(path, &err);
	x = fd < 0 ? -1 : exchange(fd, line, &b, interrupted, timeout, &err);
	if (x == 1) {
		/* closing the connection cancels the call */
		rc = asprintf(res, "Error: the MCP tool %s was %s; it was "
			      "cancelled.", name, interrupted && *interrupted
			      ? "interrupted" : "given no answer in time") < 0
			     ? -1 : (interrupted && *interrupted
					     ? TOOL_INTERRUPTED : TOOL_ERROR);
		goto out;
	}
	if (x < 0) {
		rc = asprintf(res, "Error: the MCP tool %s could not be called: "
			      "%s", name, err.msg) < 0 ? -1 : TOOL_ERROR;
		goto out;
	}
	ans = json_parse(b.data, b.len, NULL);
	content = cJSON_GetObjectItemCaseSensitive(ans, "content");
	status = cJSON_GetObjectItemCaseSensitive(ans, "status");
	if (!cJSON_IsString(content) || !cJSON_IsString(status)) {
		rc = asprintf(res, "Error: the MCP tool %s: mcp-bridge gave an "
			      "answer that is not one", name) < 0 ? -1
								 : TOOL_ERROR;
		goto out;
	}
	if (!(*res = strdup(content->valuestring)))
		goto out;
	rc = !strcmp(status->valuestring, "ok") ? TOOL_OK
	   : !strcmp(status->valuestring, "interrupted") ? TOOL_INTERRUPTED
	   : TOOL_ERROR;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		free(*res);
		*res = NULL;
	}
	cJSON_Delete(req);
	cJSON_Delete(ans);
	free(line);
	buf_free(&b);
	return rc;
}
