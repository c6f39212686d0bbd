/* model.c: calling a Chat Completions (or Messages) endpoint, with the
 * retries of the official SDKs.  A plain http:// URL is spoken to by
 * http.c; anything else (https://, a proxy, a user name in the URL) by
 * libcurl, loaded only then: its thirty-odd libraries take longer to
 * load than a step of the harness takes, and more memory than the rest
 * of it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "curlfn.h"
#include "priv.h"

#define RETRY_CAP 60.0 /* seconds: the longest wait we honour */

struct model {
	struct http *http;         /* the plain http:// client, or NULL */
	CURL *curl;                /* else libcurl's handle */
	struct curl_slist *curl_headers;
	char *headers[6];          /* the request's, "Name: value", NULL-ended;
				      one holds the API key */
	char url[2048];
	char errbuf[CURL_ERROR_SIZE];
};

/* What one attempt brings back. */
struct attempt {
	struct model *m;
	struct reply *reply;
	int stream;
	long status;
	struct buf body;        /* a whole answer, or an error's body */
	char request_id[128];
	double retry_after;     /* seconds, -1 when none was sent */
	int event_stream;       /* the answer is text/event-stream */
	char ctype[64];         /* its Content-Type, printable, for a message */
	int should_retry;       /* x-should-retry: 1 true, 0 false, -1 none */
	struct ratelimit_seen seen; /* what the headers said of the budget */
	int seen_body;          /* a byte of the body came */
	struct model_body *req; /* the request, when it is read out */
	struct ah_error err;    /* a failure while reading the answer, or
				 * while the request was read out */
	int failed;
	const char *const *secrets; /* redacted from the server's text */
	/* progress: the monotonic time of the last data event (of a
	 * stream), byte (of a whole answer) or byte sent */
	double last_data, idle, deadline; /* deadline 0: none */
	curl_off_t sent;
	int stalled, late;
	volatile sig_atomic_t *stop;
};

/* libcurl's handle for m, set up. */
static int
curl_open(struct model *m, const struct model_opts *o, struct ah_error *err)
{
	struct curl_slist *h = NULL;
	size_t i;

	/* refused as lib/http.c refuses them, before anything is sent: a
	 * plain http:// URL by its own reader, the others' spaces and
	 * control characters */
	if (http_url_plain(m->url)) {
		struct http *probe = http_new(m->url, o->timeout, err);

		if (!probe)
			return -1;
		http_free(probe);
	}
	for (i = 0; m->url[i]; i++)
		if ((unsigned char)m->url[i] <= ' ' || m->url[i] == 0x7f)
			return ah_fail(err, AH_EFORMAT, "the URL holds a space "
				       "or a control character");
	if (curl_load(err) < 0)
		return -1;
	m->curl = cu.easy_init();
	if (!m->curl)
		return ah_fail(err, AH_ENOMEM, "cannot start libcurl");
	/* Bodies over 1 MB would otherwise wait up to a second for a
	 * "100 Continue" that most servers never send. */
	h = cu.slist_append(NULL, "Expect:");
	for (i = 0; h && m->headers[i]; i++) {
		struct curl_slist *more = cu.slist_append(h, m->headers[i]);

		if (!more)
			cu.slist_free_all(h);
		h = more;
	}
	if (!h)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	m->curl_headers = h;
	cu.setopt(m->curl, CURLOPT_URL, m->url);
	cu.setopt(m->curl, CURLOPT_HTTPHEADER, m->curl_headers);
	cu.setopt(m->curl, CURLOPT_ERRORBUFFER, m->errbuf);
	cu.setopt(m->curl, CURLOPT_NOSIGNAL, 1L);
	cu.setopt(m->curl, CURLOPT_TCP_NODELAY, 1L);
	cu.setopt(m->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	cu.setopt(m->curl, CURLOPT_ACCEPT_ENCODING, "");
	cu.setopt(m->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->timeout * 1000));
	/* An idle answer is judged by on_progress, by data events rather
	 * than bytes: a keep-alive every second is still no answer. */
	return 0;
}

struct model *
model_new(const struct model_opts *o, struct ah_error *err)
{
	struct model *m = calloc(1, sizeof *m);
	const char *base = o->base_url;
	size_t n = strlen(base), k = 0;
	const char *e;
	int bad;

	if (!m) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	while (n && base[n - 1] == '/')
		n--;
	if (n + 20 >= sizeof m->url) {
		ah_fail(err, AH_EFORMAT, "the base URL is too long");
		goto fail;
	}
	snprintf(m->url, sizeof m->url, "%.*s/%s", (int)n, base,
		 answer_path(o->api));
	if (o->api_key && strlen(o->api_key) > 4000) {
		ah_fail(err, AH_EFORMAT, "the API key is too long");
		goto fail;
	}
	/* a line end would start a header of its own */
	for (k = 0; o->api_key && o->api_key[k]; k++)
		if ((unsigned char)o->api_key[k] < ' ' ||
		    o->api_key[k] == 0x7f) {
			ah_fail(err, AH_EFORMAT, "the API key holds a control "
				"character");
			goto fail;
		}
	k = 0;
	bad = !(m->headers[k++] = strdup("Content-Type: application/json"));
	bad |= !(m->headers[k++] = strdup("Accept: */*"));
	bad |= !(m->headers[k++] = strdup("User-Agent: agent-harness/"
					  AH_VERSION));
	if (o->api_key && *o->api_key)
		bad |= asprintf(&m->headers[k++], o->api == API_ANTHROPIC ?
				"x-api-key: %s" : "Authorization: Bearer %s",
				o->api_key) < 0;
	if (o->api == API_ANTHROPIC)
		bad |= !(m->headers[k++] = strdup("anthropic-version: "
						  "2023-06-01"));
	if (bad) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto fail;
	}
	if ((e = getenv("AGENT_HTTP")) && *e && strcmp(e, "curl")) {
		ah_fail(err, AH_EFORMAT, "AGENT_HTTP is '%.20s': it is curl, "
			"or empty", e);
		goto fail;
	}
	if (!http_needs_curl(m->url)) {
		m->http = http_new(m->url, o->timeout, err);
		if (!m->http)
			goto fail;
	} else if (curl_open(m, o, err) < 0) {
		goto fail;
	}
	return m;
fail:
	model_free(m);
	return NULL;
}

void
model_free(struct model *m)
{
	size_t i;

	if (!m)
		return;
	http_free(m->http);
	if (m->curl)
		cu.cleanup(m->curl);
	/* one header holds the API key, and libcurl's copy of it */
	if (m->curl_headers) {
		struct curl_slist *l;

		for (l = m->curl_headers; l; l = l->next)
			explicit_bzero(l->data, strlen(l->data));
		cu.slist_free_all(m->curl_headers);
	}
	for (i = 0; i < sizeof m->headers / sizeof *m->headers; i++)
		if (m->headers[i]) {
			explicit_bzero(m->headers[i], strlen(m->headers[i]));
			free(m->headers[i]);
		}
	free(m);
}

int
model_too_long(long status, const char *code, const char *msg)
{
	static const char *const codes[] = {
		"context_length_exceeded", "exceed_context_size_error",
		"string_above_max_length", "request_too_large",
	};
	/* lowercase; matched anywhere in the lowercased message */
	static const char *const words[] = {
		"maximum context length", "context length exceeded",
		"exceeds the available context size", "context window",
		"prompt is too long", "too many tokens", "context_length",
		"exceeds the context length", "input is too long",
		"exceeds the maximum number of tokens",
		"reduce the length of the messages",
		"longer than the model's context length",
	};
	char low[1024];
	size_t i;

	if (status != 400 && status != 413 && status != 422 && status != 0)
		return 0;
	for (i = 0; code && i < sizeof codes / sizeof *codes; i++)
		if (!strcmp(code, codes[i]))
			return 1;
	for (i = 0; msg && msg[i] && i < sizeof low - 1; i++)
		low[i] = (char)tolower((unsigned char)msg[i]);
	low[i] = '\0';
	for (i = 0; msg && i < sizeof words / sizeof *words; i++)
		if (strstr(low, words[i]))
			return 1;
	return 0;
}

/* An HTTP date (RFC 9110: IMF-fixdate, or the obsolete RFC 850 and
 * asctime forms): seconds since the epoch, or -1. */
static time_t
http_date(const char *v)
{
	static const char *const forms[] = {
		"%a, %d %b %Y %H:%M:%S GMT",
		"%A, %d-%b-%y %H:%M:%S GMT",
		"%a %b %d %H:%M:%S %Y",
	};
	const char *end;
	struct tm tm;
	size_t i;

	for (i = 0; i < sizeof forms / sizeof *forms; i++) {
		memset(&tm, 0, sizeof tm);
		end = strptime(v, forms[i], &tm);
		if (end && !*end)
			return timegm(&tm);
	}
	return -1;
}

/* "Retry-After: 3" or an HTTP date; "retry-after-ms: 1500". */
static double
parse_retry_after(const char *name, const char *v)
{
	char *end;
	double s;
	time_t t;

	s = strtod(v, &end);
	if (end != v && (*end == '\0' || isspace((unsigned char)*end)))
		return !strcasecmp(name, "retry-after-ms") ? s / 1000 : s;
	t = http_date(v);
	if (t > 0)
		return difftime(t, time(NULL));
	return -1;
}

/* Copies what is printable of s (a header's value) into out, cut to its
 * size. */
static void
printable(char *out, size_t size, const char *s)
{
	size_t i = 0;

	for (; *s && i + 1 < size; s++)
		if (*s >= ' ' && *s < 0x7f)
			out[i++] = *s;
	out[i] = '\0';
}

/* A line of the answer's head: the status line, or a header. */
static void
got_header(void *ctx, const char *p, size_t len)
{
	struct attempt *a = ctx;
	size_t k, vlen;
	char name[64], value[256];
	const char *colon = memchr(p, ':', len), *v;
	double ra;

	if (len > 5 && !memcmp(p, "HTTP/", 5)) {
		/* a new response (after a 100 Continue, say): start over */
		a->request_id[0] = '\0';
		a->retry_after = -1;
		a->event_stream = 0;
		a->should_retry = -1;
		memset(&a->seen, 0, sizeof a->seen);
		return;
	}
	if (!colon || (size_t)(colon - p) >= sizeof name)
		return;
	k = (size_t)(colon - p);
	memcpy(name, p, k);
	name[k] = '\0';
	v = colon + 1;
	while (v < p + len && (*v == ' ' || *v == '\t'))
		v++;
	vlen = (size_t)(p + len - v);
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' ||
			v[vlen - 1] == ' '))
		vlen--;
	if (vlen >= sizeof value)
		vlen = sizeof value - 1;
	memcpy(value, v, vlen);
	value[vlen] = '\0';
	if (!strcasecmp(name, "x-request-id") || !strcasecmp(name, "request-id")) {
		/* redacted whole, before it is cut to size: a key the server
		 * echoes must not survive even in part */
		char *id = strndup(v, vlen);

		if (id) {
			redact(id, a->secrets);
			snprintf(a->request_id, sizeof a->request_id, "%.127s",
				 id);
		} else
			snprintf(a->request_id, sizeof a->request_id,
				 "(lost: out of memory)");
		free(id);
	}
	else if (!strcasecmp(name, "retry-after-ms") ||
		 (!strcasecmp(name, "retry-after") && a->retry_after < 0)) {
		ra = parse_retry_after(name, value);
		if (ra >= 0)
			a->retry_after = ra;
	} else if (!strcasecmp(name, "content-type")) {
		a->event_stream = !strncasecmp(value, "text/event-stream", 17);
		printable(a->ctype, sizeof a->ctype, value);
	}
	else if (!strncasecmp(name, "x-ratelimit-", 12) ||
		 !strncasecmp(name, "anthropic-ratelimit-", 20))
		ratelimit_header(&a->seen, name, value);
	else if (!strcasecmp(name, "x-should-retry"))
		/* the server's word on retrying wins over the status, as in
		 * the official SDKs */
		a->should_retry = !strcasecmp(value, "true") ? 1 :
				  !strcasecmp(value, "false") ? 0 : -1;
}

static size_t
on_header(char *p, size_t size, size_t n, void *ctx)
{
	got_header(ctx, p, size * n);
	return size * n;
}

/* An answer that is no answer of the API, said with the URL that was
 * asked and what came, and the usual cause: a base URL that misses its
 * version path (the server's own 404 page, or a web page). */
static void
not_the_api(const struct attempt *a, const char *what, char *out,
	    size_t size)
{
	snprintf(out, size, "%.300s; POST %.250s answered %ld%s%.40s: is "
		 "that the API's address (does the base URL end in /v1?)",
		 what, a->m->url, a->status, a->ctype[0] ? " with " : "",
		 a->ctype);
}

/* Bytes of the answer's body: nonzero stops the answer. */
static int
got_body(void *ctx, const char *p, size_t len)
{
	struct attempt *a = ctx;
	/* A stream asked for comes as events whatever its Content-Type
	 * says (the SDKs parse it so), unless it is a whole JSON answer. */
	if (!a->seen_body && len && a->status == 200 && a->stream &&
	    !a->event_stream) {
		size_t i = 0;

		while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' ||
				   p[i] == '\n'))
			i++;
		if (i < len)
			a->event_stream = p[i] != '{';
	}
	if (len)
		a->seen_body = 1;
	if (a->status == 200 && a->event_stream) {
		unsigned long events = a->reply->events;

		if (answer_feed(a->reply, p, len, &a->err) < 0) {
			a->failed = 1;
			return 1;
		}
		/* only a data event is progress, not a comment */
		if (a->reply->events != events)
			a->last_data = mono_now();
		return 0;
	}
	if (len)
		a->last_data = mono_now();
	if (buf_append(&a->body, p, len) < 0) {
		ah_fail(&a->err, AH_ETOOBIG, "the answer is larger than %zu "
			"bytes", a->body.max);
		a->failed = 1;
		return 1;
	}
	return 0;
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;

	if (!a->status)
		cu.getinfo(a->m->curl, CURLINFO_RESPONSE_CODE, &a->status);
	return got_body(ctx, p, size * n) ? 0 : size * n;
}

/* The API's error.message and error.code of a body, when it has them. */
static void
api_error(const char *body, size_t n, const cJSON *given, char *msg,
	  size_t size, char *code, size_t csize)
{
	cJSON *v = given ? NULL : json_parse(body, n, NULL);
	const cJSON *e = given ? given : cJSON_GetObjectItemCaseSensitive(v, "error");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "type");

	msg[0] = code[0] = '\0';
	if (cJSON_IsString(m))
		snprintf(msg, size, "%s", m->valuestring);
	else if (cJSON_IsString(e))
		snprintf(msg, size, "%s", e->valuestring);
	else if (n && !given)
		snprintf(msg, size, "%.*s", (int)(n > 200 ? 200 : n), body);
	if (cJSON_IsString(c))
		snprintf(code, csize, "%s", c->valuestring);
	else if (cJSON_IsString(t))
		snprintf(code, csize, "%s", t->valuestring);
	cJSON_Delete(v);
}

static void
sleep_for(double s, volatile sig_atomic_t *stop)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !(stop && *stop))
		;
}

/* Called at least once a second, also while nothing comes, with how
 * much of the request went out: nonzero stops the answer. */
static int
tick(void *ctx, long long ulnow)
{
	struct attempt *a = ctx;
	double now = mono_now();

	if (a->stop && *a->stop)
		return 1;
	if (ulnow != a->sent) { /* a large request still going out */
		a->sent = ulnow;
		a->last_data = now;
	}
	if (a->deadline > 0 && now >= a->deadline) {
		a->late = 1;
		return 1;
	}
	if (now - a->last_data >= a->idle) {
		a->stalled = 1;
		return 1;
	}
	return 0;
}

static int
on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow,
	    curl_off_t ultotal, curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal;
	return tick(ctx, (long long)ulnow);
}

/* The request, read out as it is sent: bytes, or -1 (a->err). */
static ssize_t
read_out(void *ctx, char *dst, size_t max)
{
	struct attempt *a = ctx;
	ssize_t k = a->req ? model_body_read(a->req, dst, max, &a->err)
			   : ah_fail(&a->err, AH_EIO, "cannot send the request: "
				     "the body given whole was read out");

	if (k < 0)
		a->failed = 1;
	return k;
}

static size_t
on_read(char *dst, size_t size, size_t n, void *ctx)
{
	ssize_t k = read_out(ctx, dst, size * n);

	return k < 0 ? CURL_READFUNC_ABORT : (size_t)k;
}

/* The request once more from its start, on a new connection. */
static int
rewind_body(void *ctx)
{
	struct attempt *a = ctx;

	return !a->req || model_body_seek(a->req, 0) < 0;
}

/* libcurl sends it again from the start (or from offset): on a fresh
 * connection when the kept-alive one turned out dead, say. */
static int
on_seek(void *ctx, curl_off_t offset, int origin)
{
	struct attempt *a = ctx;

	if (!a->req || origin != SEEK_SET || offset < 0 ||
	    model_body_seek(a->req, (size_t)offset) < 0)
		return CURL_SEEKFUNC_CANTSEEK;
	return CURL_SEEKFUNC_OK;
}

/* One exchange over libcurl: 1 when the answer came whole. */
static int
curl_exchange(struct model *m, struct attempt *a, const char *flat,
	      size_t len)
{
	CURLcode cc;

	cu.setopt(m->curl, CURLOPT_POSTFIELDS, flat);
	/* (set for every attempt: never one of an attempt gone) */
	cu.setopt(m->curl, CURLOPT_READFUNCTION, on_read);
	cu.setopt(m->curl, CURLOPT_READDATA, a);
	cu.setopt(m->curl, CURLOPT_SEEKFUNCTION, on_seek);
	cu.setopt(m->curl, CURLOPT_SEEKDATA, a);
	cu.setopt(m->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cu.setopt(m->curl, CURLOPT_HEADERFUNCTION, on_header);
	cu.setopt(m->curl, CURLOPT_HEADERDATA, a);
	cu.setopt(m->curl, CURLOPT_WRITEFUNCTION, on_body);
	cu.setopt(m->curl, CURLOPT_WRITEDATA, a);
	cu.setopt(m->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	cu.setopt(m->curl, CURLOPT_XFERINFODATA, a);
	cu.setopt(m->curl, CURLOPT_NOPROGRESS, 0L);
	cc = cu.perform(m->curl);
	cu.getinfo(m->curl, CURLINFO_RESPONSE_CODE, &a->status);
	if (cc != CURLE_OK && !m->errbuf[0])
		snprintf(m->errbuf, sizeof m->errbuf, "%s", cu.strerror(cc));
	return cc == CURLE_OK;
}

/* One attempt: the request sent, the answer read into reply.  0 for an
 * answer; 1 when the attempt failed in a way worth trying again (why
 * says how, err->code is set, *retry_after is what the server asked
 * for, or -1, *shared set when the endpoint's shared budget waits it
 * out); -1 when the call failed (err). */
static int
try_once(struct model *m, const struct model_opts *o, struct model_body *body,
	 struct reply *reply, double deadline, int attempt,
	 char *request_id, size_t idsize, char *why, size_t whysize,
	 double *retry_after, int *shared, struct ah_error *err)
{
	const char *secrets[] = { o->api_key, NULL };
	char msg[1024], code[128];
	const char *flat = NULL;
	struct attempt a;
	int transient, retryable = 0, rc = -1, ok;
	double wait;

	memset(&a, 0, sizeof a);
	a.m = m;
	a.reply = reply;
	a.body = (struct buf)BUF_INIT(o->max_answer);
	a.retry_after = -1;
	a.should_retry = -1;
	a.stream = o->stream;
	a.secrets = secrets;
	a.stop = o->interrupted;
	a.idle = o->timeout;
	a.deadline = deadline;
	a.last_data = mono_now();
	reply_free(reply);
	reply_init(reply, o->max_answer);
	reply->choices = o->choices;
	reply->api = o->api;
	reply->on_text = o->on_text;
	reply->ctx = o->ctx;
	m->errbuf[0] = '\0';
	if (body->len <= MODEL_FLAT_MAX) {
		flat = model_body_flat(body, err);
		if (!flat)
			goto out;
	} else {
		/* read out as it goes, the whole body from the start on
		 * each attempt; its length known, so no chunked encoding,
		 * which some servers refuse */
		a.req = body;
		model_body_seek(body, 0);
	}
	*shared = 0;
	/* the endpoint's budget, shared with every session of the machine:
	 * our turn, within it */
	if (o->rl && ratelimit_acquire(o->rl, o->tokens, deadline,
				       o->interrupted, o->on_wait, o->ctx,
				       err) < 0)
		goto out;
	if (m->http) {
		struct http_io io = { got_header, got_body, read_out,
				      rewind_body, tick, &a, secrets };

		ok = http_post(m->http, (const char *const *)m->headers, flat,
			       body->len, &io, &a.status, m->errbuf,
			       sizeof m->errbuf) == 0;
	} else {
		ok = curl_exchange(m, &a, flat, body->len);
	}
	if (o->rl) {
		ratelimit_done(o->rl, &a.seen, ok ? a.status : 0,
			       a.retry_after, &wait);
		if (wait >= 0) {
			a.retry_after = wait;
			*shared = 1;
		}
	}
	if (o->interrupted && *o->interrupted) {
		ah_fail(err, AH_EINTR, "interrupted");
		goto out;
	}
	/* the server's text: it may echo the key */
	redact(a.request_id, secrets);
	snprintf(request_id, idsize, "%s", a.request_id);
	*retry_after = a.retry_after;
	if (a.late) {
		ah_fail(err, AH_ENET, "no answer within the deadline of %g s "
			"(--deadline)%s", o->deadline, attempt ?
			", retries included" : "");
		goto out;
	}
	if (a.failed) {
		/* our own bound or a broken stream: not the network */
		ah_fail(err, a.err.code, "%s", a.err.msg);
		goto out;
	}
	if (!ok && a.status == 200 && a.event_stream) {
		/* The request was taken and half answered: sending it again
		 * could do the work twice.  It failed. */
		if (a.stalled)
			ah_fail(err, AH_ENET, "the stream sent no data for %g s "
				"(--timeout; comments and keep-alives do not "
				"count)", o->timeout);
		else
			ah_fail(err, AH_ENET, "the stream broke off before the "
				"answer was complete: %.400s", m->errbuf);
		goto out;
	}
	if (!ok && a.stalled) {
		snprintf(why, whysize, "no answer from %.300s for %g s "
			 "(--timeout)", m->url, o->timeout);
		retryable = 1;
		err->code = AH_ENET;
	} else if (!ok) {
		snprintf(why, whysize, "cannot reach %.300s: %.400s", m->url,
			 m->errbuf[0] ? m->errbuf : "no answer");
		retryable = 1;
		err->code = AH_ENET;
	} else if (a.status == 200) {
		if (a.event_stream) {
			if (answer_end(reply, err) < 0)
				goto out;
		} else if (answer_parse(reply, a.body.data ? a.body.data : "",
				       a.body.len, err) < 0) {
			/* not JSON at all: a web page, most likely */
			if (err->code == AH_EFORMAT && (a.body.len == 0 ||
			    a.body.data[strspn(a.body.data, " \t\r\n")] != '{')) {
				snprintf(msg, sizeof msg, "%s", err->msg);
				not_the_api(&a, msg, why, whysize);
				ah_fail(err, AH_EFORMAT, "%s", why);
			}
			goto out;
		}
		if (reply->error) {
			/* whole, before any of it is cut to size */
			redact_json(reply->error, secrets);
			api_error(NULL, 0, reply->error, msg, sizeof msg, code,
				  sizeof code);
			/* a context too long said in the answer (the
			 * Responses API's response.failed) is one too */
			ah_fail(err, model_too_long(0, code, msg) ? AH_ETOOLONG
				: AH_EAPI, "the stream ended with an error: "
				"%.500s%s%.100s%s", msg[0] ? msg : "no message",
				code[0] ? " (" : "", code, code[0] ? ")" : "");
			goto out;
		}
		if (a.event_stream && !reply->done && !reply->finish[0] &&
		    !reply->events && strncasecmp(a.ctype, "text/event-stream",
						  17)) {
			/* not a stream at all: a web page, most likely */
			not_the_api(&a, "the answer is no stream of events",
				    why, whysize);
			ah_fail(err, AH_EFORMAT, "%s", why);
			goto out;
		}
		if (a.event_stream && !reply->done && !reply->finish[0]) {
			ah_fail(err, AH_ENET, "the stream ended before the "
				"answer was complete (no finish reason, no "
				"[DONE])");
			goto out;
		}
		rc = 0;
		goto out;
	} else {
		if (a.body.data) {
			redact(a.body.data, secrets);
			a.body.len = strlen(a.body.data);
		}
		api_error(a.body.data ? a.body.data : "", a.body.len, NULL, msg,
			  sizeof msg, code, sizeof code);
		snprintf(why, whysize, "%ld%s%.500s%s%.100s%s", a.status,
			 msg[0] ? ": " : "", msg, code[0] ? " (" : "", code,
			 code[0] ? ")" : "");
		/* a path the server does not have (its own page, not an
		 * error of the API): the URL, and the usual cause */
		if ((a.status == 404 || a.status == 405) && !code[0] &&
		    strncasecmp(a.ctype, "application/json", 16)) {
			snprintf(msg, sizeof msg, "%s", why);
			not_the_api(&a, msg, why, whysize);
		}
		transient = a.status == 408 || a.status == 409 ||
			    a.status >= 500 ||
			    (a.status == 429 && strcmp(code, "insufficient_quota"));
		retryable = a.should_retry >= 0 ? a.should_retry : transient;
		err->code = transient ? AH_EAPIRETRY :
			    model_too_long(a.status, code, msg) ? AH_ETOOLONG
								: AH_EAPI;
	}
	if (retryable)
		rc = 1;
	else
		ah_fail(err, err->code, "%s", why);
out:
	buf_free(&a.body);
	return rc;
}

/* The wait before attempt + 1, the SDKs' backoff: 0.5 s doubling to 8 s,
 * less up to 25 % jitter; a server's Retry-After wins, up to a cap.  0
 * when waited; -1 (err, keeping its code) when the deadline would pass
 * in the wait, or a signal came. */
static int
backoff(const struct model_opts *o, int attempt, double retry_after,
	int shared, double deadline, const char *why, struct ah_error *err)
{
	const char *secrets[] = { o->api_key, NULL };
	double wait = 0.5 * pow(2, attempt);
	char msg[1024];

	if (wait > 8)
		wait = 8;
	wait *= 1 - 0.25 * ((double)rand() / RAND_MAX);
	if (retry_after >= 0)
		wait = retry_after > RETRY_CAP ? RETRY_CAP : retry_after;
	if (deadline > 0 && mono_now() + wait >= deadline)
		return ah_fail(err, err->code, "%s; not retried: the deadline "
			       "of %g s (--deadline) would pass in the wait "
			       "of %.1f s", why, o->deadline, wait);
	if (o->on_retry) {
		snprintf(msg, sizeof msg, "%.900s; retrying in %.1f s", why,
			 wait);
		redact(msg, secrets);
		o->on_retry(o->ctx, msg);
	}
	/* a wait of the shared budget is waited in its queue */
	if (!shared)
		sleep_for(wait, o->interrupted);
	if (o->interrupted && *o->interrupted)
		return ah_fail(err, AH_EINTR, "interrupted");
	return 0;
}

int
model_call(struct model *m, const struct model_opts *o,
	   struct model_body *body, struct reply *reply, char *request_id,
	   size_t idsize, struct ah_error *err)
{
	const char *secrets[] = { o->api_key, NULL };
	double deadline = o->deadline > 0 ? mono_now() + o->deadline : 0;
	double retry_after;
	char why[768];
	int attempt, rc, shared;

	request_id[0] = '\0';
	for (attempt = 0;; attempt++) {
		rc = try_once(m, o, body, reply, deadline, attempt,
			      request_id, idsize, why, sizeof why,
			      &retry_after, &shared, err);
		if (rc <= 0)
			break;
		rc = -1;
		if (attempt >= o->retries) {
			if (attempt)
				ah_fail(err, err->code, "%s, after %d retr%s",
					why, attempt, attempt == 1 ? "y" : "ies");
			else
				ah_fail(err, err->code, "%s", why);
			break;
		}
		if (backoff(o, attempt, retry_after, shared, deadline, why,
			    err) < 0)
			break;
	}
	if (rc < 0 && request_id[0]) {
		size_t n = strlen(err->msg);

		snprintf(err->msg + n, sizeof err->msg - n, " (request %s)",
			 request_id);
	}
	/* last, over the whole line: the request id is the server's text
	 * too, and a key it echoes must not reach stderr */
	redact(err->msg, secrets);
	return rc;
}

void
model_global_cleanup(void)
{
	if (cu.lib)
		cu.global_cleanup();
}
