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

char *
audit_record(const cJSON *msg, size_t bytes, const char *session,
	     unsigned long long seq, const char *const *secrets)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *call, *v;
	cJSON *rec = cJSON_CreateObject(), *tools, *t, *copy;
	char when[48], *s;

	if (!rec)
		return NULL;
	utc_now(when, sizeof when);
	cJSON_AddStringToObject(rec, "time", when);
	cJSON_AddStringToObject(rec, "session", session);
	cJSON_AddNumberToObject(rec, "seq", (double)seq);
	cJSON_AddStringToObject(rec, "role", cJSON_IsString(role) ?
				role->valuestring : "");
	cJSON_AddNumberToObject(rec, "bytes", (double)bytes);
	if (cJSON_IsArray(tc) && tc->child) {
		tools = cJSON_AddArrayToObject(rec, "tools");
		cJSON_ArrayForEach(call, tc) {
			const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call,
									   "function");
			const cJSON *perm = cJSON_GetObjectItemCaseSensitive(call,
									     "permission");
			static const char *const pk[] = { "decision", "reason",
							  "rule" };
			size_t i;

			t = cJSON_CreateObject();
			cJSON_AddItemToArray(tools, t);
			cJSON_AddStringToObject(t, "id", call_id(call));
			v = cJSON_GetObjectItemCaseSensitive(fn, "name");
			cJSON_AddStringToObject(t, "name", cJSON_IsString(v) ?
						v->valuestring : "");
			for (i = 0; i < 3; i++) {
				v = cJSON_GetObjectItemCaseSensitive(perm, pk[i]);
				if (cJSON_IsString(v))
					cJSON_AddStringToObject(t, pk[i],
								v->valuestring);
			}
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
	if (cJSON_IsString(v))
		cJSON_AddStringToObject(rec, "tool_call_id", v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(msg, "request_id");
	if (cJSON_IsString(v))
		cJSON_AddStringToObject(rec, "request_id", v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(msg, "usage");
	if (cJSON_IsObject(v))
		cJSON_AddItemToObject(rec, "usage", cJSON_Duplicate(v, 1));
	copy = cJSON_Duplicate(msg, 1);
	if (!copy) {
		cJSON_Delete(rec);
		return NULL;
	}
	redact_json(copy, secrets);
	redact_json(rec, secrets);
	cJSON_AddItemToObject(rec, "message", copy);
	s = cJSON_PrintUnformatted(rec);
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
