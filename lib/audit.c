/* audit.c: audit records, secrets redacted, appended whole. */
#include <ctype.h>
#include <strings.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

static const char mark[] = "[REDACTED]";

/* Prefixes of the usual providers' keys and tokens, and how many token
 * characters must follow for it to be one. */
static const struct {
	const char *prefix;
	size_t min;
	int upper_digits; /* AWS: only A-Z and 0-9 */
} tokens[] = {
	{ "sk-", 16, 0 },        /* OpenAI (sk-proj-), Anthropic (sk-ant-), DeepSeek */
	{ "ghp_", 30, 0 }, { "gho_", 30, 0 }, { "ghu_", 30, 0 },
	{ "ghs_", 30, 0 }, { "ghr_", 30, 0 },
	{ "github_pat_", 20, 0 },
	{ "glpat-", 20, 0 },     /* GitLab */
	{ "xoxb-", 10, 0 }, { "xoxp-", 10, 0 }, { "xoxa-", 10, 0 },
	{ "xoxr-", 10, 0 }, { "xoxs-", 10, 0 }, /* Slack */
	{ "AKIA", 16, 1 }, { "ASIA", 16, 1 },   /* AWS access keys */
	{ "AIza", 30, 0 },       /* Google */
	{ "hf_", 30, 0 },        /* Hugging Face */
	{ "r8_", 30, 0 },        /* Replicate */
	{ "gsk_", 30, 0 },       /* Groq */
};

static int
tokch(int c, int strict)
{
	if (strict)
		return isupper(c) || isdigit(c);
	return isalnum(c) || c == '_' || c == '-';
}

/* After "Bearer " or "Authorization:": the credential runs to white
 * space or a quote. */
static int
credch(int c)
{
	return c > ' ' && c != '"' && c != '\'' && c != ',' && c != ';' &&
	       c != '}' && c != ']' && c != 0x7f;
}

/* Replaces s[at..at+len) with the mark; s only shrinks or stays. */
static size_t
cut(char *s, size_t at, size_t len)
{
	size_t m = sizeof mark - 1, rest = strlen(s + at + len);

	if (len < m)
		return at + len; /* too short to be a secret worth the mark */
	memcpy(s + at, mark, m);
	memmove(s + at + m, s + at + len, rest + 1);
	return at + m;
}

static int
word_start(const char *s, size_t i)
{
	return i == 0 || !tokch((unsigned char)s[i - 1], 0);
}

void
redact_exact(char *s, const char *const *secrets)
{
	size_t k;

	for (k = 0; secrets && secrets[k]; k++) {
		size_t n = strlen(secrets[k]);
		char *p;

		if (n < 8)
			continue;
		while ((p = strstr(s, secrets[k]))) {
			/* a key shorter than the mark is starred out: cut()
			 * would leave it, and this loop find it for ever */
			if (n < sizeof mark - 1)
				memset(p, '*', n);
			else
				cut(s, (size_t)(p - s), n);
		}
	}
}

void
redact(char *s, const char *const *secrets)
{
	static unsigned char starts[256];
	size_t i = 0, k, j;

	/* exact values first: the key we were given */
	redact_exact(s, secrets);
	/* Most bytes start nothing: look at the others only. */
	if (!starts['B']) {
		for (k = 0; k < sizeof tokens / sizeof *tokens; k++)
			starts[(unsigned char)tokens[k].prefix[0]] = 1;
		starts['B'] = starts['b'] = starts['A'] = starts['a'] = 1;
		starts['X'] = starts['x'] = 1;
	}
	while (s[i]) {
		if (!starts[(unsigned char)s[i]]) {
			i++;
			continue;
		}
		/* every prefix starts a word; compare the first byte
		 * before the rest */
		for (k = 0; word_start(s, i) &&
			    k < sizeof tokens / sizeof *tokens; k++) {
			size_t pl;

			if (tokens[k].prefix[0] != s[i])
				continue;
			pl = strlen(tokens[k].prefix);
			if (strncmp(s + i, tokens[k].prefix, pl))
				continue;
			for (j = i + pl; s[j] && tokch((unsigned char)s[j],
						       tokens[k].upper_digits); j++)
				;
			if (j - i - pl >= tokens[k].min) {
				i = cut(s, i, j - i);
				goto next;
			}
		}
		if (((s[i] | 0x20) == 'b' || (s[i] | 0x20) == 'a' ||
		     (s[i] | 0x20) == 'x') &&
		    (!strncasecmp(s + i, "bearer ", 7) ||
		    !strncasecmp(s + i, "authorization:", 14) ||
		    !strncasecmp(s + i, "x-api-key:", 10) ||
		    !strncasecmp(s + i, "api-key:", 8))) {
			j = i + (s[i] == 'b' || s[i] == 'B' ? 7 :
				 (size_t)(strchr(s + i, ':') - (s + i)) + 1);
			while (s[j] == ' ')
				j++;
			/* "Authorization: Bearer x": the scheme stays */
			if (!strncasecmp(s + j, "bearer ", 7) ||
			    !strncasecmp(s + j, "basic ", 6) ||
			    !strncasecmp(s + j, "token ", 6)) {
				i = j;
				continue;
			}
			for (k = j; s[k] && credch((unsigned char)s[k]); k++)
				;
			if (k - j >= 8) {
				i = cut(s, j, k - j);
				continue;
			}
			i = j;
			continue;
		}
		i++;
next:
		;
	}
}

/* Redacts every string of a JSON value, keys left alone. */
void
redact_json(cJSON *v, const char *const *secrets)
{
	cJSON *c;

	if (cJSON_IsString(v) && v->valuestring)
		redact(v->valuestring, secrets);
	for (c = v ? v->child : NULL; c; c = c->next) {
		/* A key is text the model wrote too (found by fuzzing). */
		if (c->string && !(c->type & cJSON_StringIsConst))
			redact(c->string, secrets);
		redact_json(c, secrets);
	}
}

void
redact_json_exact(cJSON *v, const char *const *secrets)
{
	cJSON *c;

	if (cJSON_IsString(v) && v->valuestring)
		redact_exact(v->valuestring, secrets);
	for (c = v ? v->child : NULL; c; c = c->next) {
		if (c->string && !(c->type & cJSON_StringIsConst))
			redact_exact(c->string, secrets);
		redact_json_exact(c, secrets);
	}
}

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
