/* session.c: the records of agent-run's sessions (.agent/session.json and
 * .agent/sessions/ID.json), what a transcript adds up to, and the list
 * of a directory's sessions.  See agent-session(1). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

/* A record is small; one far larger is not ours. */
#define RECORD_MAX (1024 * 1024)

int
session_id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > SESSION_ID_MAX || id[0] == '.' || id[0] == '-')
		return 0;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789._-") == n;
}

void
session_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The tokens of one usage object: its total, else prompt + completion
 * (Anthropic's input + output, as agent-step records them, too). */
double
usage_tokens(const cJSON *u)
{
	static const char *const parts[][2] = {
		{ "prompt_tokens", "completion_tokens" },
		{ "input_tokens", "output_tokens" },
	};
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, "total_tokens");
	double sum = 0;
	size_t i, k;

	if (cJSON_IsNumber(v) && v->valuedouble >= 0)
		return v->valuedouble;
	for (i = 0; i < sizeof parts / sizeof *parts; i++)
		for (k = 0; k < 2; k++) {
			v = cJSON_GetObjectItemCaseSensitive(u, parts[i][k]);
			if (cJSON_IsNumber(v) && v->valuedouble >= 0)
				sum += v->valuedouble;
		}
	return sum;
}

/* One more denied call of this run: counted, and listed as {tool,
 * reason} while the list is short. */
static void
deny_add(struct session_stats *st, const cJSON *call)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(call, "function"), "name");
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(call, "permission"), "reason");
	cJSON *d;

	st->denied++;
	if (!st->denials ||
	    cJSON_GetArraySize(st->denials) >= SESSION_DENIALS_MAX)
		return;
	d = cJSON_CreateObject();
	if (!d || !cJSON_AddItemToObject(d, "tool", cJSON_IsString(name)
			? cJSON_CreateString(name->valuestring)
			: cJSON_CreateNull()) ||
	    !cJSON_AddItemToObject(d, "reason", cJSON_IsString(why)
			? cJSON_CreateString(why->valuestring)
			: cJSON_CreateNull()) ||
	    !cJSON_AddItemToArray(st->denials, d)) {
		cJSON_Delete(d);
		cJSON_Delete(st->denials);
		st->denials = NULL;
	}
}

/* Adds one message to st; lineno is its line. */
static void
stats_add(struct session_stats *st, const cJSON *msg, unsigned long lineno)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *calls, *call, *c;
	int run = lineno > st->from;
	double tokens;

	if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant")) {
		if (cJSON_IsString(role))
			st->answered = 0;
		return;
	}
	tokens = usage_tokens(cJSON_GetObjectItemCaseSensitive(msg, "usage"));
	st->model_calls++;
	st->tokens += tokens;
	/* what agent-step priced it at (a model not in its table: not
	 * known, and so is the session's total) */
	c = cJSON_GetObjectItemCaseSensitive(msg, "cost_usd");
	if (cJSON_IsNumber(c))
		st->cost += c->valuedouble;
	else
		st->cost_unknown = 1;
	calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	if (run) {
		st->run_calls++;
		st->run_tokens += tokens;
		if (cJSON_IsNumber(c))
			st->run_cost += c->valuedouble;
		else
			st->run_cost_unknown = 1;
	}
	cJSON_ArrayForEach(call, calls) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(call, "permission"),
			"decision");

		if (!run)
			continue;
		st->tool_calls++;
		if (cJSON_IsString(d) && !strcmp(d->valuestring, "deny"))
			deny_add(st, call);
	}
	/* the answer: the last message, an assistant's without calls */
	free(st->answer);
	st->answer = NULL;
	st->answered = 0;
	if (cJSON_GetArraySize(calls) > 0)
		return;
	st->answered = 1;
	c = cJSON_GetObjectItemCaseSensitive(msg, "content");
	if (cJSON_IsString(c))
		st->answer = strdup(c->valuestring);
}

int
session_stats(const char *transcript, struct session_stats *st,
	      struct ah_error *err)
{
	struct jsonl_reader in;
	cJSON *msg;
	int fd, c, rc = 0;

	st->denials = cJSON_CreateArray();
	if (!st->denials)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	fd = agent_open(transcript, "the transcript ", O_RDONLY, 0, err);
	if (fd < 0)
		return -1;
	jsonl_reader_init(&in, fd, transcript, 0);
	while ((c = jsonl_read_line(&in, err)) != 0) {
		if (c < 0) {
			rc = -1;
			break;
		}
		if (jsonl_blank(in.line.data, in.line.len))
			continue;
		/* a torn or foreign line counts for nothing: the figures
		 * are a summary, the transcript is the record */
		msg = json_parse(in.line.data, in.line.len, NULL);
		if (cJSON_IsObject(msg))
			stats_add(st, msg, in.lineno);
		cJSON_Delete(msg);
	}
	jsonl_reader_free(&in);
	close(fd);
	return rc;
}

void
session_stats_free(struct session_stats *st)
{
	free(st->answer);
	st->answer = NULL;
	cJSON_Delete(st->denials);
	st->denials = NULL;
}

cJSON *
session_read(const char *path, struct ah_error *err)
{
	char *data = NULL;
	size_t len;
	cJSON *v;
	int fd, rc;

	fd = agent_open(path, "the session record ", O_RDONLY, 0, err);
	if (fd < 0)
		return NULL;
	rc = fd_read(fd, path, RECORD_MAX, &data, &len, err);
	close(fd);
	if (rc < 0)
		return NULL;
	v = json_parse(data, len, NULL);
	free(data);
	if (!cJSON_IsObject(v) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "id"))) {
		cJSON_Delete(v);
		ah_fail(err, AH_EFORMAT, "'%s': not a session record", path);
		return NULL;
	}
	return v;
}

int
session_write(const char *path, const cJSON *rec, struct ah_error *err)
{
	char *s = cJSON_PrintUnformatted(rec);
	size_t n;
	int rc;

	if (!s)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	n = strlen(s);
	s[n] = '\n';
	/* file_replace wants the room for the newline: strlen(s) + 1 */
	rc = file_replace(path, s, n + 1, err);
	free(s);
	return rc;
}

/* The session that holds lock_path runs: its agent-run has the lock. */
static int
lock_held(const char *lock_path)
{
	int fd = agent_open(lock_path, NULL, O_RDONLY, 0, NULL);
	int held;

	if (fd < 0)
		return 0;
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* One record of the list: a "running" one whose lock is free was
 * interrupted (kill -9, a power cut). */
static int
list_add(cJSON *list, cJSON *rec, const char *lock_path)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "status");

	if (cJSON_IsString(st) && !strcmp(st->valuestring, "running") &&
	    !lock_held(lock_path) &&
	    !cJSON_ReplaceItemInObjectCaseSensitive(
		    rec, "status", cJSON_CreateString("interrupted"))) {
		cJSON_Delete(rec);
		return -1;
	}
	if (!cJSON_AddItemToArray(list, rec)) {
		cJSON_Delete(rec);
		return -1;
	}
	return 0;
}

static const char *
field(const cJSON *rec, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static int
newest_first(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	int c = strcmp(field(y, "updated"), field(x, "updated"));

	if (!c)
		c = strcmp(field(y, "started"), field(x, "started"));
	return c ? c : strcmp(field(y, "id"), field(x, "id"));
}

/* Calls fn with each record of agentdir/sessions (ID.json, not
 * ID.todo.json), its file name and the length of its ID; fn takes the
 * record.  A file that is no record (a cloned repository may ship one, or
 * a link) is passed over, and does not hide the rest.  0, or -1 with err
 * set: the directory cannot be read, memory ran out, or fn failed. */
static int
each_record(const char *agentdir,
	    int (*fn)(cJSON *rec, const char *name, size_t stem, void *ctx),
	    void *ctx, struct ah_error *err)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof path, "%s/sessions", agentdir);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0
			: ah_fail_errno(err, errno, "cannot read '%s'", path);
	while (rc == 0 && (e = readdir(d))) {
		size_t k = strlen(e->d_name);
		cJSON *rec;

		if (k < 6 || strcmp(e->d_name + k - 5, ".json") ||
		    (k > 10 && !strcmp(e->d_name + k - 10, ".todo.json")))
			continue;
		snprintf(path, sizeof path, "%s/sessions/%s", agentdir,
			 e->d_name);
		rec = session_read(path, err);
		if (!rec && err->code != AH_ENOMEM) {
			memset(err, 0, sizeof *err);
			continue;
		}
		rc = rec ? fn(rec, e->d_name, k - 5, ctx) : -1;
	}
	closedir(d);
	return rc;
}

/* session_list's callback: a record of sessions/, with the lock that
 * tells whether it runs (a child's lock is its own; an archived
 * top-level session's is gone, and it runs no more). */
struct list_ctx {
	cJSON *list;
	const char *agentdir;
};

static int
list_record(cJSON *rec, const char *name, size_t stem, void *ctx)
{
	const struct list_ctx *lc = ctx;
	char lock[PATH_MAX];

	snprintf(lock, sizeof lock, "%s/sessions/%.*s.lock", lc->agentdir,
		 (int)stem, name);
	return list_add(lc->list, rec, lock);
}

int
session_list(const char *agentdir, struct buf *out, struct ah_error *err)
{
	char path[PATH_MAX], lock[PATH_MAX];
	cJSON *list = cJSON_CreateArray(), *rec, **v = NULL;
	size_t n = 0, i;
	struct list_ctx lc = { list, agentdir };
	int rc = -1;

	if (!list)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	snprintf(path, sizeof path, "%s/session.json", agentdir);
	snprintf(lock, sizeof lock, "%s/lock", agentdir);
	if (access(path, F_OK) == 0) {
		if (!(rec = session_read(path, err)) ||
		    list_add(list, rec, lock) < 0)
			goto out;
	}
	if (each_record(agentdir, list_record, &lc, err) < 0)
		goto out;
	n = (size_t)cJSON_GetArraySize(list);
	v = n ? calloc(n, sizeof *v) : NULL;
	if (n && !v) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto out;
	}
	i = 0;
	for (rec = list->child; rec; rec = rec->next)
		v[i++] = rec;
	if (n) /* qsort wants an array, even of none */
		qsort(v, n, sizeof *v, newest_first);
	for (i = 0; i < n; i++) {
		char *s = cJSON_PrintUnformatted(v[i]);

		if (!s || buf_append(out, s, strlen(s)) || buf_putc(out, '\n')) {
			free(s);
			ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
			goto out;
		}
		free(s);
	}
	rc = 0;
out:
	free(v);
	cJSON_Delete(list);
	return rc;
}

/* session_children's callback: adds rec's figures to the sums when its
 * parent is the id asked. */
struct child_sums {
	const char *id;
	double *sums;
};

static int
add_child(cJSON *rec, const char *name, size_t stem, void *ctx)
{
	struct child_sums *cs = ctx;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, "parent");

	(void)name;
	(void)stem;
	if (cJSON_IsString(v) && !strcmp(v->valuestring, cs->id)) {
		cs->sums[0]++;
		v = cJSON_GetObjectItemCaseSensitive(rec, "model_calls");
		cs->sums[1] += cJSON_IsNumber(v) ? v->valuedouble : 0;
		v = cJSON_GetObjectItemCaseSensitive(rec, "tokens");
		cs->sums[2] += cJSON_IsNumber(v) ? v->valuedouble : 0;
		v = cJSON_GetObjectItemCaseSensitive(rec, "cost_usd");
		if (cJSON_IsNumber(v))
			cs->sums[3] += v->valuedouble;
		else
			cs->sums[4]++;
	}
	cJSON_Delete(rec);
	return 0;
}

int
session_children(const char *agentdir, const char *id, double sums[5],
		 struct ah_error *err)
{
	struct child_sums cs = { id, sums };

	sums[0] = sums[1] = sums[2] = sums[3] = sums[4] = 0;
	return each_record(agentdir, add_child, &cs, err);
}
