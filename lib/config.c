/* config.c: the user's configuration file,
 * ${XDG_CONFIG_HOME:-~/.config}/agent-harness/config: KEY=value lines of
 * the documented variables, and [profile NAME] sections.  One reader for
 * agent-run (through agent-session --config), agent-step and
 * agent-compact.  See agent-harness(5). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

/* A configuration is small; a larger file is not one. */
#define CONFIG_BYTES_MAX (64 * 1024)

/* The variables a configuration may set: those of the programs'
 * ENVIRONMENT sections that choose a model and shape a run.  Nothing
 * else (AGENT_POLICY, AGENT_WORKDIR, AGENT_SESSION, ...): an unknown
 * key is refused, not skipped. */
static const char *const known[] = {
	"AGENT_MODEL", "AGENT_API", "AGENT_BASE_URL", "OPENAI_BASE_URL",
	"AGENT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
	"AGENT_TIMEOUT", "AGENT_MAX_TOKENS", "AGENT_TEMPERATURE",
	"AGENT_PARAM", "AGENT_CONTEXT_WINDOW", "AGENT_DEADLINE",
	"AGENT_MAX_CONCURRENT", "AGENT_HTTP", "AGENT_MAX_STEPS",
	"AGENT_MAX_DEPTH", "AGENT_PROJECT_BYTES", "AGENT_SANDBOX",
	"AGENT_SANDBOX_NETWORK", "AGENT_CHECKPOINTS", "AGENT_MODE",
	"AGENT_MAX_COST", "AGENT_STATE_DIR",
	NULL,
};

const char *const *
config_keys(void)
{
	return known;
}

int
config_secret_key(const char *key)
{
	size_t n = strlen(key);

	return n > 8 && !strcmp(key + n - 8, "_API_KEY");
}

static int
known_key(const char *key)
{
	size_t i;

	for (i = 0; known[i]; i++)
		if (!strcmp(known[i], key))
			return 1;
	return 0;
}

static int
name_ok(const char *s, size_t n)
{
	return n && n <= 64 && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789._-") >= n;
}

int
config_path(char *out, size_t size)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
	int n;

	/* relative values are ignored (the XDG spec): never a path that
	 * depends on the working directory */
	if (x && x[0] == '/')
		n = snprintf(out, size, "%s/agent-harness/config", x);
	else if (h && h[0] == '/')
		n = snprintf(out, size, "%s/.config/agent-harness/config", h);
	else
		return -1;
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/* The file and its directory are the user's, and no one else can
 * write them: else they are not ours to take settings (a key, the
 * endpoint the conversation goes to) from. */
static int
trusted(const char *path, const struct stat *st, const char *what,
	struct ah_error *err)
{
	if (st->st_uid != geteuid())
		return ah_fail(err, AH_EFORMAT, "%s '%s' is not yours (its "
			       "owner is uid %lu): refusing to read it", what,
			       path, (unsigned long)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return ah_fail(err, AH_EFORMAT, "%s '%s' can be written by "
			       "others (mode %04o): refusing to read it "
			       "(chmod go-w '%s')", what, path,
			       (unsigned)(st->st_mode & 07777), path);
	return 0;
}

static int
add(struct config *c, const char *key, size_t kn, const char *val,
    size_t vn, unsigned line, struct ah_error *err)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strncmp(c->key[i], key, kn) && !c->key[i][kn]) {
			/* the profile's value over the file's top */
			free(c->value[i]);
			c->value[i] = strndup(val, vn);
			c->line[i] = line;
			return c->value[i] ? 0
				: ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		}
	if (c->n == sizeof c->key / sizeof *c->key)
		return ah_fail(err, AH_EFORMAT, "'%s': too many keys", c->path);
	c->key[c->n] = strndup(key, kn);
	c->value[c->n] = strndup(val, vn);
	c->line[c->n] = line;
	c->n++;
	if (!c->key[c->n - 1] || !c->value[c->n - 1])
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	return 0;
}

static const char *
trim(const char *s, const char *end, const char **e)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\r'))
		end--;
	*e = end;
	return s;
}

/* Parses data[0..len): the top's keys, then the chosen profile's over
 * them.  Every line is checked, those of other profiles too. */
static int
parse(struct config *c, const char *data, size_t len, const char *profile,
      struct ah_error *err)
{
	/* which keys a section has set already: none twice */
	char seen[sizeof known / sizeof *known];
	const char *p = data, *end = data + len, *nl, *s, *e, *eq, *ke;
	unsigned line = 0;
	int in = 1, found = 0; /* the top counts, a profile when chosen */
	size_t k;

	memset(seen, 0, sizeof seen);
	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		line++;
		s = trim(p, nl, &e);
		if (s == e || *s == '#')
			continue;
		if (*s == '[') {
			const char *n = s + 9;

			if ((size_t)(e - s) < 11 || strncmp(s, "[profile ", 9) ||
			    e[-1] != ']' || !name_ok(n, (size_t)(e - 1 - n)))
				return ah_fail(err, AH_EFORMAT, "'%s': line %u: "
					       "not a [profile NAME] line (NAME "
					       "of letters, digits, '.', '_', "
					       "'-')", c->path, line);
			in = profile && strlen(profile) == (size_t)(e - 1 - n) &&
			     !strncmp(profile, n, (size_t)(e - 1 - n));
			found |= in;
			memset(seen, 0, sizeof seen);
			continue;
		}
		eq = memchr(s, '=', (size_t)(e - s));
		if (!eq)
			return ah_fail(err, AH_EFORMAT, "'%s': line %u: not a "
				       "KEY=value line", c->path, line);
		s = trim(s, eq, &ke);
		for (k = 0; known[k]; k++)
			if (strlen(known[k]) == (size_t)(ke - s) &&
			    !strncmp(known[k], s, (size_t)(ke - s)))
				break;
		if (!known[k])
			return ah_fail(err, AH_EFORMAT, "'%s': line %u: unknown "
				       "key '%.*s' (agent-harness(5) lists "
				       "the keys)", c->path, line,
				       (int)(ke - s > 64 ? 64 : ke - s), s);
		if (seen[k])
			return ah_fail(err, AH_EFORMAT, "'%s': line %u: %s is "
				       "set twice", c->path, line, known[k]);
		seen[k] = 1;
		if (memchr(eq, '\0', (size_t)(e - eq)))
			return ah_fail(err, AH_EFORMAT, "'%s': line %u: a NUL "
				       "byte", c->path, line);
		if (!in)
			continue;
		eq = trim(eq + 1, e, &e);
		if (add(c, s, (size_t)(ke - s), eq, (size_t)(e - eq), line,
			err) < 0)
			return -1;
	}
	if (profile && !found)
		return ah_fail(err, AH_EFORMAT, "no profile '%s' in '%s'",
			       profile, c->path);
	return 0;
}

int
config_read(struct config *c, const char *profile, const char *workdir,
	    struct ah_error *err)
{
	char *data = NULL, dir[PATH_MAX], real[PATH_MAX], wd[PATH_MAX];
	struct stat st;
	size_t len;
	int fd, rc = -1;

	memset(c, 0, sizeof *c);
	if (profile && !*profile)
		profile = NULL;
	if (profile && !name_ok(profile, strlen(profile)))
		return ah_fail(err, AH_EFORMAT, "'%s' is not a profile name "
			       "(letters, digits, '.', '_', '-')", profile);
	c->profile = profile;
	if (config_path(c->path, sizeof c->path) < 0) {
		if (profile)
			return ah_fail(err, AH_EFORMAT, "no configuration file "
				       "for profile '%s': neither "
				       "XDG_CONFIG_HOME nor HOME is an "
				       "absolute path", profile);
		return 0;
	}
	fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT && !profile)
			return 0;
		if (errno == ENOENT)
			return ah_fail(err, AH_EFORMAT, "no profile '%s': there "
				       "is no '%s'", profile, c->path);
		return ah_fail_errno(err, errno, "cannot open '%s'", c->path);
	}
	if (fstat(fd, &st) < 0) {
		ah_fail_errno(err, errno, "cannot read '%s'", c->path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ah_fail(err, AH_EFORMAT, "'%s' is not a regular file", c->path);
		goto out;
	}
	/* the file, and the directory that holds it (whoever can write
	 * that can put another file in its place) */
	snprintf(dir, sizeof dir, "%s", c->path);
	*strrchr(dir, '/') = '\0';
	if (trusted(c->path, &st, "the configuration file", err) < 0)
		goto out;
	if (stat(dir, &st) < 0) {
		ah_fail_errno(err, errno, "cannot read '%s'", dir);
		goto out;
	}
	if (trusted(dir, &st, "the directory of the configuration,", err) < 0)
		goto out;
	/* never the workspace's: the model's commands could write it */
	if (realpath(c->path, real) &&
	    realpath(workdir && *workdir ? workdir : ".", wd) &&
	    path_within(real, wd)) {
		c->in_workspace = 1;
		rc = 0;
		goto out;
	}
	if (fd_read(fd, c->path, CONFIG_BYTES_MAX, &data, &len, err) < 0)
		goto out;
	rc = parse(c, data, len, profile, err);
	if (rc == 0)
		c->found = 1;
out:
	free(data);
	close(fd);
	if (rc < 0)
		config_free(c);
	return rc;
}

const char *
config_get(const struct config *c, const char *key)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->key[i], key))
			return c->value[i];
	return NULL;
}

int
config_apply(const struct config *c, struct ah_error *err)
{
	const char *v;
	size_t i;

	for (i = 0; i < c->n; i++) {
		v = getenv(c->key[i]);
		if (v && *v)
			continue; /* the environment over the file */
		if (setenv(c->key[i], c->value[i], 1) < 0)
			return ah_fail_errno(err, errno, "cannot set %s",
					     c->key[i]);
	}
	return 0;
}

void
config_free(struct config *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->key[i]);
		free(c->value[i]);
	}
	c->n = 0;
}

int
config_known(const char *key)
{
	return known_key(key);
}
