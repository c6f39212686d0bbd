/* prices.c: what a model call cost.  The table is data: share/prices.json,
 * compiled in, after the user's own rows in
 * ${XDG_CONFIG_HOME:-~/.config}/agent-harness/prices.json; each row names
 * a model (a glob pattern) and its prices in USD per million tokens.
 * The cost ledger: what the calls of a session and of its subagents
 * spent so far, a small file under flock(2) that they all add to. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

#define PRICES_USER_MAX (1u << 20)

/* Is row a row of the table: a model, and prices that are numbers (or
 * null where they may be)? */
static int
row_ok(const cJSON *row)
{
	static const char *const opt[] = {
		"cached_input", "cache_write", "reasoning",
	};
	const cJSON *v;
	size_t i;

	if (!cJSON_IsObject(row) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(row, "model")))
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(row, "input");
	if (!cJSON_IsNumber(v) || v->valuedouble < 0)
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(row, "output");
	if (!cJSON_IsNumber(v) || v->valuedouble < 0)
		return 0;
	for (i = 0; i < sizeof opt / sizeof *opt; i++) {
		v = cJSON_GetObjectItemCaseSensitive(row, opt[i]);
		if (v && !cJSON_IsNull(v) &&
		    (!cJSON_IsNumber(v) || v->valuedouble < 0))
			return 0;
	}
	return 1;
}

/* Appends the rows of text (a JSON array) to table.  0, or -1 (err,
 * naming what). */
static int
add_rows(cJSON *table, const char *text, size_t len, const char *what,
	 struct ah_error *err)
{
	cJSON *rows = json_parse(text, len, NULL), *row;
	int n = 0;

	if (!cJSON_IsArray(rows)) {
		cJSON_Delete(rows);
		return ah_fail(err, AH_EFORMAT, "%s: not a JSON array of "
			       "prices", what);
	}
	while ((row = rows->child)) {
		n++;
		if (!row_ok(row)) {
			cJSON_Delete(rows);
			return ah_fail(err, AH_EFORMAT, "%s: row %d: not a "
				       "price (\"model\" a string, \"input\" "
				       "and \"output\" numbers, the others "
				       "numbers or null)", what, n);
		}
		cJSON_DetachItemViaPointer(rows, row);
		cJSON_AddItemToArray(table, row);
	}
	cJSON_Delete(rows);
	return 0;
}

cJSON *
prices_load(struct ah_error *err)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char path[4096];
	char *text = NULL;
	size_t len;
	cJSON *table = cJSON_CreateArray();
	int rc;

	if (!table) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		return NULL;
	}
	path[0] = '\0';
	if (x && x[0] == '/')
		snprintf(path, sizeof path, "%s/agent-harness/prices.json", x);
	else if (home && home[0] == '/')
		snprintf(path, sizeof path,
			 "%s/.config/agent-harness/prices.json", home);
	/* the user's rows first: they win */
	if (path[0]) {
		rc = file_read(path, PRICES_USER_MAX, &text, &len, err);
		if (rc < 0 || (rc > 0 && add_rows(table, text, len, path,
						  err) < 0)) {
			free(text);
			cJSON_Delete(table);
			return NULL;
		}
		free(text);
	}
	if (add_rows(table, data_prices, strlen(data_prices),
		     "share/prices.json", err) < 0) {
		cJSON_Delete(table);
		return NULL;
	}
	return table;
}

const cJSON *
prices_find(const cJSON *table, const char *model)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, table)
		if (fnmatch(cJSON_GetObjectItemCaseSensitive(row,
			    "model")->valuestring, model, 0) == 0)
			return row;
	return NULL;
}

/* The number at key of o (an object in o, when sub is given), else 0. */
static double
num(const cJSON *o, const char *sub, const char *key)
{
	const cJSON *v;

	if (sub)
		o = cJSON_GetObjectItemCaseSensitive(o, sub);
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* The number at key (in sub), else at other: agent-step records the
 * Responses API's input_tokens as prompt_tokens too, for instance. */
static double
either(const cJSON *o, const char *sub, const char *key, const char *other)
{
	double v = num(o, sub, key);

	return v || !other ? v : num(o, sub, other);
}

/* The price of key in row, else that of fallback. */
static double
price(const cJSON *row, const char *key, const char *fallback)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	return num(row, NULL, fallback);
}

double
prices_cost(const cJSON *row, const cJSON *u)
{
	double in, cached, written, out, reasoning;

	if (cJSON_GetObjectItemCaseSensitive(u, "cache_read_input_tokens") ||
	    cJSON_GetObjectItemCaseSensitive(u,
					     "cache_creation_input_tokens")) {
		/* Anthropic's: input_tokens are those neither read from
		 * the cache nor written to it */
		in = num(u, NULL, "input_tokens");
		cached = num(u, NULL, "cache_read_input_tokens");
		written = num(u, NULL, "cache_creation_input_tokens");
		out = num(u, NULL, "output_tokens");
		reasoning = 0;
	} else {
		/* OpenAI's (Chat Completions, Responses): the prompt's
		 * tokens include those read from the cache, the answer's
		 * its reasoning */
		in = either(u, NULL, "prompt_tokens", "input_tokens");
		cached = either(u, "prompt_tokens_details", "cached_tokens",
				NULL);
		if (!cached)
			cached = either(u, "input_tokens_details",
					"cached_tokens", NULL);
		out = either(u, NULL, "completion_tokens", "output_tokens");
		reasoning = either(u, "completion_tokens_details",
				   "reasoning_tokens", NULL);
		if (!reasoning)
			reasoning = either(u, "output_tokens_details",
					   "reasoning_tokens", NULL);
		in = in > cached ? in - cached : 0;
		out = out > reasoning ? out - reasoning : 0;
		written = 0;
	}
	return (in * price(row, "input", "input") +
		cached * price(row, "cached_input", "input") +
		written * price(row, "cache_write", "input") +
		out * price(row, "output", "output") +
		reasoning * price(row, "reasoning", "output")) / 1e6;
}

/* --- the ledger -------------------------------------------------------- */

/* Opens and locks the ledger at path: a regular file of ours.  The
 * descriptor, or -1 (err). */
static int
ledger_open(const char *path, struct ah_error *err)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot open '%s'", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		close(fd);
		return ah_fail(err, AH_EIO, "'%s' is not a file of ours", path);
	}
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			ah_fail_errno(err, errno, "cannot lock '%s'", path);
			close(fd);
			return -1;
		}
	return fd;
}

static void
ledger_get(int fd, double *total, double *last)
{
	char text[128];
	ssize_t n = pread(fd, text, sizeof text - 1, 0);

	*total = *last = 0;
	if (n <= 0)
		return;
	text[n] = '\0';
	if (sscanf(text, "%lf %lf", total, last) != 2)
		*total = *last = 0;
}

int
cost_ledger_read(const char *path, double *total, double *last,
		 struct ah_error *err)
{
	int fd = ledger_open(path, err);

	if (fd < 0)
		return -1;
	ledger_get(fd, total, last);
	close(fd);
	return 0;
}

int
cost_ledger_add(const char *path, double cost, struct ah_error *err)
{
	double total, last;
	char text[128];
	int fd = ledger_open(path, err), n, rc = 0;

	if (fd < 0)
		return -1;
	ledger_get(fd, &total, &last);
	n = snprintf(text, sizeof text, "%.9f %.9f\n", total + cost, cost);
	if (pwrite(fd, text, (size_t)n, 0) != n ||
	    ftruncate(fd, (off_t)n) < 0)
		rc = ah_fail_errno(err, errno, "cannot write '%s'", path);
	close(fd);
	return rc;
}
