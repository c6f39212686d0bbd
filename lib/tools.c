/* tools.c: the tools the model can call (the seed's TOOLS and
 * TOOL_HANDLERS), each answering with one text. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

#define READ_MAX_BYTES (64u << 20) /* read_file and edit_file refuse more */
#define READ_DEFAULT_LINES 2000
#define LIST_MAX 1000

const char *
tool_schema(int with_task)
{
	static char *both;
	const char *end;
	size_t n, k;

	if (!with_task)
		return data_tools;
	if (both)
		return both;
	/* share/tools.json is an array: the task tool (share/task.json)
	 * goes in before its closing bracket */
	end = strrchr(data_tools, ']');
	if (!end)
		return data_tools;
	n = (size_t)(end - data_tools);
	while (n && (data_tools[n - 1] == '\n' || data_tools[n - 1] == ' '))
		n--;
	k = strlen(data_task);
	while (k && data_task[k - 1] == '\n')
		k--;
	both = malloc(n + k + 6);
	if (!both)
		return NULL;
	memcpy(both, data_tools, n);
	memcpy(both + n, ",\n", 2);
	memcpy(both + n + 2, data_task, k);
	memcpy(both + n + 2 + k, "\n]\n", 4);
	return both;
}

/* Every tool's definition: share/tools.json, the task tool and
 * share/moretools.json, parsed once; NULL when out of memory. */
static const cJSON *
all_tools(void)
{
	static cJSON *all;
	const char *both;
	cJSON *more, *one;

	if (all)
		return all;
	both = tool_schema(1);
	all = both ? cJSON_Parse(both) : NULL;
	more = cJSON_Parse(data_moretools);
	if (!cJSON_IsArray(all) || !cJSON_IsArray(more)) {
		cJSON_Delete(all);
		cJSON_Delete(more);
		return all = NULL;
	}
	while ((one = cJSON_DetachItemFromArray(more, 0)))
		cJSON_AddItemToArray(all, one);
	cJSON_Delete(more);
	return all;
}

/* The definition of the tool named name, or NULL. */
static const cJSON *
tool_def(const char *tool)
{
	const cJSON *t, *fn, *name;

	cJSON_ArrayForEach(t, all_tools()) {
		fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		if (cJSON_IsString(name) && !strcmp(name->valuestring, tool))
			return t;
	}
	return NULL;
}

/* The parameters of tool in the schema, or NULL when it has none. */
static const cJSON *
tool_params(const char *tool)
{
	return cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(tool_def(tool), "function"),
		"parameters");
}

/* Is name one of the names of list (separated by commas or blanks)? */
static int
in_list(const char *list, const char *name)
{
	size_t k = strlen(name), n;
	const char *p = list;

	while (*p) {
		p += strspn(p, ", \t\n");
		n = strcspn(p, ", \t\n");
		if (n == k && !strncmp(p, name, k))
			return 1;
		p += n;
	}
	return 0;
}

int
tool_is_offered(const char *list, const char *name)
{
	if (!list || !*list)
		return strcmp(name, "apply_patch") != 0;
	return in_list(list, name);
}

int
tool_schema_select(const char *list, int with_task, int with_skill,
		   char **out, char *msg, size_t size)
{
	const char *p = list, *base = tool_schema(with_task);
	const cJSON *def;
	cJSON *arr;
	char name[64];
	size_t n;

	*out = NULL;
	if (!base || !all_tools())
		return -1;
	if ((!list || !*list) && !with_skill)
		return (*out = strdup(base)) ? 0 : -1;
	arr = (!list || !*list) ? cJSON_Parse(base) : cJSON_CreateArray();
	if (!arr)
		return -1;
	if (!list || !*list) {
		/* the default set, and the skill tool */
		if (!cJSON_AddItemToArray(arr, cJSON_Duplicate(tool_def("skill"),
							       1)))
			goto nomem;
		p = "";
	}
	while (*p) {
		p += strspn(p, ", \t\n");
		n = strcspn(p, ", \t\n");
		if (!n)
			break;
		snprintf(name, sizeof name, "%.*s", n < sizeof name ? (int)n
			 : (int)sizeof name - 1, p);
		def = n < sizeof name ? tool_def(name) : NULL;
		if (!def) {
			snprintf(msg, size, "unknown tool '%.*s' (the tools are "
				 "bash, list_dir, read_file, write_file, "
				 "edit_file, grep, glob, run_todo_write, task, "
				 "apply_patch and skill)", n > 100 ? 100 : (int)n,
				 p);
			cJSON_Delete(arr);
			return 1;
		}
		p += n;
		/* task only where subagents may start; each tool once */
		if ((!strcmp(name, "task") && !with_task) ||
		    in_list(p, name))
			continue;
		if (!cJSON_AddItemToArray(arr, cJSON_Duplicate(def, 1)))
			goto nomem;
	}
	*out = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	return *out ? 0 : -1;
nomem:
	cJSON_Delete(arr);
	return -1;
}

/* Does v have the JSON Schema type named type? */
static int
has_type(const cJSON *v, const char *type)
{
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "number"))
		return cJSON_IsNumber(v);
	if (!strcmp(type, "integer"))
		return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
	if (!strcmp(type, "array"))
		return cJSON_IsArray(v);
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	return 0;
}

int
tool_args_check(const char *tool, const cJSON *args, int all, char **why)
{
	const cJSON *params = tool_params(tool), *props, *req, *a, *p, *type;
	struct buf names = BUF_INIT(0);
	char *key;
	int rc = 0;

	*why = NULL;
	if (!params)
		return all_tools() ? 0 : -1;
	if (!cJSON_IsObject(args))
		return asprintf(why, "the arguments of %s must be a JSON object",
				tool) < 0 ? -1 : 1;
	props = cJSON_GetObjectItemCaseSensitive(params, "properties");
	req = cJSON_GetObjectItemCaseSensitive(params, "required");
	cJSON_ArrayForEach(a, args) {
		p = cJSON_GetObjectItemCaseSensitive(props, a->string);
		if (!p) {
			/* which keys there are, to say so */
			cJSON_ArrayForEach(p, props)
				if (buf_printf(&names, "%s%s", names.len ? ", "
					       : "", p->string) < 0)
					goto nomem;
			key = utf8_for_terminal(a->string, strlen(a->string),
						TERM_ASCII, NULL);
			if (!key)
				goto nomem;
			rc = asprintf(why, "%s takes no argument '%.200s' (it "
				      "takes: %s; nothing else)", tool, key,
				      names.len ? names.data : "none") < 0
				     ? -1 : 1;
			free(key);
			goto out;
		}
		type = cJSON_GetObjectItemCaseSensitive(p, "type");
		if (all && !cJSON_IsNull(a) && cJSON_IsString(type) &&
		    !has_type(a, type->valuestring)) {
			rc = asprintf(why, "%s: '%s' must be %s %s", tool,
				      a->string, strchr("aeiou",
				      type->valuestring[0]) ? "an" : "a",
				      type->valuestring) < 0 ? -1 : 1;
			goto out;
		}
	}
	cJSON_ArrayForEach(p, req) {
		if (!all || !cJSON_IsString(p))
			continue;
		a = cJSON_GetObjectItemCaseSensitive(args, p->valuestring);
		if (!a || cJSON_IsNull(a)) {
			rc = asprintf(why, "%s needs '%s'", tool,
				      p->valuestring) < 0 ? -1 : 1;
			goto out;
		}
	}
	goto out;
nomem:
	rc = -1;
out:
	if (rc < 0)
		*why = NULL;
	buf_free(&names);
	return rc;
}

/* Sets *res to a printf-formatted text and returns rc. */
static int
answer(char **res, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
answer(char **res, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(res, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*res = NULL;
		return -1;
	}
	return rc;
}

/* The answer to a failed system call on the path the model gave. */
static int
path_error(char **res, const char *tool, const char *path, int e)
{
	if (e == EXDEV)
		return answer(res, TOOL_ERROR, "Error: %s: path '%s' leads "
			      "outside the working directory.", tool, path);
	if (e == ENOENT)
		return answer(res, TOOL_ERROR, "Error: %s: no such file or "
			      "directory: '%s'", tool, path);
	return answer(res, TOOL_ERROR, "Error: %s: '%s': %s", tool, path,
		      strerror(e));
}

/* Arguments: a string member, required or not. */
static int
arg_string(const cJSON *args, const char *tool, const char *key, int need,
	   const char **out, char **res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (need)
			return answer(res, TOOL_ERROR, "Error: %s needs '%s' "
				      "(a string).", tool, key);
		return 0;
	}
	if (!cJSON_IsString(v))
		return answer(res, TOOL_ERROR, "Error: %s: '%s' must be a "
			      "string.", tool, key);
	*out = v->valuestring;
	return 0;
}

/* A whole number >= min, or def when absent. */
static int
arg_count(const cJSON *args, const char *tool, const char *key, long def,
	  long min, long *out, char **res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

	*out = def;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (double)min || v->valuedouble > 1e12)
		return answer(res, TOOL_ERROR, "Error: %s: '%s' must be a whole "
			      "number of at least %ld.", tool, key, min);
	*out = (long)v->valuedouble;
	return 0;
}

static int
bounded(const struct tool_ctx *ctx, struct buf *b, char **res)
{
	size_t n;

	*res = text_bound(b->data ? b->data : "", b->len, ctx->max_output, &n);
	return *res ? TOOL_OK : -1;
}

/* --- bash */

/* Fills o to run a command line as bash runs its commands: the shell,
 * environment, grace, limits, sandbox and helper of ctx, the limits and
 * the sandbox prepared.  0, or the answer to the model (TOOL_ERROR: the
 * tool's WHAT, "command" or "search", was not run), or -1. */
static int
run_opts(const struct tool_ctx *ctx, const char *tool, const char *what,
	 struct proc_opts *o, char **res)
{
	struct ah_error err = { 0 };

	o->shell = ctx->shell;
	o->term_grace = 2;
	o->grace = ctx->grace;
	o->interrupted = ctx->interrupted;
	o->env = ctx->env;
	if (ctx->limits) {
		if (proc_limits_prepare(ctx->limits, &err) < 0)
			return answer(res, TOOL_ERROR, "Error: %s: %s; the %s "
				      "was not run", tool, err.msg, what);
		o->limits = ctx->limits;
	}
	if (ctx->sandbox && ctx->sandbox->mode != SANDBOX_OFF) {
		if (sandbox_prepare(ctx->sandbox, &err) < 0)
			return answer(res, TOOL_ERROR, "Error: %s: cannot set "
				      "up the sandbox: %s; the %s was not run",
				      tool, err.msg, what);
		o->sandbox = ctx->sandbox;
		o->helper = ctx->helper;
	}
	return 0;
}

static int
tool_bash(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct proc_opts o = { 0 };
	struct proc_result r;
	struct ah_error err = { 0 };
	struct buf b = BUF_INIT(0);
	const cJSON *t;
	const char *cmd;
	int rc;

	if (arg_string(args, "bash", "command", 1, &cmd, res))
		return TOOL_ERROR;
	o.timeout = ctx->timeout;
	t = cJSON_GetObjectItemCaseSensitive(args, "timeout");
	if (t && !cJSON_IsNull(t)) {
		if (!cJSON_IsNumber(t) || !(t->valuedouble > 0))
			return answer(res, TOOL_ERROR, "Error: bash: 'timeout' "
				      "must be a number of seconds above 0.");
		o.timeout = t->valuedouble;
	}
	if (o.timeout > ctx->max_timeout)
		o.timeout = ctx->max_timeout;
	o.command = cmd;
	o.max_output = ctx->max_output;
	rc = run_opts(ctx, "bash", "command", &o, res);
	if (rc)
		return rc;
	if (proc_run(&o, &r, &err) < 0)
		return answer(res, TOOL_ERROR, "Error: bash: %s", err.msg);
	/* A limit reached is the call's error, its output kept below. */
	rc = 0;
	if (r.limit & PROC_LIMIT_PROCS)
		rc = buf_printf(&b, "Error: bash: the command went over the "
				"limit of %ld processes (tool-exec "
				"--max-procs); it and every process it "
				"started were killed.\n", ctx->limits->procs);
	else if (r.limit & PROC_LIMIT_MEMORY)
		rc = buf_printf(&b, "Error: bash: the command went over the "
				"memory limit of %lld bytes (tool-exec "
				"--max-memory); a process of it was killed.\n",
				ctx->limits->memory);
	else if (r.limit & PROC_LIMIT_FSIZE)
		rc = buf_printf(&b, "Error: bash: the command went over the "
				"file size limit of %lld bytes (tool-exec "
				"--max-file-size); the writer was killed.\n",
				ctx->limits->file_size);
	if (!rc)
		rc = buf_append(&b, r.output, r.len);
	if (!rc && !r.len && !r.timed_out && !r.interrupted &&
	    WIFEXITED(r.status) && !WEXITSTATUS(r.status))
		rc = buf_printf(&b, "(no output)");
	if (!rc && b.len && b.data[b.len - 1] != '\n' &&
	    (r.timed_out || r.interrupted || r.status))
		rc = buf_putc(&b, '\n');
	if (rc)
		;
	else if (r.interrupted)
		rc = buf_printf(&b, "[interrupted by signal %d: killed]",
				r.interrupted);
	else if (r.timed_out)
		rc = buf_printf(&b, "[timed out after %g s: killed]", o.timeout);
	else if (WIFSIGNALED(r.status))
		rc = buf_printf(&b, "[killed by signal %d]",
				WTERMSIG(r.status));
	else if (WEXITSTATUS(r.status))
		rc = buf_printf(&b, "[exit code: %d]", WEXITSTATUS(r.status));
	if (!rc && r.left_running && !r.timed_out && !r.interrupted)
		rc = buf_printf(&b, "%s[background processes still holding "
				"the output were killed]",
				b.len && b.data[b.len - 1] != '\n' ? "\n" : "");
	/* Every process of the command is gone: a .git it made goes too. */
	if (!rc && o.sandbox)
		rc = sandbox_check_git(ctx->sandbox, &b);
	free(r.output);
	if (rc) {
		buf_free(&b);
		return -1;
	}
	*res = buf_detach(&b, NULL);
	if (!*res)
		return -1;
	return r.interrupted ? TOOL_INTERRUPTED : r.limit ? TOOL_ERROR
							  : TOOL_OK;
}

/* The options every sandboxed bash call shares, the limits and the
 * sandbox prepared: 1, or 0 without a sandbox or a helper, or -1. */
static int
sandboxed_opts(const struct tool_ctx *ctx, struct proc_opts *o,
	       struct ah_error *err)
{
	if (!ctx->sandbox || ctx->sandbox->mode == SANDBOX_OFF || !ctx->helper)
		return 0;
	o->shell = ctx->shell;
	o->env = ctx->env;
	o->sandbox = ctx->sandbox;
	o->limits = ctx->limits;
	o->helper = ctx->helper;
	if ((ctx->limits && proc_limits_prepare(ctx->limits, err) < 0) ||
	    sandbox_prepare(ctx->sandbox, err) < 0)
		return -1;
	return 1;
}

int
tool_warm(const struct tool_ctx *ctx, struct ah_error *err)
{
	struct proc_opts o = { 0 };
	int r = sandboxed_opts(ctx, &o, err);

	return r <= 0 ? r : proc_helper_start(ctx->helper, &o, err);
}

int
tool_prestart(const struct tool_ctx *ctx, struct ah_error *err)
{
	struct proc_opts o = { 0 };
	int r = sandboxed_opts(ctx, &o, err);

	return r <= 0 ? r : proc_prestart(&o, err);
}

/* --- list_dir */

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
tool_list_dir(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct buf b = BUF_INIT(0);
	char msg[512], *rel = NULL, **names = NULL, **more;
	const char *path;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	int fd, rc = -1;

	if (arg_string(args, "list_dir", "path", 0, &path, res))
		return TOOL_ERROR;
	if (!path)
		path = ".";
	rc = root_relative(&ctx->root, path, &rel, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "%s", msg);
	fd = root_openat(&ctx->root, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		rc = path_error(res, "list_dir", path, errno);
		goto out;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		rc = path_error(res, "list_dir", path, errno);
		goto out;
	}
	rc = -1;
	while ((de = readdir(d))) {
		int isdir;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		isdir = de->d_type == DT_DIR ||
			(de->d_type == DT_UNKNOWN &&
			 !fstatat(dirfd(d), de->d_name, &st,
				  AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode));
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			more = realloc(names, cap * sizeof *names);
			if (!more)
				goto out;
			names = more;
		}
		if (asprintf(&names[n], "%s%s", de->d_name, isdir ? "/" : "")
		    < 0)
			goto out;
		n++;
	}
	if (n)
		qsort(names, n, sizeof *names, cmp_names);
	for (i = 0; i < n && i < LIST_MAX; i++)
		if (buf_printf(&b, "%s%s", i ? "\n" : "", names[i]) < 0)
			goto out;
	if (n > LIST_MAX && buf_printf(&b, "\n[... and %zu more entries]",
				       n - LIST_MAX) < 0)
		goto out;
	if (!n && buf_printf(&b, "(empty directory)") < 0)
		goto out;
	rc = bounded(ctx, &b, res);
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d)
		closedir(d);
	buf_free(&b);
	free(rel);
	return rc;
}

/* --- reading files */

/* Reads a regular file the model named; *rel receives its real path
 * relative to the root (symlinks inside the root followed). */
static int
load(const struct tool_ctx *ctx, const char *tool, const char *path,
     char **data, size_t *len, char **real, char **res)
{
	struct ah_error err = { 0 };
	char msg[512], *rel = NULL;
	struct stat st;
	int fd, rc;

	*data = NULL;
	*real = NULL;
	rc = root_relative(&ctx->root, path, &rel, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "%s", msg);
	fd = root_openat(&ctx->root, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	free(rel);
	if (fd < 0)
		return path_error(res, tool, path, errno);
	if (fstat(fd, &st) < 0) {
		rc = path_error(res, tool, path, errno);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = answer(res, TOOL_ERROR, "Error: %s: '%s' is a directory; "
			    "list it with list_dir.", tool, path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = answer(res, TOOL_ERROR, "Error: %s: '%s' is not a regular "
			    "file.", tool, path);
		goto out;
	}
	if (st.st_size > (off_t)READ_MAX_BYTES) {
		rc = answer(res, TOOL_ERROR, "Error: %s: '%s' is %lld bytes, "
			    "more than %u.", tool, path, (long long)st.st_size,
			    READ_MAX_BYTES);
		goto out;
	}
	if (root_realpath(&ctx->root, fd, real) < 0) {
		rc = path_error(res, tool, path, errno);
		goto out;
	}
	if (fd_read(fd, path, READ_MAX_BYTES, data, len, &err) < 0) {
		free(*real);
		*real = NULL;
		rc = answer(res, TOOL_ERROR, "Error: %s: %s", tool, err.msg);
		goto out;
	}
	rc = TOOL_OK;
out:
	close(fd);
	return rc;
}

static int
tool_read_file(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct buf b = BUF_INIT(0);
	const char *path, *p, *end, *nl;
	char *data = NULL, *real = NULL;
	long offset, limit, line = 1, shown = 0;
	size_t len;
	int rc;

	if (arg_string(args, "read_file", "path", 1, &path, res) ||
	    arg_count(args, "read_file", "offset", 1, 1, &offset, res) ||
	    arg_count(args, "read_file", "limit", READ_DEFAULT_LINES, 1, &limit,
		      res))
		return TOOL_ERROR;
	rc = load(ctx, "read_file", path, &data, &len, &real, res);
	if (rc)
		return rc;
	rc = -1;
	if (memchr(data, '\0', len < 8192 ? len : 8192)) {
		rc = answer(res, TOOL_ERROR, "Error: read_file: '%s' is a "
			    "binary file (%zu bytes); not shown.", path, len);
		goto out;
	}
	p = data;
	end = data + len;
	while (p < end && line < offset) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
		line++;
	}
	if (p == end && len && offset > 1) {
		rc = answer(res, TOOL_ERROR, "Error: read_file: '%s' has %ld "
			    "lines; offset %ld is past the end.", path,
			    line - (data[len - 1] == '\n'), offset);
		goto out;
	}
	while (p < end && shown < limit) {
		nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl + 1 : end;
		if (buf_append(&b, p, (size_t)(nl - p)) < 0)
			goto out;
		p = nl;
		shown++;
	}
	if (p < end) {
		long total = line + shown - 1;

		for (nl = p; nl < end; total++) {
			nl = memchr(nl, '\n', (size_t)(end - nl));
			nl = nl ? nl + 1 : end;
		}
		if ((b.len && b.data[b.len - 1] != '\n' && buf_putc(&b, '\n') < 0)
		    || buf_printf(&b, "[lines %ld-%ld of %ld; read on with "
				  "offset %ld]", offset, offset + shown - 1,
				  total, offset + shown) < 0)
			goto out;
	}
	if (!len && buf_printf(&b, "(empty file)") < 0)
		goto out;
	rc = bounded(ctx, &b, res);
out:
	buf_free(&b);
	free(data);
	free(real);
	return rc;
}

/* --- writing files */

/* Asks the sandbox whether name may be written in the open directory
 * dfd: TOOL_OK, TOOL_ERROR with the reason in *res, or -1. */
static int
allowed(const struct tool_ctx *ctx, const char *tool, const char *path,
	int dfd, const char *name, char **res)
{
	char msg[512];
	int r;

	if (!ctx->sandbox)
		return TOOL_OK;
	r = sandbox_may_write(ctx->sandbox, dfd, name, msg, sizeof msg);
	if (r < 0)
		return path_error(res, tool, path, errno);
	return r ? answer(res, TOOL_ERROR, "Error: %s: '%s': %s.", tool,
			  path, msg) : TOOL_OK;
}

/* Before anything is created: the deepest directory of rel that exists,
 * and the name below it, must be writable in the sandbox. */
static int
guard(const struct tool_ctx *ctx, const char *tool, const char *path,
      const char *rel, char **res)
{
	char *d, *slash;
	const char *name;
	int fd, rc;

	if (!ctx->sandbox || ctx->sandbox->mode == SANDBOX_OFF)
		return TOOL_OK;
	/* Before a directory is made: no .git, nor a path through one. */
	if (ctx->sandbox->mode == SANDBOX_WORKSPACE_WRITE &&
	    !ctx->sandbox->git_writable && sandbox_git_path(rel))
		return answer(res, TOOL_ERROR, "Error: %s: '%s': a .git is kept "
			      "read-only by the sandbox, and none may be "
			      "created: git would run its hooks and "
			      "configuration outside the sandbox.", tool, path);
	d = strdup(rel);
	if (!d)
		return -1;
	for (;;) {
		slash = strrchr(d, '/');
		if (slash)
			*slash = '\0';
		name = slash ? slash + 1 : d;
		fd = root_openat(&ctx->root, slash ? d : ".",
				 O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			rc = allowed(ctx, tool, path, fd, name, res);
			close(fd);
			break;
		}
		if (errno != ENOENT || !slash) {
			rc = path_error(res, tool, path, errno);
			break;
		}
	}
	free(d);
	return rc;
}

/* Writes data at rel (relative to the root), atomically. */
static int
store(const struct tool_ctx *ctx, const char *tool, const char *path,
      const char *rel, const char *data, size_t len, char **res)
{
	struct ah_error err = { 0 };
	char *dir = strdup(rel), *slash;
	const char *name;
	int dfd, rc;

	if (!dir)
		return -1;
	rc = guard(ctx, tool, path, rel, res);
	if (rc != TOOL_OK)
		goto out;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		if (root_mkdirs(&ctx->root, dir) < 0) {
			rc = path_error(res, tool, path, errno);
			goto out;
		}
		dfd = root_openat(&ctx->root, dir, O_RDONLY | O_DIRECTORY, 0);
	} else {
		name = dir;
		dfd = root_openat(&ctx->root, ".", O_RDONLY | O_DIRECTORY, 0);
	}
	if (dfd < 0) {
		rc = path_error(res, tool, path, errno);
		goto out;
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		close(dfd);
		rc = answer(res, TOOL_ERROR, "Error: %s: '%s' is a directory.",
			    tool, path);
		goto out;
	}
	rc = allowed(ctx, tool, path, dfd, name, res);
	if (rc != TOOL_OK) {
		close(dfd);
		goto out;
	}
	rc = file_replace_at(dfd, name, path, data, len, &err);
	close(dfd);
	rc = rc < 0 ? answer(res, TOOL_ERROR, "Error: %s: %s", tool, err.msg)
		    : TOOL_OK;
out:
	free(dir);
	return rc;
}

static int
tool_write_file(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	const char *path, *content;
	char msg[512], *rel = NULL, *real = NULL;
	struct stat st;
	int fd, rc;

	if (arg_string(args, "write_file", "path", 1, &path, res) ||
	    arg_string(args, "write_file", "content", 1, &content, res))
		return TOOL_ERROR;
	rc = root_relative(&ctx->root, path, &rel, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "%s", msg);
	/* An existing file (or a symlink to one inside the root) is
	 * replaced where it really is. */
	fd = root_openat(&ctx->root, rel, O_PATH, 0);
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			close(fd);
			rc = answer(res, TOOL_ERROR, "Error: write_file: '%s' "
				    "is a directory.", path);
			goto out;
		}
		rc = root_realpath(&ctx->root, fd, &real);
		close(fd);
		if (rc < 0) {
			rc = path_error(res, "write_file", path, errno);
			goto out;
		}
	} else if (errno != ENOENT) {
		rc = path_error(res, "write_file", path, errno);
		goto out;
	}
	rc = store(ctx, "write_file", path, real ? real : rel, content,
		   strlen(content), res);
	if (rc == TOOL_OK)
		rc = answer(res, TOOL_OK, "Wrote %zu bytes to %s.",
			    strlen(content), path);
out:
	free(rel);
	free(real);
	return rc;
}

static size_t
count(const char *hay, size_t n, const char *needle, size_t k)
{
	const char *p = hay, *end = hay + n;
	size_t c = 0;

	while ((p = memmem(p, (size_t)(end - p), needle, k))) {
		c++;
		p += k;
	}
	return c;
}

static int
tool_edit_file(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	const char *path, *old, *new, *p, *q, *end;
	const cJSON *all;
	struct buf b = BUF_INIT(0);
	char *data = NULL, *real = NULL;
	size_t len, olen, nlen, c;
	int rc, every = 0;

	if (arg_string(args, "edit_file", "path", 1, &path, res) ||
	    arg_string(args, "edit_file", "old_string", 1, &old, res) ||
	    arg_string(args, "edit_file", "new_string", 1, &new, res))
		return TOOL_ERROR;
	all = cJSON_GetObjectItemCaseSensitive(args, "replace_all");
	if (all && !cJSON_IsNull(all)) {
		if (!cJSON_IsBool(all))
			return answer(res, TOOL_ERROR, "Error: edit_file: "
				      "'replace_all' must be true or false.");
		every = cJSON_IsTrue(all);
	}
	olen = strlen(old);
	nlen = strlen(new);
	if (!olen)
		return answer(res, TOOL_ERROR, "Error: edit_file: old_string "
			      "is empty; use write_file to write a whole file.");
	rc = load(ctx, "edit_file", path, &data, &len, &real, res);
	if (rc)
		return rc;
	c = count(data, len, old, olen);
	if (!c) {
		rc = answer(res, TOOL_ERROR, "Error: edit_file: old_string was "
			    "not found in '%s'; the file is unchanged.", path);
		goto out;
	}
	if (c > 1 && !every) {
		rc = answer(res, TOOL_ERROR, "Error: edit_file: old_string "
			    "occurs %zu times in '%s'; give more context to "
			    "make it unique, or set replace_all. The file is "
			    "unchanged.", c, path);
		goto out;
	}
	rc = -1;
	for (p = data, end = data + len; (q = memmem(p, (size_t)(end - p), old,
						      olen)); p = q + olen)
		if (buf_append(&b, p, (size_t)(q - p)) < 0 ||
		    buf_append(&b, new, nlen) < 0)
			goto out;
	if (buf_append(&b, p, (size_t)(end - p)) < 0)
		goto out;
	rc = store(ctx, "edit_file", path, real, b.data, b.len, res);
	if (rc == TOOL_OK)
		rc = answer(res, TOOL_OK, "Replaced %zu occurrence%s in %s.", c,
			    c == 1 ? "" : "s", path);
out:
	buf_free(&b);
	free(data);
	free(real);
	return rc;
}

/* --- apply_patch: several files at once, all or none */

/* One change of a patch, made ready before anything is written. */
struct change {
	const char *shown;     /* the path as the patch names it */
	char *target;          /* its real path, relative to the root */
	char *data;            /* the new text (NULL: target is removed) */
	size_t len;
	char *old;             /* what it held, to put back (NULL: none) */
	size_t oldlen;
	char *made;            /* the first directory made for it, or NULL */
	int dfd;               /* its directory, once staged */
	char tmp[NAME_MAX + 1]; /* the staged text's name there */
	int done;              /* renamed or removed */
	char op;               /* A, M, D: for the answer */
	const char *to;        /* M: the new path, when moved */
};

/* A path of the patch, confined as write_file's: the real path of an
 * existing file (*exists set), else the path relative to the root;
 * nothing under .git or .agent.  TOOL_OK, TOOL_ERROR (res), -1. */
static int
patch_target(const struct tool_ctx *ctx, const char *path, char **target,
	     int *exists, char **res)
{
	char msg[512], *rel = NULL, *real = NULL;
	int fd, rc;

	*target = NULL;
	*exists = 0;
	rc = root_relative(&ctx->root, path, &rel, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "%s", msg);
	fd = root_openat(&ctx->root, rel, O_PATH, 0);
	if (fd >= 0) {
		rc = root_realpath(&ctx->root, fd, &real);
		close(fd);
		if (rc < 0) {
			rc = path_error(res, "apply_patch", path, errno);
			goto out;
		}
		*exists = 1;
	} else if (errno != ENOENT) {
		rc = path_error(res, "apply_patch", path, errno);
		goto out;
	}
	if (!strcmp(real ? real : rel, ".")) {
		rc = answer(res, TOOL_ERROR, "Error: apply_patch: '%s' is a "
			    "directory.", path);
		goto out;
	}
	/* the harness's state and git's are never the patch's to change,
	 * whatever the sandbox's mode */
	if (agent_path_inside(rel) || agent_path_inside(real ? real : rel) ||
	    sandbox_git_path(rel) || sandbox_git_path(real ? real : rel)) {
		rc = answer(res, TOOL_ERROR, "Error: apply_patch: '%s' is under "
			    ".agent or .git, which a patch may not change.",
			    path);
		goto out;
	}
	rc = guard(ctx, "apply_patch", path, real ? real : rel, res);
	if (rc == TOOL_OK) {
		*target = real ? real : rel;
		if (real)
			free(rel);
		else
			free(real);
		return TOOL_OK;
	}
out:
	free(rel);
	free(real);
	return rc;
}

/* The first directory of rel's parents that does not exist yet (a copy),
 * or NULL when all do. */
static char *
first_missing(const struct tool_ctx *ctx, const char *rel)
{
	char *p = strdup(rel), *slash;
	int fd;

	if (!p)
		return NULL;
	for (slash = strchr(p, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		fd = root_openat(&ctx->root, p, O_PATH | O_DIRECTORY, 0);
		if (fd < 0)
			return p;
		close(fd);
		*slash = '/';
	}
	free(p);
	return NULL;
}

/* Removes the directories made for c (empty ones only), deepest first. */
static void
unmake_dirs(const struct tool_ctx *ctx, const struct change *c)
{
	char *p, *slash;

	if (!c->made || !(p = strdup(c->target)))
		return;
	while ((slash = strrchr(p, '/')) && (size_t)(slash - p) >=
	       strlen(c->made)) {
		*slash = '\0';
		if (unlinkat(ctx->root.fd, p, AT_REMOVEDIR) < 0)
			break;
	}
	free(p);
}

/* Writes c's new text beside its target, not yet in place. */
static int
stage(const struct tool_ctx *ctx, struct change *c, char **res)
{
	struct ah_error err = { 0 };
	char *dir = strdup(c->target), *slash;
	const char *name;

	if (!dir)
		return -1;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		c->made = first_missing(ctx, c->target);
		if (root_mkdirs(&ctx->root, dir) < 0) {
			free(dir);
			return path_error(res, "apply_patch", c->shown, errno);
		}
	} else
		name = dir;
	c->dfd = root_openat(&ctx->root, slash ? dir : ".",
			     O_RDONLY | O_DIRECTORY, 0);
	if (c->dfd < 0) {
		free(dir);
		return path_error(res, "apply_patch", c->shown, errno);
	}
	if (file_stage_at(c->dfd, name, c->shown, c->data, c->len, c->tmp,
			  sizeof c->tmp, &err) < 0) {
		c->tmp[0] = '\0';
		free(dir);
		return answer(res, TOOL_ERROR, "Error: apply_patch: %s", err.msg);
	}
	free(dir);
	return TOOL_OK;
}

/* The directory of rel (relative to the root), opened beneath it. */
static int
open_parent(const struct tool_ctx *ctx, const char *rel)
{
	char *d = strdup(rel), *slash;
	int fd;

	if (!d)
		return -1;
	slash = strrchr(d, '/');
	if (slash)
		*slash = '\0';
	fd = root_openat(&ctx->root, slash ? d : ".", O_RDONLY | O_DIRECTORY,
			 0);
	free(d);
	return fd;
}

/* The last path component of rel. */
static const char *
base_name(const char *rel)
{
	const char *slash = strrchr(rel, '/');

	return slash ? slash + 1 : rel;
}

/* Puts back what the changes done so far changed (best effort: this
 * runs only when a rename or an unlink failed after all was staged). */
static void
undo(struct change *cs, size_t n)
{
	struct ah_error err = { 0 };
	size_t i;
	int dfd;

	for (i = 0; i < n; i++) {
		if (!cs[i].done)
			continue;
		dfd = cs[i].dfd;
		if (!cs[i].old)
			unlinkat(dfd, base_name(cs[i].target), 0);
		else
			file_replace_at(dfd, base_name(cs[i].target),
					cs[i].shown, cs[i].old, cs[i].oldlen,
					&err);
	}
}

/* Finds a change of the same target among the first n. */
static const struct change *
same_target(const struct change *cs, size_t n, const char *target)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(cs[i].target, target))
			return &cs[i];
	return NULL;
}

/* Makes the changes of file operation f ready: one, or two for a move
 * (the new file, the old one removed). */
static int
prepare(const struct tool_ctx *ctx, const struct patch_file *f,
	struct change *cs, size_t *n, char **res)
{
	struct buf b = BUF_INIT(0);
	struct change *c = &cs[*n];
	char msg[512], *data = NULL, *real = NULL, *to = NULL;
	const struct change *twice;
	size_t len = 0;
	int rc, exists;

	rc = patch_target(ctx, f->path, &c->target, &exists, res);
	if (rc)
		return rc;
	c->shown = f->path;
	c->dfd = -1;
	c->op = f->kind == PATCH_ADD ? 'A' : f->kind == PATCH_DELETE ? 'D'
								     : 'M';
	(*n)++;
	if ((twice = same_target(cs, *n - 1, c->target)))
		return answer(res, TOOL_ERROR, "Error: apply_patch: '%s' is "
			      "changed twice in the patch (also as '%s'); give "
			      "all the changes of a file in one *** Update "
			      "File.", f->path, twice->shown);
	if (f->kind == PATCH_ADD && exists)
		return answer(res, TOOL_ERROR, "Error: apply_patch: *** Add "
			      "File: '%s' exists; change it with *** Update "
			      "File.", f->path);
	if (f->kind != PATCH_ADD) {
		rc = load(ctx, "apply_patch", f->path, &data, &len, &real, res);
		free(real);
		if (rc)
			return rc;
		c->old = data;
		c->oldlen = len;
	}
	if (f->kind == PATCH_DELETE)
		return TOOL_OK;
	rc = patch_apply(f, data, len, &b, msg, sizeof msg);
	if (rc) {
		buf_free(&b);
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "Error: "
					    "apply_patch: %s.", msg);
	}
	c->data = b.data ? buf_detach(&b, &c->len) : strdup("");
	if (!c->data)
		return -1;
	if (!f->move)
		return TOOL_OK;
	/* a move: the text goes to the new path, the old one goes */
	rc = patch_target(ctx, f->move, &to, &exists, res);
	if (rc)
		return rc;
	c->to = f->move;
	if (!strcmp(to, c->target)) {
		free(to);
		return TOOL_OK;
	}
	if (exists || (twice = same_target(cs, *n, to))) {
		free(to);
		return answer(res, TOOL_ERROR, "Error: apply_patch: *** Move "
			      "to: '%s' %s.", f->move, exists ? "exists"
			      : "is changed elsewhere in the patch");
	}
	/* the one at the new path holds the text; the one at the old
	 * path (a copy of this one) removes it */
	cs[*n] = *c;
	cs[*n].data = NULL;
	cs[*n].len = 0;
	cs[*n].op = 0;
	c->target = to;
	c->old = NULL;
	c->oldlen = 0;
	(*n)++;
	return TOOL_OK;
}

static int
tool_apply_patch(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct change *cs = NULL;
	struct patch p;
	struct buf b = BUF_INIT(0);
	const char *input;
	char msg[512];
	size_t n = 0, i;
	int rc;

	if (arg_string(args, "apply_patch", "input", 1, &input, res))
		return TOOL_ERROR;
	rc = patch_parse(input, &p, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "Error: apply_patch: "
					    "%s. Nothing was changed.", msg);
	rc = -1;
	/* a move makes two changes */
	cs = calloc(2 * p.n, sizeof *cs);
	if (!cs)
		goto out;
	for (i = 0; i < 2 * p.n; i++)
		cs[i].dfd = -1;
	for (i = 0; i < p.n; i++) {
		rc = prepare(ctx, &p.files[i], cs, &n, res);
		if (rc)
			goto out;
	}
	/* every new text written beside its file; then all renamed into
	 * place, and what goes removed */
	for (i = 0; i < n; i++) {
		if (cs[i].data)
			rc = stage(ctx, &cs[i], res);
		else if ((cs[i].dfd = open_parent(ctx, cs[i].target)) < 0)
			rc = path_error(res, "apply_patch", cs[i].shown, errno);
		if (rc)
			goto out;
	}
	for (i = 0; i < n; i++) {
		if (cs[i].data ? renameat(cs[i].dfd, cs[i].tmp, cs[i].dfd,
					  base_name(cs[i].target))
			       : unlinkat(cs[i].dfd, base_name(cs[i].target),
					  0)) {
			rc = path_error(res, "apply_patch", cs[i].shown, errno);
			undo(cs, i);
			goto out;
		}
		cs[i].done = 1;
		cs[i].tmp[0] = '\0';
	}
	for (i = 0; i < n; i++)
		if (cs[i].dfd >= 0 && fsync(cs[i].dfd) < 0 && errno != EINVAL)
			break;
	rc = -1;
	if (buf_printf(&b, "Applied the patch:") < 0)
		goto out;
	for (i = 0; i < n; i++)
		if (cs[i].op && (cs[i].to ? buf_printf(&b, "\nM %s -> %s",
						       cs[i].shown, cs[i].to)
					  : buf_printf(&b, "\n%c %s", cs[i].op,
						       cs[i].shown)) < 0)
			goto out;
	rc = bounded(ctx, &b, res);
out:
	for (i = 0; cs && i < 2 * p.n; i++) {
		if (cs[i].tmp[0] && cs[i].dfd >= 0)
			unlinkat(cs[i].dfd, cs[i].tmp, 0);
		if (rc && !cs[i].done)
			unmake_dirs(ctx, &cs[i]);
		if (cs[i].dfd >= 0)
			close(cs[i].dfd);
		free(cs[i].target);
		free(cs[i].data);
		free(cs[i].old);
		free(cs[i].made);
	}
	if (rc == TOOL_ERROR && *res && !strstr(*res, "Nothing was changed")) {
		char *more;

		if (asprintf(&more, "%s%s Nothing was changed.", *res,
			     (*res)[strlen(*res) - 1] == '.' ? "" : ".") < 0) {
			rc = -1;
		} else {
			free(*res);
			*res = more;
		}
	}
	free(cs);
	buf_free(&b);
	patch_free(&p);
	return rc;
}

/* --- grep and glob: ripgrep, run as a bash call is */

#define SEARCH_SHOWN 500           /* entries shown by default */
#define SEARCH_CAPTURE (32u << 20) /* bytes of rg's output read */
#define SEARCH_LINE 500            /* bytes of a matching line shown */

/* Appends s to b as one sh word, single-quoted. */
static int
sh_word(struct buf *b, const char *s)
{
	int rc = buf_putc(b, '\'');

	for (; !rc && *s; s++)
		rc = *s == '\'' ? buf_printf(b, "'\\''") : buf_putc(b, *s);
	return rc ? rc : buf_putc(b, '\'');
}

/* Appends " opt'value'" to b (the value glued to the option, so that one
 * starting with - is no option of rg's). */
static int
sh_opt(struct buf *b, const char *opt, const char *value)
{
	return buf_printf(b, " %s", opt) < 0 ? -1 : sh_word(b, value);
}

/* Does the path (components names[si..ns)) match the glob's components
 * pat[pi..np)?  ** is any number of components. */
static int
glob_parts(char **pat, size_t pi, size_t np, char **names, size_t si,
	   size_t ns)
{
	size_t k;

	if (pi == np)
		return si == ns;
	if (!strcmp(pat[pi], "**")) {
		for (k = si; k <= ns; k++)
			if (glob_parts(pat, pi + 1, np, names, k, ns))
				return 1;
		return 0;
	}
	return si < ns && !fnmatch(pat[pi], names[si], 0) &&
	       glob_parts(pat, pi + 1, np, names, si + 1, ns);
}

/* Splits s (a copy, modified) at each '/' into v (at most max). */
static size_t
split_slash(char *s, char **v, size_t max)
{
	size_t n = 0;
	char *p;

	for (p = strtok_r(s, "/", &s); p && n < max; p = strtok_r(NULL, "/", &s))
		v[n++] = p;
	return p ? max + 1 : n;
}

/* Does path (relative to the working directory) match glob, as
 * .gitignore reads one: one without a slash matches a name at any
 * depth; ** any number of directories; ! before it, what does not
 * match.  -1 when out of memory. */
static int
glob_match(const char *glob, const char *path)
{
	char *g, *p, *pat[65], *names[257];
	size_t np, ns;
	int neg = *glob == '!', r = 0;

	glob += neg;
	g = malloc(strlen(glob) + 4);
	p = strdup(path);
	if (!g || !p) {
		free(g);
		free(p);
		return -1;
	}
	snprintf(g, strlen(glob) + 4, "%s%s", strchr(glob, '/') ? "" : "**/",
		 glob);
	np = split_slash(g, pat, 64);
	ns = split_slash(p, names, 256);
	if (np <= 64 && ns <= 256)
		r = glob_parts(pat, 0, np, names, 0, ns);
	free(g);
	free(p);
	return neg ? !r : r;
}

/* The directory or file the model named (default the working directory),
 * as its real path relative to the root, confined as read_file's is:
 * TOOL_OK with *real set, TOOL_ERROR with *res, or -1. */
static int
search_path(const struct tool_ctx *ctx, const char *tool, const char *path,
	    char **real, char **res)
{
	char msg[512], *rel = NULL;
	int fd, rc;

	*real = NULL;
	rc = root_relative(&ctx->root, path, &rel, msg, sizeof msg);
	if (rc)
		return rc < 0 ? -1 : answer(res, TOOL_ERROR, "%s", msg);
	fd = root_openat(&ctx->root, rel, O_PATH, 0);
	free(rel);
	if (fd < 0)
		return path_error(res, tool, path, errno);
	rc = root_realpath(&ctx->root, fd, real) < 0
		     ? path_error(res, tool, path, errno) : TOOL_OK;
	close(fd);
	return rc;
}

/* Runs cmd (a command line of rg) as bash runs a command: the same
 * shell, environment, limits, sandbox and helper, the bash timeout.
 * TOOL_OK with *r filled (the caller frees r->output) when rg ran to its
 * end, else the result for the model in *res, or -1. */
static int
search_run(const struct tool_ctx *ctx, const char *tool, const char *cmd,
	   struct proc_result *r, char **res)
{
	struct proc_opts o = { 0 };
	struct ah_error err = { 0 };
	int rc;

	o.command = cmd;
	o.timeout = ctx->timeout < ctx->max_timeout ? ctx->timeout
						     : ctx->max_timeout;
	o.max_output = SEARCH_CAPTURE;
	rc = run_opts(ctx, tool, "search", &o, res);
	if (rc)
		return rc;
	if (proc_run(&o, r, &err) < 0)
		return answer(res, TOOL_ERROR, "Error: %s: %s", tool, err.msg);
	if (r->interrupted)
		rc = answer(res, TOOL_INTERRUPTED, "[interrupted by signal %d: "
			    "killed]", r->interrupted);
	else if (r->timed_out)
		rc = answer(res, TOOL_ERROR, "Error: %s: the search took more "
			    "than %g s and was killed; narrow it with path, "
			    "glob or type.", tool, o.timeout);
	else if (r->limit)
		rc = answer(res, TOOL_ERROR, "Error: %s: the search went over "
			    "a limit of tool-exec (--max-procs, --max-memory or "
			    "--max-file-size) and was killed.", tool);
	else if (WIFSIGNALED(r->status))
		rc = answer(res, TOOL_ERROR, "Error: %s: rg was killed by "
			    "signal %d.", tool, WTERMSIG(r->status));
	else if (WEXITSTATUS(r->status) == 127)
		rc = answer(res, TOOL_ERROR, "Error: %s: ripgrep (rg) is not "
			    "installed where commands run (not found in their "
			    "PATH); install it (Debian: apt-get install "
			    "ripgrep) or search with bash.", tool);
	else if (WEXITSTATUS(r->status) > 2)
		rc = answer(res, TOOL_ERROR, "Error: %s: rg exited with %d: "
			    "%.500s", tool, WEXITSTATUS(r->status),
			    r->output ? r->output : "");
	else
		return TOOL_OK;
	free(r->output);
	r->output = NULL;
	return rc;
}

/* Appends at most SEARCH_LINE bytes of s (its newline dropped), cut
 * between UTF-8 characters. */
static int
line_text(struct buf *b, const char *s)
{
	size_t n = strcspn(s, "\n");

	if (n > SEARCH_LINE) {
		n = SEARCH_LINE;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		return buf_append(b, s, n) < 0 ? -1 : buf_printf(b, " [...]");
	}
	if (n && s[n - 1] == '\r')
		n--;
	return buf_append(b, s, n);
}

/* The text of {"text": ...} (rg's form for UTF-8), or a stand-in. */
static const char *
rg_text(const cJSON *o, const char *key)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, key), "text");

	return cJSON_IsString(t) ? t->valuestring : "(not UTF-8)";
}

enum { MODE_CONTENT, MODE_FILES, MODE_COUNT };

/* What grep shows, built as rg's events come. */
struct hits {
	struct buf b;
	int mode;
	long head, shown, more; /* entries shown, and the rest */
	const char *glob;       /* only files it matches, or NULL */
	char *file;             /* the file of the last event */
	long nfile, lastno;     /* its matches, its last line */
};

/* The file of h->file is done: its entry, in modes other than content. */
static int
hits_file_done(struct hits *h)
{
	if (h->mode == MODE_CONTENT || !h->file || !h->nfile)
		return 0;
	if (h->shown >= h->head) {
		h->more++;
		return 0;
	}
	h->shown++;
	if (h->b.len && buf_putc(&h->b, '\n') < 0)
		return -1;
	return h->mode == MODE_FILES ? buf_printf(&h->b, "%s", h->file)
				     : buf_printf(&h->b, "%s:%ld", h->file,
						  h->nfile);
}

/* One event of rg --json: a match or a line of context. */
static int
hits_add(struct hits *h, const cJSON *ev)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data");
	const char *file;
	int match;
	long no;

	if (!cJSON_IsString(type) || (strcmp(type->valuestring, "match") &&
				      strcmp(type->valuestring, "context")))
		return 0;
	match = !strcmp(type->valuestring, "match");
	file = rg_text(data, "path");
	if (h->glob) {
		int g = glob_match(h->glob, file);

		if (g <= 0)
			return g;
	}
	no = (long)cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(data, "line_number"));
	if (!h->file || strcmp(h->file, file)) {
		if (hits_file_done(h) < 0)
			return -1;
		free(h->file);
		h->file = strdup(file);
		if (!h->file)
			return -1;
		h->nfile = 0;
		h->lastno = 0;
	}
	h->nfile += match;
	if (h->mode != MODE_CONTENT)
		return 0;
	if (h->shown >= h->head) {
		h->more += match;
		return 0;
	}
	h->shown++;
	if ((h->b.len && buf_putc(&h->b, '\n') < 0) ||
	    (h->lastno && no != h->lastno + 1 && buf_printf(&h->b, "--\n") < 0)
	    || buf_printf(&h->b, "%s%c%ld%c", file, match ? ':' : '-', no,
			  match ? ':' : '-') < 0 ||
	    line_text(&h->b, rg_text(data, "lines")) < 0)
		return -1;
	h->lastno = no;
	return 0;
}

static int
tool_grep(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct buf cmd = BUF_INIT(0), notes = BUF_INIT(0);
	struct hits h = { BUF_INIT(0), MODE_CONTENT, 0, 0, 0, NULL, NULL, 0,
			  0 };
	struct proc_result r = { 0 };
	const char *pattern, *path, *glob, *type, *mode, *p, *nl;
	char *real = NULL;
	const cJSON *ci;
	long ctxl;
	int rc;

	if (arg_string(args, "grep", "pattern", 1, &pattern, res) ||
	    arg_string(args, "grep", "path", 0, &path, res) ||
	    arg_string(args, "grep", "glob", 0, &glob, res) ||
	    arg_string(args, "grep", "type", 0, &type, res) ||
	    arg_string(args, "grep", "output_mode", 0, &mode, res) ||
	    arg_count(args, "grep", "context", 0, 0, &ctxl, res) ||
	    arg_count(args, "grep", "head_limit", SEARCH_SHOWN, 1, &h.head,
		      res))
		return TOOL_ERROR;
	ci = cJSON_GetObjectItemCaseSensitive(args, "case_insensitive");
	if (ci && !cJSON_IsNull(ci) && !cJSON_IsBool(ci))
		return answer(res, TOOL_ERROR, "Error: grep: 'case_insensitive' "
			      "must be true or false.");
	if (mode && !strcmp(mode, "files_with_matches"))
		h.mode = MODE_FILES;
	else if (mode && !strcmp(mode, "count"))
		h.mode = MODE_COUNT;
	else if (mode && strcmp(mode, "content"))
		return answer(res, TOOL_ERROR, "Error: grep: 'output_mode' must "
			      "be content, files_with_matches or count.");
	if (ctxl > 100)
		ctxl = 100;
	/* matched here, not by rg --glob, which would override .gitignore */
	h.glob = glob;
	rc = search_path(ctx, "grep", path ? path : ".", &real, res);
	if (rc)
		return rc;
	rc = -1;
	/* rg's own configuration file is not read; .gitignore is obeyed
	 * in a directory that is no git repository too; no symbolic link
	 * is followed below the path */
	if (buf_printf(&cmd, "exec rg --json --no-config --no-require-git "
		       "--sort path") < 0 ||
	    (ci && cJSON_IsTrue(ci) && buf_printf(&cmd, " -i") < 0) ||
	    (h.mode == MODE_FILES && buf_printf(&cmd, " --max-count 1") < 0) ||
	    (h.mode == MODE_CONTENT && ctxl &&
	     buf_printf(&cmd, " --context %ld", ctxl) < 0) ||
	    (type && sh_opt(&cmd, "--type=", type) < 0) ||
	    sh_opt(&cmd, "--regexp=", pattern) < 0 ||
	    (strcmp(real, ".") &&
	     (buf_printf(&cmd, " -- ") < 0 || sh_word(&cmd, real) < 0)))
		goto out;
	rc = search_run(ctx, "grep", cmd.data, &r, res);
	if (rc)
		goto out;
	rc = -1;
	for (p = r.output ? r.output : ""; *p; p = *nl ? nl + 1 : nl) {
		cJSON *ev;
		size_t n;
		int e;

		nl = p + strcspn(p, "\n");
		n = (size_t)(nl - p);
		ev = *p == '{' ? cJSON_ParseWithLength(p, n) : NULL;
		if (!ev) {
			/* what rg said on its standard error */
			if (n && ((notes.len && buf_putc(&notes, '\n') < 0) ||
				  buf_append(&notes, p, n) < 0))
				goto out;
			continue;
		}
		e = hits_add(&h, ev);
		cJSON_Delete(ev);
		if (e < 0)
			goto out;
	}
	if (hits_file_done(&h) < 0)
		goto out;
	if (WEXITSTATUS(r.status) == 2 && !h.shown) {
		rc = answer(res, TOOL_ERROR, "Error: grep: %s", notes.len
			    ? notes.data : "rg failed");
		goto out;
	}
	if (!h.b.len && buf_printf(&h.b, "(no matches)") < 0)
		goto out;
	if (h.more && buf_printf(&h.b, "\n[... and %ld more %s; narrow the "
				 "search or raise head_limit]", h.more,
				 h.mode == MODE_CONTENT ? "matching lines"
							: "files") < 0)
		goto out;
	if (notes.len && buf_printf(&h.b, "\n[rg: %s]", notes.data) < 0)
		goto out;
	rc = bounded(ctx, &h.b, res);
out:
	free(r.output);
	free(real);
	free(h.file);
	buf_free(&cmd);
	buf_free(&h.b);
	buf_free(&notes);
	return rc;
}

/* A file glob found, and when it was last modified. */
struct found {
	char *name;
	struct timespec mtime;
};

/* Newest first; then by name. */
static int
cmp_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int
tool_glob(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct buf cmd = BUF_INIT(0), b = BUF_INIT(0), notes = BUF_INIT(0);
	struct proc_result r = { 0 };
	struct found *f = NULL, *more;
	const char *pattern, *path;
	char *real = NULL, *p, *nl, *next;
	size_t n = 0, cap = 0, i;
	struct stat st;
	int rc, g;

	if (arg_string(args, "glob", "pattern", 1, &pattern, res) ||
	    arg_string(args, "glob", "path", 0, &path, res))
		return TOOL_ERROR;
	rc = search_path(ctx, "glob", path ? path : ".", &real, res);
	if (rc)
		return rc;
	rc = -1;
	if (buf_printf(&cmd, "exec rg --files --no-config --no-require-git") < 0
	    || (strcmp(real, ".") &&
		(buf_printf(&cmd, " -- ") < 0 || sh_word(&cmd, real) < 0)))
		goto out;
	rc = search_run(ctx, "glob", cmd.data, &r, res);
	if (rc)
		goto out;
	rc = -1;
	for (p = r.output ? r.output : ""; *p; p = next) {
		nl = p + strcspn(p, "\n");
		next = *nl ? nl + 1 : nl;
		if (nl == p)
			continue;
		/* rg's messages, when it had some (exit 2) */
		if (WEXITSTATUS(r.status) == 2 && !strncmp(p, "rg: ", 4)) {
			if ((notes.len && buf_putc(&notes, '\n') < 0) ||
			    buf_append(&notes, p, (size_t)(nl - p)) < 0)
				goto out;
			continue;
		}
		*nl = '\0';
		g = glob_match(pattern, p);
		if (g < 0)
			goto out;
		if (!g)
			continue;
		/* the time of the name itself (no link is followed); one
		 * gone meanwhile counts as oldest */
		if (fstatat(ctx->root.fd, p, &st, AT_SYMLINK_NOFOLLOW) < 0)
			st.st_mtim.tv_sec = st.st_mtim.tv_nsec = 0;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			more = realloc(f, cap * sizeof *f);
			if (!more)
				goto out;
			f = more;
		}
		f[n].name = p;
		f[n++].mtime = st.st_mtim;
	}
	if (notes.len && !n) {
		rc = answer(res, TOOL_ERROR, "Error: glob: %s", notes.data);
		goto out;
	}
	if (n)
		qsort(f, n, sizeof *f, cmp_found);
	for (i = 0; i < n && i < SEARCH_SHOWN; i++)
		if ((b.len && buf_putc(&b, '\n') < 0) ||
		    buf_printf(&b, "%s", f[i].name) < 0)
			goto out;
	if ((!b.len && buf_printf(&b, "(no files)") < 0) ||
	    (n > SEARCH_SHOWN && buf_printf(&b, "\n[... and %zu more files; "
					    "narrow the pattern or the path]",
					    n - SEARCH_SHOWN) < 0) ||
	    (notes.len && buf_printf(&b, "\n[%s]", notes.data) < 0))
		goto out;
	rc = bounded(ctx, &b, res);
out:
	free(f);
	free(r.output);
	free(real);
	buf_free(&cmd);
	buf_free(&b);
	buf_free(&notes);
	return rc;
}

/* --- skill */

int
skills_on(void)
{
	const char *v = getenv("AGENT_PROJECT_FILES");

	return !v || strcmp(v, "0");
}

static int
tool_skill(const struct tool_ctx *ctx, const cJSON *args, char **res)
{
	struct ah_error err = { 0 };
	struct buf b = BUF_INIT(0);
	struct skills s;
	const char *name;
	size_t i;
	int rc = -1;

	if (arg_string(args, "skill", "name", 1, &name, res))
		return TOOL_ERROR;
	if (!skills_on())
		return answer(res, TOOL_ERROR, "Error: skill: skills are turned "
			      "off in this session (--no-project-files).");
	if (skills_find(ctx->root.path, name, &s, &err) < 0)
		return -1;
	if (s.found == (size_t)-1) {
		if (buf_printf(&b, "Error: skill: there is no skill '%.100s'; ",
			       name) < 0)
			goto out;
		for (i = 0; i < s.n; i++)
			if (buf_printf(&b, "%s%s", i ? ", " : "the skills are: ",
				       s.v[i].name) < 0)
				goto out;
		if (buf_printf(&b, "%s.", s.n ? "" : "there is none") < 0)
			goto out;
		*res = buf_detach(&b, NULL);
		rc = *res ? TOOL_ERROR : -1;
		goto out;
	}
	if (skill_text(&s, &b) < 0)
		goto out;
	rc = bounded(ctx, &b, res);
out:
	buf_free(&b);
	skills_free(&s);
	return rc;
}

/* --- run_todo_write */

static int
tool_todo(const struct tool_ctx *ctx, const char *argstr, char **res)
{
	struct ah_error err = { 0 };
	int rc;

	rc = todo_write(ctx->todo_path, argstr, strlen(argstr), 0, res, &err);
	if (rc < 0)
		return err.code == AH_ENOMEM
			? -1
			: answer(res, TOOL_ERROR, "Error: run_todo_write: %s",
				 err.msg);
	return rc ? TOOL_ERROR : TOOL_OK;
}

/* --- task: one call alone (tool-exec runs a run of them together) */

static int
task_done(void *arg, int i)
{
	(void)arg;
	(void)i;
	return 0;
}

static int
tool_task(const struct tool_ctx *ctx, const char *argstr, char **res)
{
	struct task_opts none = { 0 };
	struct task t = { "", argstr, NULL, 0 };

	if (task_run(ctx->task ? ctx->task : &none, &t, 1, task_done, NULL) < 0) {
		free(t.result);
		return -1;
	}
	*res = t.result;
	return t.rc;
}

int
tool_call(const struct tool_ctx *ctx, const char *name, const char *argstr,
	  char **res)
{
	static const struct {
		const char *name;
		int (*run)(const struct tool_ctx *, const cJSON *, char **);
	} tools[] = {
		{ "bash", tool_bash },
		{ "list_dir", tool_list_dir },
		{ "read_file", tool_read_file },
		{ "write_file", tool_write_file },
		{ "edit_file", tool_edit_file },
		{ "grep", tool_grep },
		{ "glob", tool_glob },
		{ "apply_patch", tool_apply_patch },
		{ "skill", tool_skill },
	};
	const char *dup = NULL;
	size_t i, off = 0, n;
	cJSON *args;
	int rc;

	*res = NULL;
	n = strlen(argstr);
	for (i = 0; i < sizeof tools / sizeof *tools; i++)
		if (!strcmp(name, tools[i].name))
			break;
	if (ctx->sandbox && ctx->sandbox->mode == SANDBOX_READ_ONLY &&
	    !mode_may_run(name, ctx->todo_path))
		return mode_refuse(name, res);
	if (!strncmp(name, "mcp__", 5) ? 0 : (i < sizeof tools / sizeof *tools
	    || !strcmp(name, "run_todo_write") || !strcmp(name, "task")) &&
	    !tool_is_offered(ctx->tools, name))
		return answer(res, TOOL_ERROR, "Error: the tool '%s' is not "
			      "offered in this session (%s%s).", name,
			      ctx->tools ? "the tools are: " : "the default "
			      "set; apply_patch is offered with tool-exec "
			      "--tools", ctx->tools ? ctx->tools : "");
	if (!strcmp(name, "task"))
		return tool_task(ctx, argstr, res);
	/* an MCP server's tool: the session's mcp-bridge runs it */
	if (!strncmp(name, "mcp__", 5) && ctx->mcp)
		return mcp_client_call(ctx->mcp, name, argstr,
				       ctx->interrupted, 0, res);
	if (i == sizeof tools / sizeof *tools && strcmp(name, "run_todo_write"))
		return answer(res, TOOL_ERROR, "Error: unknown tool '%.100s'; "
			      "the tools are bash, list_dir, read_file, "
			      "write_file, edit_file, grep, glob, "
			      "run_todo_write%s, skill when there are "
			      "skills, and with --tools apply_patch.", name,
			      task_offered(ctx->task) ? " and task" : "");
	args = json_parse(argstr, n, &off);
	if (!args)
		return answer(res, TOOL_ERROR, "Error: arguments for %s are not "
			      "valid JSON (at byte %zu): %.200s", name, off + 1,
			      argstr);
	if (!cJSON_IsObject(args)) {
		cJSON_Delete(args);
		return answer(res, TOOL_ERROR, "Error: arguments for %s must be "
			      "a JSON object.", name);
	}
	if (json_has_duplicate_keys(args, &dup)) {
		rc = answer(res, TOOL_ERROR, "Error: arguments for %s give the "
			    "key '%.100s' more than once.", name, dup);
		cJSON_Delete(args);
		return rc;
	}
	/* the schema allows no other key: one that a person approving the
	 * call would read as another (read_only with a Cyrillic o) is an
	 * error, not ignored (types and required keys: each tool's own
	 * checks say more) */
	{
		char *why = NULL;

		rc = tool_args_check(name, args, 0, &why);
		if (rc) {
			cJSON_Delete(args);
			if (rc < 0)
				return -1;
			rc = answer(res, TOOL_ERROR, "Error: %s.", why);
			free(why);
			return rc;
		}
	}
	if (i == sizeof tools / sizeof *tools)
		rc = tool_todo(ctx, argstr, res);
	else
		rc = tools[i].run(ctx, args, res);
	cJSON_Delete(args);
	return rc;
}
