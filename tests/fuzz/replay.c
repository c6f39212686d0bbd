/* replay: runs a fuzz target on files and directories of inputs, without
 * libFuzzer, so that the kept corpus is a regression test on every build. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *data = NULL;
	size_t n = 0, cap = 0, got;

	if (!fp) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			unsigned char *p = realloc(data, cap = cap ? 2 * cap : 4096);

			if (!p) {
				fprintf(stderr, "replay: out of memory\n");
				free(data);
				fclose(fp);
				return -1;
			}
			data = p;
		}
		got = fread(data + n, 1, cap - n, fp);
		if (!got)
			break;
		n += got;
	}
	fclose(fp);
	LLVMFuzzerTestOneInput(data, n);
	free(data);
	return 0;
}

static int
run_path(const char *path, int *count)
{
	struct dirent *e;
	struct stat st;
	char sub[4096];
	DIR *d;
	int rc = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: cannot stat '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		++*count;
		return run_file(path);
	}
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			if (run_path(sub, count) < 0)
				rc = -1;
		}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	int i, count = 0, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: replay FILE|DIR...\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &count) < 0)
			rc = 1;
	if (!count) {
		fprintf(stderr, "replay: no inputs in %s\n", argv[1]);
		return 1;
	}
	printf("%s: %d inputs replayed\n", argv[0], count);
	return rc;
}
