/* curl.c: libcurl, for what http.c does not speak: https://, a proxy, a
 * user name in the URL.  It is loaded (dlopen) only when a URL needs it:
 * its thirty-odd libraries take longer to load than a step of the
 * harness takes.  model.c calls it for the model; http_open (http.c)
 * gives the other clients (mcp.c) a connection over it with http_post's
 * contract.
 *
 * What libcurl reads of the environment holds: the proxy variables
 * (http_proxy, lowercase only, for http://; https_proxy or HTTPS_PROXY
 * for https://; all_proxy or ALL_PROXY; no_proxy or NO_PROXY).  http.c
 * speaks to no proxy: a URL for which one is set goes here. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curlfn.h"
#include "priv.h"

struct curl_fns cu;

#define CURL_FN(field, name) \
	(*(void **)&cu.field = dlsym(cu.lib, name)) == NULL

int
curl_load(struct ah_error *err)
{
	const char *why;

	if (cu.lib)
		return 0;
	cu.lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib) {
		why = dlerror();
		return ah_fail(err, AH_EIO, "cannot load libcurl, which a URL "
			       "other than plain http:// needs: %s",
			       why ? why : "unknown error");
	}
	if (CURL_FN(global_init, "curl_global_init") ||
	    CURL_FN(global_cleanup, "curl_global_cleanup") ||
	    CURL_FN(easy_init, "curl_easy_init") ||
	    CURL_FN(setopt, "curl_easy_setopt") ||
	    CURL_FN(perform, "curl_easy_perform") ||
	    CURL_FN(getinfo, "curl_easy_getinfo") ||
	    CURL_FN(cleanup, "curl_easy_cleanup") ||
	    CURL_FN(strerror, "curl_easy_strerror") ||
	    CURL_FN(slist_append, "curl_slist_append") ||
	    CURL_FN(slist_free_all, "curl_slist_free_all") ||
	    cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		dlclose(cu.lib);
		memset(&cu, 0, sizeof cu);
		return ah_fail(err, AH_EIO, "cannot start libcurl");
	}
	return 0;
}

int
http_needs_curl(const char *url)
{
	static const char *const proxies[] = {
		"http_proxy", "all_proxy", "ALL_PROXY",
	};
	const char *v;
	size_t i;

	if (!http_url_plain(url))
		return 1;
	if ((v = getenv("AGENT_HTTP")) && !strcmp(v, "curl"))
		return 1;
	for (i = 0; i < sizeof proxies / sizeof *proxies; i++)
		if ((v = getenv(proxies[i])) && *v)
			return 1;
	return 0;
}

/* --- a connection with http_post's contract ----------------------------- */

struct hcurl {
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
};

/* One exchange's callbacks. */
struct hx {
	const struct http_io *io;
	int stopped; /* a callback of io stopped it */
};

static size_t
on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct hx *x = ctx;
	size_t len = size * n, k = len;

	while (k && (p[k - 1] == '\n' || p[k - 1] == '\r'))
		k--;
	if (k && x->io->header)
		x->io->header(x->io->ctx, p, k);
	return len;
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct hx *x = ctx;

	if (x->io->body && x->io->body(x->io->ctx, p, size * n)) {
		x->stopped = 1;
		return 0;
	}
	return size * n;
}

static size_t
on_read(char *dst, size_t size, size_t n, void *ctx)
{
	struct hx *x = ctx;
	ssize_t k = x->io->read ? x->io->read(x->io->ctx, dst, size * n) : -1;

	if (k < 0) {
		x->stopped = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)k;
}

static int
on_seek(void *ctx, curl_off_t offset, int origin)
{
	struct hx *x = ctx;

	if (origin != SEEK_SET || offset != 0 || !x->io->rewind ||
	    x->io->rewind(x->io->ctx))
		return CURL_SEEKFUNC_CANTSEEK;
	return CURL_SEEKFUNC_OK;
}

static int
on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow,
	    curl_off_t ultotal, curl_off_t ulnow)
{
	struct hx *x = ctx;

	(void)dltotal, (void)dlnow, (void)ultotal;
	if (x->io->tick && x->io->tick(x->io->ctx, (long long)ulnow)) {
		x->stopped = 1;
		return 1;
	}
	return 0;
}

struct hcurl *
hcurl_new(const char *url, double connect_timeout, const char *cafile,
	  struct ah_error *err)
{
	struct hcurl *c;
	size_t i;

	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)) {
		ah_fail(err, AH_EFORMAT, "'%.200s' is not an http:// or "
			"https:// URL", url);
		return NULL;
	}
	for (i = 0; url[i]; i++)
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f) {
			ah_fail(err, AH_EFORMAT, "the URL holds a space or a "
				"control character");
			return NULL;
		}
	if (curl_load(err) < 0)
		return NULL;
	c = calloc(1, sizeof *c);
	if (!c || !(c->curl = cu.easy_init())) {
		free(c);
		ah_fail(err, AH_ENOMEM, "cannot start libcurl");
		return NULL;
	}
	cu.setopt(c->curl, CURLOPT_URL, url);
	cu.setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
	cu.setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	cu.setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	cu.setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	cu.setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS,
		  (long)(connect_timeout * 1000));
	/* http and https only, redirects not followed; a proxy's answer
	 * to CONNECT is not the server's */
	cu.setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.setopt(c->curl, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
	if (cafile && *cafile &&
	    cu.setopt(c->curl, CURLOPT_CAINFO, cafile) != CURLE_OK) {
		hcurl_free(c);
		ah_fail(err, AH_EIO, "libcurl takes no CA file here");
		return NULL;
	}
	return c;
}

void
hcurl_free(struct hcurl *c)
{
	if (!c)
		return;
	if (c->curl)
		cu.cleanup(c->curl);
	free(c);
}

int
hcurl_post(struct hcurl *c, const char *const *headers, const char *flat,
	   size_t len, const struct http_io *io, long *status, char *errbuf,
	   size_t errsize)
{
	struct curl_slist *h, *more;
	struct hx x = { io, 0 };
	CURLcode cc;
	size_t i;

	*status = 0;
	errbuf[0] = '\0';
	c->errbuf[0] = '\0';
	/* no "Expect: 100-continue" wait for a large body */
	h = cu.slist_append(NULL, "Expect:");
	for (i = 0; h && headers && headers[i]; i++) {
		more = cu.slist_append(h, headers[i]);
		if (!more)
			cu.slist_free_all(h);
		h = more;
	}
	if (!h) {
		snprintf(errbuf, errsize, "out of memory");
		return HTTP_FAILED;
	}
	cu.setopt(c->curl, CURLOPT_HTTPHEADER, h);
	cu.setopt(c->curl, CURLOPT_POST, 1L);
	cu.setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cu.setopt(c->curl, CURLOPT_POSTFIELDS, flat);
	cu.setopt(c->curl, CURLOPT_READFUNCTION, on_read);
	cu.setopt(c->curl, CURLOPT_READDATA, &x);
	cu.setopt(c->curl, CURLOPT_SEEKFUNCTION, on_seek);
	cu.setopt(c->curl, CURLOPT_SEEKDATA, &x);
	cu.setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
	cu.setopt(c->curl, CURLOPT_HEADERDATA, &x);
	cu.setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	cu.setopt(c->curl, CURLOPT_WRITEDATA, &x);
	cu.setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	cu.setopt(c->curl, CURLOPT_XFERINFODATA, &x);
	cu.setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	cc = cu.perform(c->curl);
	cu.getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	/* the list holds the headers' secrets, and libcurl keeps no copy */
	cu.setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	for (more = h; more; more = more->next)
		explicit_bzero(more->data, strlen(more->data));
	cu.slist_free_all(h);
	if (cc == CURLE_OK)
		return 0;
	if (x.stopped)
		return HTTP_STOPPED;
	snprintf(errbuf, errsize, "%s", c->errbuf[0] ? c->errbuf
						     : cu.strerror(cc));
	return HTTP_FAILED;
}
