/* environ.c: the environment a command gets: the allowed variables,
 * never a secret (see proc.c). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

extern char **environ;

/* --- the environment */

/* Names whose value commands get by default. */
static int
env_allowed(const char *name, size_t n)
{
	static const char *const names[] = {
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
		"NO_COLOR", "TZ", "LANG", "LANGUAGE", "TMPDIR",
	};
	size_t i;

	if (n > 3 && !strncmp(name, "LC_", 3))
		return 1;
	for (i = 0; i < sizeof names / sizeof *names; i++)
		if (strlen(names[i]) == n && !strncmp(names[i], name, n))
			return 1;
	return 0;
}

/* Is the first n bytes of name a secret's name?  Case does not matter. */
static int
env_secret(const char *name, size_t n)
{
	static const char *const parts[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE",
		"CREDENTIAL", "AUTH", "COOKIE", "PRIVATE", "SESSION",
	};
	static const char *const prefixes[] = {
		"AWS_", "GITHUB_", "GH_", "GITLAB_", "GL_", "AZURE_", "GOOGLE_",
		"GCP_", "GCLOUD_", "OPENAI_", "ANTHROPIC_", "HF_", "HUGGING",
		"SSH_", "GPG_", "GNUPG", "KRB5", "VAULT_", "DOCKER_", "NPM_",
		"AGENT_API", "DBUS_",
	};
	char up[256];
	size_t i;

	if (n >= sizeof up)
		return 1;
	for (i = 0; i < n; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[n] = '\0';
	for (i = 0; i < sizeof parts / sizeof *parts; i++)
		if (strstr(up, parts[i]))
			return 1;
	for (i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (!strncmp(up, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int
proc_env_secret(const char *name)
{
	return env_secret(name, strlen(name));
}

void
proc_env_free(char **env)
{
	size_t i;

	if (!env)
		return;
	for (i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}

char **
proc_env_build(const char *const *pass, size_t npass, struct ah_error *err)
{
	char **env, **e;
	size_t i, j, n = 0, k = 0;

	for (i = 0; i < npass; i++) {
		const char *p = pass[i];

		for (j = 0; p[j] && (p[j] == '_' || isalnum((unsigned char)p[j]));
		     j++)
			;
		if (!*p || p[j] || isdigit((unsigned char)*p)) {
			ah_fail(err, AH_EFORMAT, "'%s' is not a variable name",
				p);
			return NULL;
		}
		if (env_secret(p, j)) {
			ah_fail(err, AH_EFORMAT, "'%s' looks like a secret "
				"(its name matches the deny list), and is never "
				"passed to commands", p);
			return NULL;
		}
	}
	for (e = environ; e && *e; e++)
		n++;
	env = calloc(n + 1, sizeof *env);
	if (!env) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		return NULL;
	}
	for (e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : 0;
		int keep = 0;

		if (!eq || env_secret(*e, len))
			continue;
		keep = env_allowed(*e, len);
		for (i = 0; !keep && i < npass; i++)
			keep = strlen(pass[i]) == len &&
			       !strncmp(pass[i], *e, len);
		if (!keep)
			continue;
		env[k] = strdup(*e);
		if (!env[k++]) {
			proc_env_free(env);
			ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
			return NULL;
		}
	}
	return env;
}
