/* self.c: the programs of the harness that a program of it runs.
 *
 * agent-run, agent-step and the rest are looked up in one place: the
 * directory of the running program (/proc/self/exe), read once, the first
 * time one is asked for.  Never through PATH: a workspace directory there
 * (an activated .venv) would let the model put an agent-step of its own
 * first, which would run outside the sandbox with the API key. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

static char bindir[PATH_MAX];

int
harness_program(const char *name, char *path, size_t size,
		struct ah_error *err)
{
	struct stat st;
	char *slash;
	ssize_t n;

	if (!bindir[0]) {
		n = readlink("/proc/self/exe", bindir, sizeof bindir - 1);
		if (n < 0)
			return ah_fail_errno(err, errno, "cannot find where %s "
					     "is installed: /proc/self/exe",
					     name);
		bindir[n] = '\0';
		slash = strrchr(bindir, '/');
		if (bindir[0] != '/' || !slash || (n > 10 &&
		    !strcmp(bindir + n - 10, " (deleted)"))) {
			bindir[0] = '\0';
			return ah_fail(err, AH_EIO, "cannot find where %s is "
				       "installed: our program was removed",
				       name);
		}
		slash[slash == bindir] = '\0';
	}
	if ((size_t)snprintf(path, size, "%s/%s", strcmp(bindir, "/") ?
			     bindir : "", name) >= size)
		return ah_fail_errno(err, ENAMETOOLONG, "cannot run '%s/%s'",
				     bindir, name);
	if (stat(path, &st) < 0)
		return ah_fail_errno(err, errno, "cannot run '%s'", path);
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return ah_fail(err, AH_EIO, "cannot run '%s': not an executable "
			       "file", path);
	return 0;
}
