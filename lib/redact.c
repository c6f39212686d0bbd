/* redact.c: secrets out of text: the key we hold, and what looks like
 * a key or a token of the usual providers. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

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

size_t
redact_exact(char *s, const char *const *secrets)
{
	size_t k, cuts = 0;

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
			cuts++;
		}
	}
	return cuts;
}

size_t
redact(char *s, const char *const *secrets)
{
	static unsigned char starts[256];
	size_t i = 0, k, j, cuts;

	/* exact values first: the key we were given */
	cuts = redact_exact(s, secrets);
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
				cuts++;
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
				cuts++;
				continue;
			}
			i = j;
			continue;
		}
		i++;
next:
		;
	}
	return cuts;
}

/* Redacts every string of a JSON value, keys left alone. */
size_t
redact_json(cJSON *v, const char *const *secrets)
{
	size_t cuts = 0;
	cJSON *c;

	if (cJSON_IsString(v) && v->valuestring)
		cuts += redact(v->valuestring, secrets);
	for (c = v ? v->child : NULL; c; c = c->next) {
		/* A key is text the model wrote too (found by fuzzing). */
		if (c->string && !(c->type & cJSON_StringIsConst))
			cuts += redact(c->string, secrets);
		cuts += redact_json(c, secrets);
	}
	return cuts;
}

int
redact_line(const cJSON *msg, const char *const *secrets, char **out)
{
	cJSON *copy = cJSON_Duplicate(msg, 1);
	int rc = -1;

	*out = NULL;
	if (!copy)
		return -1;
	if (redact_json(copy, secrets) == 0)
		rc = 0;
	else if ((*out = cJSON_PrintUnformatted(copy)))
		rc = 1;
	cJSON_Delete(copy);
	return rc;
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
