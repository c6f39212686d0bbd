/* model.c: calling a Chat Completions endpoint over libcurl, with the
 * retries of the official SDKs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "priv.h"

#define RETRY_CAP 60.0 /* seconds: the longest wait we honour */

struct model {
	CURL *curl;
	struct curl_slist *headers;
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
	int should_retry;       /* x-should-retry: 1 true, 0 false, -1 none */
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

int
model_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

struct model *
model_new(const struct model_opts *o, struct ah_error *err)
{
	struct model *m = calloc(1, sizeof *m);
	char auth[4096];
	const char *base = o->base_url;
	size_t n = strlen(base);
	struct curl_slist *h;

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
		 o->api == API_ANTHROPIC ? "messages" : "chat/completions");
	m->curl = curl_easy_init();
	if (!m->curl) {
		ah_fail(err, AH_ENOMEM, "cannot start libcurl");
		goto fail;
	}
	h = curl_slist_append(NULL, "Content-Type: application/json");
	/* Bodies over 1 MB would otherwise wait up to a second for a
	 * "100 Continue" that most servers never send. */
	if (h)
		h = curl_slist_append(h, "Expect:");
	if (h && o->api_key && *o->api_key) {
		if (strlen(o->api_key) > sizeof auth - 32) {
			ah_fail(err, AH_EFORMAT, "the API key is too long");
			curl_slist_free_all(h);
			goto fail;
		}
		snprintf(auth, sizeof auth, o->api == API_ANTHROPIC ?
			 "x-api-key: %s" : "Authorization: Bearer %s",
			 o->api_key);
		h = curl_slist_append(h, auth);
		memset(auth, 0, sizeof auth);
	}
	if (h && o->api == API_ANTHROPIC)
		h = curl_slist_append(h, "anthropic-version: 2023-06-01");
	if (!h) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto fail;
	}
	m->headers = h;
	curl_easy_setopt(m->curl, CURLOPT_URL, m->url);
	curl_easy_setopt(m->curl, CURLOPT_HTTPHEADER, m->headers);
	curl_easy_setopt(m->curl, CURLOPT_ERRORBUFFER, m->errbuf);
	curl_easy_setopt(m->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(m->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(m->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(m->curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(m->curl, CURLOPT_USERAGENT, "agent-harness/"
			 AH_VERSION);
	curl_easy_setopt(m->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(o->timeout * 1000));
	/* An idle answer is judged by on_progress, by data events rather
	 * than bytes: a keep-alive every second is still no answer. */
	return m;
fail:
	model_free(m);
	return NULL;
}

void
model_free(struct model *m)
{
	if (!m)
		return;
	if (m->curl)
		curl_easy_cleanup(m->curl);
	curl_slist_free_all(m->headers);
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
	t = curl_getdate(v, NULL);
	if (t > 0)
		return difftime(t, time(NULL));
	return -1;
}

static size_t
on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;
	size_t len = size * n, k, vlen;
	char name[64], value[256];
	const char *colon = memchr(p, ':', len), *v;
	double ra;

	if (len > 5 && !memcmp(p, "HTTP/", 5)) {
		/* a new response (after a 100 Continue, say): start over */
		a->request_id[0] = '\0';
		a->retry_after = -1;
		a->event_stream = 0;
		a->should_retry = -1;
		return len;
	}
	if (!colon || (size_t)(colon - p) >= sizeof name)
		return len;
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
	} else if (!strcasecmp(name, "content-type"))
		a->event_stream = !strncasecmp(value, "text/event-stream", 17);
	else if (!strcasecmp(name, "x-should-retry"))
		/* the server's word on retrying wins over the status, as in
		 * the official SDKs */
		a->should_retry = !strcasecmp(value, "true") ? 1 :
				  !strcasecmp(value, "false") ? 0 : -1;
	return len;
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;
	size_t len = size * n;

	if (!a->status)
		curl_easy_getinfo(a->m->curl, CURLINFO_RESPONSE_CODE, &a->status);
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

		if (reply_feed(a->reply, p, len, &a->err) < 0) {
			a->failed = 1;
			return 0; /* stops the transfer */
		}
		/* only a data event is progress, not a comment */
		if (a->reply->events != events)
			a->last_data = mono_now();
		return len;
	}
	if (len)
		a->last_data = mono_now();
	if (buf_append(&a->body, p, len) < 0) {
		ah_fail(&a->err, AH_ETOOBIG, "the answer is larger than %zu "
			"bytes", a->body.max);
		a->failed = 1;
		return 0;
	}
	return len;
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

/* Called by libcurl at least once a second, also while nothing comes:
 * nonzero aborts the transfer. */
static int
on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow,
	    curl_off_t ultotal, curl_off_t ulnow)
{
	struct attempt *a = ctx;
	double now = mono_now();

	(void)dltotal, (void)dlnow, (void)ultotal;
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

/* The request, read out as libcurl sends it. */
static size_t
on_read(char *dst, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;
	ssize_t k = a->req ? model_body_read(a->req, dst, size * n, &a->err)
			   : ah_fail(&a->err, AH_EIO, "cannot send the request: "
				     "libcurl read a body it was given whole");

	if (k < 0) {
		a->failed = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)k;
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

/* One attempt: the request sent, the answer read into reply.  0 for an
 * answer; 1 when the attempt failed in a way worth trying again (why
 * says how, err->code is set, *retry_after is what the server asked
 * for, or -1); -1 when the call failed (err). */
static int
try_once(struct model *m, const struct model_opts *o, struct model_body *body,
	 struct reply *reply, double deadline, int attempt,
	 char *request_id, size_t idsize, char *why, size_t whysize,
	 double *retry_after, struct ah_error *err)
{
	const char *secrets[] = { o->api_key, NULL };
	char msg[1024], code[128];
	struct attempt a;
	CURLcode cc;
	int transient, retryable = 0, rc = -1;

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
		const char *flat = model_body_flat(body, err);

		if (!flat)
			goto out;
		curl_easy_setopt(m->curl, CURLOPT_POSTFIELDS, flat);
	} else {
		/* read out as it goes, the whole body from the start on
		 * each attempt; its length known, so no chunked encoding,
		 * which some servers refuse */
		a.req = body;
		model_body_seek(body, 0);
		curl_easy_setopt(m->curl, CURLOPT_POSTFIELDS, NULL);
	}
	/* (set for every attempt: never one of an attempt gone) */
	curl_easy_setopt(m->curl, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(m->curl, CURLOPT_READDATA, &a);
	curl_easy_setopt(m->curl, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(m->curl, CURLOPT_SEEKDATA, &a);
	curl_easy_setopt(m->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)body->len);
	curl_easy_setopt(m->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(m->curl, CURLOPT_HEADERDATA, &a);
	curl_easy_setopt(m->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(m->curl, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(m->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(m->curl, CURLOPT_XFERINFODATA, &a);
	curl_easy_setopt(m->curl, CURLOPT_NOPROGRESS, 0L);
	cc = curl_easy_perform(m->curl);
	if (o->interrupted && *o->interrupted) {
		ah_fail(err, AH_EINTR, "interrupted");
		goto out;
	}
	curl_easy_getinfo(m->curl, CURLINFO_RESPONSE_CODE, &a.status);
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
	if (cc != CURLE_OK && a.status == 200 && a.event_stream) {
		/* The request was taken and half answered: sending it again
		 * could do the work twice.  It failed. */
		if (a.stalled)
			ah_fail(err, AH_ENET, "the stream sent no data for %g s "
				"(--timeout; comments and keep-alives do not "
				"count)", o->timeout);
		else
			ah_fail(err, AH_ENET, "the stream broke off before the "
				"answer was complete: %.400s", m->errbuf[0] ?
				m->errbuf : curl_easy_strerror(cc));
		goto out;
	}
	if (cc != CURLE_OK && a.stalled) {
		snprintf(why, whysize, "no answer from %.300s for %g s "
			 "(--timeout)", m->url, o->timeout);
		retryable = 1;
		err->code = AH_ENET;
	} else if (cc != CURLE_OK) {
		snprintf(why, whysize, "cannot reach %.300s: %.400s", m->url,
			 m->errbuf[0] ? m->errbuf : curl_easy_strerror(cc));
		retryable = 1;
		err->code = AH_ENET;
	} else if (a.status == 200) {
		if (a.event_stream) {
			if (reply_finish_stream(reply, err) < 0)
				goto out;
		} else if (reply_parse(reply, a.body.data ? a.body.data : "",
				       a.body.len, err) < 0)
			goto out;
		if (reply->error) {
			/* whole, before any of it is cut to size */
			redact_json(reply->error, secrets);
			api_error(NULL, 0, reply->error, msg, sizeof msg, code,
				  sizeof code);
			ah_fail(err, AH_EAPI, "the stream ended with an error: "
				"%.500s%s%.100s%s", msg[0] ? msg : "no message",
				code[0] ? " (" : "", code, code[0] ? ")" : "");
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
	double deadline, const char *why, struct ah_error *err)
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
	int attempt, rc;

	request_id[0] = '\0';
	for (attempt = 0;; attempt++) {
		rc = try_once(m, o, body, reply, deadline, attempt,
			      request_id, idsize, why, sizeof why,
			      &retry_after, err);
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
		if (backoff(o, attempt, retry_after, deadline, why, err) < 0)
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
	curl_global_cleanup();
}
