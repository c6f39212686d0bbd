/* todo.c: the TodoWrite tool, with the seed article's rules and texts. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

static const char *const status_name[] = {
	[TODO_PENDING] = "pending",
	[TODO_IN_PROGRESS] = "in_progress",
	[TODO_COMPLETED] = "completed",
};
static const char status_icon[] = {
	[TODO_PENDING] = ' ',
	[TODO_IN_PROGRESS] = '>',
	[TODO_COMPLETED] = 'x',
};

/* Python's falsy values: the seed's `item.get(k) or default`. */
static int
falsy(const cJSON *v)
{
	return !v || cJSON_IsNull(v) || cJSON_IsFalse(v) ||
	       (cJSON_IsNumber(v) && v->valuedouble == 0) ||
	       (cJSON_IsString(v) && !v->valuestring[0]) ||
	       ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child);
}

/*
 * What cJSON does not keep of the text it parsed: how each number was
 * written (Python's str() of 1.0 is "1.0", of 1 is "1", of 10**20 all its
 * digits), and which strings held U+0000 (a cJSON string ends there, so
 * "pending\u0000junk" would read as "pending").  Only those values are
 * recorded; the rest is found in the tree.
 */
struct source {
	struct {
		const cJSON *v;
		const char *text; /* a number's text; NULL: a string with NUL */
		size_t len;
	} *at;
	size_t n, cap;
};

/* The next string or number token of s[0..n) from *pos: 's' or 'n', and
 * its span; 0 at the end.  *nul: a string holding the escape \u0000. */
static int
next_token(const char *s, size_t n, size_t *pos, size_t *start, size_t *len,
	   int *nul)
{
	size_t i = *pos;

	while (i < n && s[i] != '"' && s[i] != '-' &&
	       !(s[i] >= '0' && s[i] <= '9'))
		i++;
	if (i == n)
		return 0;
	*start = i;
	*nul = 0;
	if (s[i] == '"') {
		for (i++; i < n && s[i] != '"'; i++)
			if (s[i] == '\\' && i + 1 < n) {
				if (s[i + 1] == 'u' && i + 5 < n &&
				    !memcmp(s + i + 2, "0000", 4))
					*nul = 1;
				i++;
			}
		*len = ++i - *start;
		*pos = i;
		return 's';
	}
	while (i < n && strchr("0123456789+-.eE", s[i]))
		i++;
	*len = i - *start;
	*pos = i;
	return 'n';
}

static int
source_add(struct source *src, const cJSON *v, const char *text, size_t len)
{
	if (src->n == src->cap) {
		size_t cap = src->cap ? 2 * src->cap : 16;
		void *p = realloc(src->at, cap * sizeof *src->at);

		if (!p)
			return -1;
		src->at = p;
		src->cap = cap;
	}
	src->at[src->n].v = v;
	src->at[src->n].text = text;
	src->at[src->n++].len = len;
	return 0;
}

/* Walks v and the text it was parsed from side by side: cJSON keeps
 * members and elements in the order of the text.  1 when they do not
 * match (the text is not v's), -1 when out of memory. */
static int
source_walk(struct source *src, const cJSON *v, const char *s, size_t n,
	    size_t *pos)
{
	const cJSON *c;
	size_t start, len;
	int nul, t, rc;

	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		cJSON_ArrayForEach(c, v) {
			if (cJSON_IsObject(v) &&
			    next_token(s, n, pos, &start, &len, &nul) != 's')
				return 1;
			if ((rc = source_walk(src, c, s, n, pos)))
				return rc;
		}
		return 0;
	}
	if (!cJSON_IsString(v) && !cJSON_IsNumber(v))
		return 0;
	t = next_token(s, n, pos, &start, &len, &nul);
	if (t != (cJSON_IsString(v) ? 's' : 'n'))
		return 1;
	if (t == 'n')
		return source_add(src, v, s + start, len);
	return nul ? source_add(src, v, NULL, 0) : 0;
}

static void
source_free(struct source *src)
{
	free(src->at);
	memset(src, 0, sizeof *src);
}

/* Maps v to the text s[0..n) it was parsed from; without the text, or
 * when they do not match, the map stays empty. */
static int
source_map(struct source *src, const cJSON *v, const char *s, size_t n)
{
	size_t pos = 0;
	int rc;

	memset(src, 0, sizeof *src);
	if (!s)
		return 0;
	rc = source_walk(src, v, s, n, &pos);
	if (rc > 0)
		source_free(src);
	return rc < 0 ? -1 : 0;
}

static int
source_find(const struct source *src, const cJSON *v, const char **text,
	    size_t *len)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		if (src->at[i].v == v) {
			*text = src->at[i].text;
			*len = src->at[i].len;
			return 1;
		}
	return 0;
}

/* Python's repr() of a float: the shortest digits that read back as d,
 * in fixed notation with at least one decimal ("1.0", "0.0001") when the
 * exponent is in [-5, 16), else as "1e+16", "1.5e-07". */
static void
py_float(double d, char *out, size_t size)
{
	char e[40], digits[24], *p, *x;
	int prec, exp, nd = 0, point, i;
	size_t o = 0;

	if (isinf(d) || isnan(d)) {
		snprintf(out, size, "%s", isnan(d) ? "nan" : d < 0 ? "-inf" :
			 "inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec, d);
		if (strtod(e, NULL) == d)
			break;
	}
	x = strchr(e, 'e');
	exp = (int)strtol(x + 1, NULL, 10);
	for (p = e; p < x; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (d < 0 && o + 1 < size)
		out[o++] = '-';
	point = exp + 1; /* digits before the point */
	if (point <= -4 || point > 16) {
		snprintf(out + o, size - o, "%c%s%se%c%02d", digits[0],
			 nd > 1 ? "." : "", digits + 1, exp < 0 ? '-' : '+',
			 exp < 0 ? -exp : exp);
		return;
	}
	if (point <= 0) {
		o += (size_t)snprintf(out + o, size - o, "0.");
		for (i = 0; i < -point && o + 1 < size; i++)
			out[o++] = '0';
		snprintf(out + o, size - o, "%s", digits);
	} else if (point >= nd) {
		o += (size_t)snprintf(out + o, size - o, "%s", digits);
		for (i = nd; i < point && o + 1 < size; i++)
			out[o++] = '0';
		snprintf(out + o, size - o, ".0");
	} else
		snprintf(out + o, size - o, "%.*s.%s", point, digits,
			 digits + point);
}

/* Python's str() of the JSON number written as text[0..len): an integer
 * as its digits, anything else as the float it reads as. */
static char *
py_number(const cJSON *v, const char *text, size_t len)
{
	char num[64];
	size_t i;

	if (text && !memchr(text, '.', len) && !memchr(text, 'e', len) &&
	    !memchr(text, 'E', len)) {
		for (i = text[0] == '-'; i < len && text[i] == '0'; i++)
			;
		if (i == len) /* -0 is 0 */
			return strdup("0");
		return strndup(text, len);
	}
	if (!text && fabs(v->valuedouble) < 1e16 &&
	    v->valuedouble == floor(v->valuedouble)) {
		/* no text to tell 1 from 1.0: an integer, as stored lists
		 * and models write them */
		snprintf(num, sizeof num, "%.0f", v->valuedouble);
		return strdup(num);
	}
	py_float(v->valuedouble, num, sizeof num);
	return strdup(num);
}

/*
 * The seed's str(item.get(k) or dflt).strip(): *out receives a new string.
 * Returns 0, 1 when the value is an array or an object (which str() would
 * print as Python source; we refuse it instead), 2 when it is a string
 * holding U+0000, -1 when out of memory.
 */
static int
field_text(const cJSON *v, const char *dflt, const struct source *src,
	   char **out)
{
	const char *s, *text = NULL;
	char *num = NULL;
	size_t start, len = 0;

	*out = NULL;
	if (falsy(v))
		s = dflt;
	else if (cJSON_IsString(v)) {
		if (source_find(src, v, &text, &len))
			return 2;
		s = v->valuestring;
	} else if (cJSON_IsTrue(v))
		s = "True";
	else if (cJSON_IsNumber(v)) {
		source_find(src, v, &text, &len);
		if (!(num = py_number(v, text, len)))
			return -1;
		s = num;
	} else
		return 1;
	len = utf8_strip(s, strlen(s), &start);
	*out = strndup(s + start, len);
	free(num);
	return *out ? 0 : -1;
}

static int
parse_status(const char *s)
{
	int i;

	for (i = TODO_PENDING; i <= TODO_COMPLETED; i++)
		if (!strcmp(s, status_name[i]))
			return i;
	return -1;
}

static int
status_of(const cJSON *item)
{
	return parse_status(cJSON_GetObjectItemCaseSensitive(item, "status")
				    ->valuestring);
}

/* Checks one item; on success *norm is its normalised copy. */
static int
validate_item(const cJSON *item, int index, const cJSON *done,
	      const struct source *src, cJSON **norm, char *msg, size_t size)
{
	static const char *const names[] = { "id", "content", "status" };
	char dflt[32], *text[3] = { NULL, NULL, NULL };
	const cJSON *m, *prev;
	const char *dup;
	cJSON *o = NULL;
	int i, rc;

	*norm = NULL;
	if (!cJSON_IsObject(item))
		return say_into(msg, size, 1, "Error: todo #%d must be an object.",
			   index);
	for (m = item->child; m; m = m->next)
		for (prev = item->child; prev != m; prev = prev->next)
			if (!strcmp(prev->string, m->string)) {
				dup = m->string;
				return say_into(msg, size, 1,
					   "Error: todo #%d has a duplicate "
					   "field - %s", index, dup);
			}
	snprintf(dflt, sizeof dflt, "todo-%d", index);
	for (i = 0; i < 3; i++) {
		rc = field_text(cJSON_GetObjectItemCaseSensitive(item, names[i]),
				i == 0 ? dflt : i == 1 ? "" : "pending", src,
				&text[i]);
		if (rc == 1 || rc == 2) {
			rc = say_into(msg, size, 1, rc == 1 ?
				 "Error: todo #%d %s must be a string." :
				 "Error: todo #%d %s contains U+0000.", index,
				 names[i]);
			goto out;
		}
		if (rc < 0)
			goto nomem;
	}
	rc = 1;
	if (!text[0][0]) {
		say_into(msg, size, 1, "Error: todo #%d id is empty.", index);
		goto out;
	}
	for (m = done->child; m; m = m->next)
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(m, "id")
				    ->valuestring, text[0])) {
			say_into(msg, size, 1, "Error: duplicate todo id - %s",
			    text[0]);
			goto out;
		}
	if (!text[1][0]) {
		say_into(msg, size, 1, "Error: todo #%d content is empty.", index);
		goto out;
	}
	if (parse_status(text[2]) < 0) {
		say_into(msg, size, 1, "Error: invalid todo status - %s", text[2]);
		goto out;
	}
	if (strlen(text[0]) > TODO_MAX_ID) {
		say_into(msg, size, 1, "Error: todo #%d id is too long - %zu bytes "
		    "(at most %d).", index, strlen(text[0]), TODO_MAX_ID);
		goto out;
	}
	if (strlen(text[1]) > TODO_MAX_CONTENT) {
		say_into(msg, size, 1, "Error: todo #%d content is too long - %zu "
		    "bytes (at most %d).", index, strlen(text[1]),
		    TODO_MAX_CONTENT);
		goto out;
	}

	o = cJSON_CreateObject();
	if (!o)
		goto nomem;
	for (i = 0; i < 3; i++)
		if (!cJSON_AddStringToObject(o, names[i], text[i]))
			goto nomem;
	/* Other members (Claude Code's activeForm, say) are kept as sent. */
	for (m = item->child; m; m = m->next) {
		cJSON *copy;

		if (!strcmp(m->string, "id") || !strcmp(m->string, "content") ||
		    !strcmp(m->string, "status"))
			continue;
		copy = cJSON_Duplicate(m, 1);
		if (!copy)
			goto nomem;
		if (!cJSON_AddItemToObject(o, m->string, copy)) {
			cJSON_Delete(copy);
			goto nomem;
		}
	}
	*norm = o;
	o = NULL;
	rc = 0;
	goto out;
nomem:
	rc = say_into(msg, size, -1, "Error: out of memory.");
out:
	cJSON_Delete(o);
	for (i = 0; i < 3; i++)
		free(text[i]);
	return rc;
}

int
todo_validate(const cJSON *args, const char *text, size_t len, cJSON **out,
	      char *msg, size_t size)
{
	const cJSON *todos = NULL, *m, *item;
	cJSON *parsed = NULL, *list = NULL, *result = NULL, *norm;
	struct source src = { 0 };
	int n = 0, index = 0, active = 0, rc = 1;

	*out = NULL;
	if (!cJSON_IsObject(args))
		return say_into(msg, size, 1,
			   "Error: arguments must be a JSON object with a "
			   "todos list.");
	for (m = args->child; m; m = m->next)
		if (m->string && !strcmp(m->string, "todos")) {
			if (todos)
				return say_into(msg, size, 1, "Error: todos is "
					   "given more than once.");
			todos = m;
		}
	/* Some models send the list as a JSON string holding the array. */
	if (cJSON_IsString(todos)) {
		text = todos->valuestring;
		len = strlen(text);
		parsed = json_parse(text, len, NULL);
		todos = parsed;
	}
	if (!cJSON_IsArray(todos)) {
		say_into(msg, size, 1, "Error: todos must be a list.");
		goto out;
	}
	if (source_map(&src, parsed ? parsed : args, text, len) < 0)
		goto nomem;
	n = cJSON_GetArraySize(todos);
	if (n > TODO_MAX_ITEMS) {
		say_into(msg, size, 1, "Error: too many todos - %d (at most %d).", n,
		    TODO_MAX_ITEMS);
		goto out;
	}
	result = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(result, "todos");
	if (!list)
		goto nomem;
	cJSON_ArrayForEach(item, todos) {
		rc = validate_item(item, ++index, list, &src, &norm, msg,
				   size);
		if (rc)
			goto out;
		if (!cJSON_AddItemToArray(list, norm)) {
			cJSON_Delete(norm);
			goto nomem;
		}
		if (status_of(norm) == TODO_IN_PROGRESS)
			active++;
	}
	rc = 1;
	if (active > 1) {
		say_into(msg, size, 1,
		    "Error: only one todo can be in_progress at a time.");
		goto out;
	}
	*out = result;
	result = NULL;
	rc = 0;
	goto out;
nomem:
	rc = say_into(msg, size, -1, "Error: out of memory.");
out:
	source_free(&src);
	cJSON_Delete(parsed);
	cJSON_Delete(result);
	return rc;
}

int
todo_unfinished(const cJSON *list)
{
	const cJSON *item;
	int n = 0;

	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "todos"))
		if (status_of(item) != TODO_COMPLETED)
			n++;
	return n;
}

char *
todo_render(const cJSON *list, int unfinished_only)
{
	struct buf b = BUF_INIT(0);
	const cJSON *item;
	int st, shown = 0;

	if (buf_append(&b, unfinished_only ? "Unfinished todos:" :
		       "Current todos:", unfinished_only ? 17 : 14) < 0)
		goto nomem;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "todos")) {
		st = status_of(item);
		if (unfinished_only && st == TODO_COMPLETED)
			continue;
		if (buf_printf(&b, "\n[%c] %s - %s", status_icon[st],
			       cJSON_GetObjectItemCaseSensitive(item, "id")
				       ->valuestring,
			       cJSON_GetObjectItemCaseSensitive(item, "content")
				       ->valuestring) < 0)
			goto nomem;
		shown++;
	}
	if (!shown) {
		buf_reset(&b);
		if (buf_append(&b, "No active todos.", 16) < 0)
			goto nomem;
	}
	return buf_detach(&b, NULL);
nomem:
	buf_free(&b);
	return NULL;
}

int
todo_load(const char *path, cJSON **out, struct ah_error *err)
{
	char msg[512], *data = NULL;
	cJSON *v = NULL;
	size_t len, off = 0;
	int rc;

	*out = NULL;
	rc = file_read(path, TODO_MAX_ARGS, &data, &len, err);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		*out = cJSON_Parse("{\"todos\":[]}");
		return *out ? 0 : ah_fail(err, AH_ENOMEM, "%s",
					  strerror(ENOMEM));
	}
	v = json_parse(data, len, &off);
	if (!v) {
		rc = ah_fail(err, AH_EFORMAT,
			     "'%s' is not valid JSON (at byte %zu)", path,
			     off + 1);
		goto out;
	}
	rc = todo_validate(v, data, len, out, msg, sizeof msg);
	if (rc)
		rc = ah_fail(err, rc < 0 ? AH_ENOMEM : AH_EFORMAT,
			     "'%s' is not a valid todo list: %s", path,
			     strncmp(msg, "Error: ", 7) ? msg : msg + 7);
out:
	cJSON_Delete(v);
	free(data);
	return rc;
}

/* One item a line: readable, and a change shows as a one-line diff. */
int
todo_store(const char *path, const cJSON *list, struct ah_error *err)
{
	struct buf b = BUF_INIT(0);
	const cJSON *item;
	const char *sep = "";
	char *s;
	int rc = -1;

	if (buf_append(&b, "{\"todos\": [", 11) < 0)
		goto nomem;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "todos")) {
		s = cJSON_PrintUnformatted(item);
		if (!s || buf_printf(&b, "%s\n  %s", sep, s) < 0) {
			free(s);
			goto nomem;
		}
		free(s);
		sep = ",";
	}
	if (buf_printf(&b, "%s]}\n", *sep ? "\n" : "") < 0)
		goto nomem;
	rc = file_replace(path, b.data, b.len, err);
	goto out;
nomem:
	ah_fail(err, AH_ENOMEM, "cannot write '%s': %s", path, strerror(ENOMEM));
out:
	buf_free(&b);
	return rc;
}

int
todo_write(const char *path, const char *args, size_t n, int dry_run,
	   char **answer, struct ah_error *err)
{
	char msg[512];
	cJSON *v = NULL, *list = NULL;
	size_t off = 0;
	int rc = 1;

	*answer = NULL;
	if (n > TODO_MAX_ARGS) {
		say_into(msg, sizeof msg, 1, TODO_TOO_LARGE, TODO_MAX_ARGS);
		goto answer;
	}
	v = json_parse(args, n, &off);
	if (!v) {
		say_into(msg, sizeof msg, 1, "Error: arguments are not valid JSON "
		    "(at byte %zu).", off + 1);
		goto answer;
	}
	rc = todo_validate(v, args, n, &list, msg, sizeof msg);
	if (rc < 0) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto out;
	}
	if (rc)
		goto answer;
	if (!dry_run && todo_store(path, list, err) < 0) {
		rc = -1;
		goto out;
	}
	*answer = todo_render(list, 0);
	if (!*answer)
		rc = ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	goto out;
answer:
	*answer = strdup(msg);
	if (!*answer)
		rc = ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
out:
	cJSON_Delete(list);
	cJSON_Delete(v);
	return rc;
}

const char *
todo_default_path(void)
{
	const char *p = getenv("AGENT_TODO_FILE");

	return p && *p ? p : "todo.json";
}
