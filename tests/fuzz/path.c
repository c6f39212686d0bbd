/* fuzz target: path resolution of the file tools.  Whatever the path, the
 * file opened is inside the root: a tree with symlinks in and out of it. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "priv.h"

static struct root root;
static char outside[128], top[64];

static void
cleanup(void)
{
	static const char *const made[] = {
		"root/up", "root/abs", "root/a/in", "root/loop", "root/a/f",
	};
	static const char *const dirs[] = { "root/a/b", "root/a", "root", "out" };
	char p[256];
	size_t i;

	for (i = 0; i < sizeof made / sizeof *made; i++) {
		snprintf(p, sizeof p, "%s/%s", top, made[i]);
		unlink(p);
	}
	for (i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		snprintf(p, sizeof p, "%s/%s", top, dirs[i]);
		rmdir(p);
	}
	rmdir(top);
	root_close(&root);
}

static void
setup(void)
{
	char p[256];
	struct ah_error err;

	snprintf(top, sizeof top, "/tmp/fuzz-path.XXXXXX");
	if (!mkdtemp(top))
		abort();
	atexit(cleanup);
	snprintf(p, sizeof p, "%s/root/a/b", top);
	snprintf(outside, sizeof outside, "%s/out", top);
	if (mkdir(outside, 0755) < 0)
		abort();
	snprintf(p, sizeof p, "%s/root", top);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/root/a", top);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/root/a/b", top);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/root/a/f", top);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof p, "%s/root/up", top);
	if (symlink("..", p) < 0)
		abort();
	snprintf(p, sizeof p, "%s/root/abs", top);
	if (symlink(outside, p) < 0)
		abort();
	snprintf(p, sizeof p, "%s/root/a/in", top);
	if (symlink("../a/b", p) < 0)
		abort();
	snprintf(p, sizeof p, "%s/root/loop", top);
	if (symlink("loop", p) < 0)
		abort();
	snprintf(p, sizeof p, "%s/root", top);
	if (root_open(&root, p, &err) < 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1), *rel = NULL, *real = NULL, msg[512];
	int rc, fd;

	if (!path)
		return 0;
	if (!root.path)
		setup();
	memcpy(path, data, size);
	path[size] = '\0';
	rc = root_relative(&root, path, &rel, msg, sizeof msg);
	if (rc == 0) {
		CHECK(rel[0] != '/');
		fd = root_openat(&root, rel, O_PATH, 0);
		if (fd >= 0) {
			/* Opened: it must be inside the root. */
			CHECK(root_realpath(&root, fd, &real) == 0);
			CHECK(strncmp(real, "..", 2) != 0 && real[0] != '/');
			free(real);
			close(fd);
		}
	} else if (rc == 1) {
		CHECK(!strncmp(msg, "Error: ", 7));
	}
	free(rel);
	free(path);
	return 0;
}
