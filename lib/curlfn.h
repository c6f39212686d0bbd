/* curlfn.h: libcurl's functions, for the files that call them (model.c,
 * curl.c).  libcurl is loaded (curl_load) only when a URL needs it: see
 * curl.c. */
#ifndef AH_CURLFN_H
#define AH_CURLFN_H

#include <curl/curl.h>

struct ah_error;

/* Its functions, once it is loaded. */
struct curl_fns {
	void *lib;
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*setopt)(CURL *, CURLoption, ...);
	CURLcode (*perform)(CURL *);
	CURLcode (*getinfo)(CURL *, CURLINFO, ...);
	void (*cleanup)(CURL *);
	const char *(*strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};
extern struct curl_fns cu;

/* Loads libcurl and starts it, once: 0, or -1 (err). */
int curl_load(struct ah_error *err);

#endif
