/* audit.c: audit records, secrets redacted, appended whole. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

static void
utc_now(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

/* The audit fields of one call: id, name, and its permission's. */
static int
add_tool(cJSON *tools, const cJSON *call)
{
	const cJSON *perm = cJSON_GetObjectItemCaseSensitive(call, "permission");
	static const char *const pk[] = { "decision", "reason", "rule" };
	cJSON *t = cJSON_CreateObject();
	const cJSON *v;
	size_t i;

	if (!t || !cJSON_AddItemToArray(tools, t)) {
		cJSON_Delete(t);
		return -1;
	}
	if (!cJSON_AddStringToObject(t, "id", call_id(call)) ||
	    !cJSON_AddStringToObject(t, "name", call_name(call)))
		return -1;
	for (i = 0; i < 3; i++) {
		v = cJSON_GetObjectItemCaseSensitive(perm, pk[i]);
		if (cJSON_IsString(v) &&
		    !cJSON_AddStringToObject(t, pk[i], v->valuestring))
			return -1;
	}
	return 0;
}

/* Copies the string member key of msg, if it has one, to rec. */
static int
copy_string(cJSON *rec, const cJSON *msg, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, key);

	return !cJSON_IsString(v) ||
	       cJSON_AddStringToObject(rec, key, v->valuestring) ? 0 : -1;
}

char *
audit_record(const cJSON *msg, size_t bytes, const char *session,
	     unsigned long long seq, const char *const *secrets)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(msg, "usage");
	const cJSON *call;
	cJSON *rec = cJSON_CreateObject(), *tools, *copy = NULL;
	char when[48], *s = NULL;

	utc_now(when, sizeof when);
	if (!rec || !cJSON_AddStringToObject(rec, "time", when) ||
	    !cJSON_AddStringToObject(rec, "session", session) ||
	    !cJSON_AddNumberToObject(rec, "seq", (double)seq) ||
	    !cJSON_AddStringToObject(rec, "role", cJSON_IsString(role) ?
				     role->valuestring : "") ||
	    !cJSON_AddNumberToObject(rec, "bytes", (double)bytes))
		goto out;
	if (cJSON_IsArray(tc) && tc->child) {
		if (!(tools = cJSON_AddArrayToObject(rec, "tools")))
			goto out;
		cJSON_ArrayForEach(call, tc)
			if (add_tool(tools, call) < 0)
				goto out;
	}
	if (copy_string(rec, msg, "tool_call_id") < 0 ||
	    copy_string(rec, msg, "request_id") < 0)
		goto out;
	if (cJSON_IsObject(usage)) {
		copy = cJSON_Duplicate(usage, 1);
		if (!copy || !cJSON_AddItemToObject(rec, "usage", copy))
			goto out;
		copy = NULL;
	}
	copy = cJSON_Duplicate(msg, 1);
	if (!copy)
		goto out;
	redact_json(copy, secrets);
	redact_json(rec, secrets);
	if (!cJSON_AddItemToObject(rec, "message", copy))
		goto out;
	copy = NULL;
	s = cJSON_PrintUnformatted(rec);
out:
	cJSON_Delete(copy); /* one that did not get into rec */
	cJSON_Delete(rec);
	return s;
}

int
audit_append(int fd, const char *rec, size_t len, int sync, size_t *cut,
	     struct ah_error *err)
{
	const char *p = rec;
	size_t left = len;
	ssize_t n;
	int rc = -1;

	/* O_APPEND puts each write at the end; the lock keeps a record that
	 * needed two writes (a short write) from being split by another. */
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock");
	/* Under the lock no one else is writing: a line without its end is
	 * what a writer killed in the middle left. */
	if (jsonl_repair_tail(fd, cut, err) < 0)
		goto out;
	while (left) {
		n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ah_fail_errno(err, errno, "cannot write");
			goto out;
		}
		p += n;
		left -= (size_t)n;
	}
	if (sync && fdatasync(fd) < 0) {
		ah_fail_errno(err, errno, "cannot sync");
		goto out;
	}
	rc = 0;
out:
	flock(fd, LOCK_UN);
	return rc;
}
