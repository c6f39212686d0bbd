/* shsplit.c: a shell command line split into its simple commands, for
 * permission rules.  It does not run or expand anything: it finds every
 * command a line would start, and says when it cannot be sure. */
#include <ctype.h>
#include <string.h>

#include "harness.h"

#define SH_MAX_DEPTH 32

struct sp {
	const char *s;
	size_t i, n;
	cJSON *cmds;      /* array of argv arrays */
	cJSON *redirs;    /* array of redirection targets */
	int complex;      /* something we could not follow */
	int depth;
	int oom;
};

static int parse_list(struct sp *p, char close);

static int
is_op(char c)
{
	return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
	       c == '<' || c == '>' || c == '\n';
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int
push(struct buf *w, char c, struct sp *p)
{
	if (buf_putc(w, c) < 0) {
		p->oom = 1;
		return -1;
	}
	return 0;
}

/* A nested command, $(...), `...`, <(...), parsed as a list of its own. */
static int
nested(struct sp *p, char close)
{
	int rc;

	if (++p->depth > SH_MAX_DEPTH) {
		p->complex = 1;
		p->i = p->n;
		return -1;
	}
	rc = parse_list(p, close);
	p->depth--;
	return rc;
}

/* Backquotes: the text up to the closing ` is a command line. */
static int
backquote(struct sp *p)
{
	struct sp sub = *p;
	size_t start = ++p->i, end;

	while (p->i < p->n && p->s[p->i] != '`') {
		if (p->s[p->i] == '\\' && p->i + 1 < p->n)
			p->i++;
		p->i++;
	}
	if (p->i >= p->n) {
		p->complex = 1;
		return -1;
	}
	end = p->i++;
	if (p->depth >= SH_MAX_DEPTH) {
		p->complex = 1;
		return 0;
	}
	sub.s = p->s + start;
	sub.i = 0;
	sub.n = end - start;
	sub.depth = p->depth + 1;
	parse_list(&sub, 0);
	p->complex |= sub.complex;
	p->oom |= sub.oom;
	return 0;
}

/* $(...) or `...` at p->i, in a word or inside double quotes: the
 * command in it is split as a list of its own, and the word gets a "$"
 * for its unknown value.  Returns 1 when there was one, 0 when not, -1
 * on error; $(( arithmetic is beyond us: complex. */
static int
substitution(struct sp *p, struct buf *w, int *dynamic)
{
	if (p->s[p->i] == '`') {
		*dynamic = 1;
		return backquote(p) < 0 || push(w, '$', p) < 0 ? -1 : 1;
	}
	if (p->s[p->i] != '$' || p->i + 1 >= p->n || p->s[p->i + 1] != '(')
		return 0;
	*dynamic = 1;
	if (p->i + 2 < p->n && p->s[p->i + 2] == '(') {
		p->complex = 1;
		return -1;
	}
	p->i += 2;
	return nested(p, ')') < 0 || push(w, '$', p) < 0 ? -1 : 1;
}

/* Reads one word (quotes removed, expansions kept as text) into w.
 * *dynamic is set when the word holds an expansion ($x, $(...), `...`),
 * whose value only the shell knows. */
static int
word(struct sp *p, struct buf *w, int *dynamic)
{
	char c;
	int k;

	while (p->i < p->n) {
		c = p->s[p->i];
		if (is_blank(c) || is_op(c))
			break;
		if (c == '\\') {
			p->i++;
			if (p->i < p->n && p->s[p->i] != '\n' &&
			    push(w, p->s[p->i], p) < 0)
				return -1;
			p->i++;
		} else if (c == '\'') {
			p->i++;
			while (p->i < p->n && p->s[p->i] != '\'')
				if (push(w, p->s[p->i++], p) < 0)
					return -1;
			if (p->i >= p->n) {
				p->complex = 1;
				return -1;
			}
			p->i++;
		} else if (c == '"') {
			p->i++;
			while (p->i < p->n && p->s[p->i] != '"') {
				c = p->s[p->i];
				if (c == '\\' && p->i + 1 < p->n) {
					p->i++;
					if (push(w, p->s[p->i++], p) < 0)
						return -1;
				} else if ((k = substitution(p, w, dynamic)) != 0) {
					if (k < 0)
						return -1;
				} else {
					if (c == '$')
						*dynamic = 1;
					if (push(w, c, p) < 0)
						return -1;
					p->i++;
				}
			}
			if (p->i >= p->n) {
				p->complex = 1;
				return -1;
			}
			p->i++;
		} else if ((k = substitution(p, w, dynamic)) != 0) {
			if (k < 0)
				return -1;
		} else {
			if (c == '$' || c == '*' || c == '?' || c == '[' ||
			    (c == '~' && !w->len))
				*dynamic = 1;
			if (c == '$' && p->i + 1 < p->n && p->s[p->i + 1] == '{')
				*dynamic = 1;
			if (push(w, c, p) < 0)
				return -1;
			p->i++;
		}
	}
	return 0;
}

static int
reserved(const char *w)
{
	static const char *const kw[] = { "if", "then", "else", "elif", "fi",
		"for", "while", "until", "do", "done", "case", "esac", "select",
		"function", "[[", "]]", "coproc", NULL };
	int i;

	for (i = 0; kw[i]; i++)
		if (!strcmp(w, kw[i]))
			return 1;
	return 0;
}

static int
assignment(const char *w)
{
	const char *eq = strchr(w, '=');
	const char *q;

	if (!eq || eq == w || !(isalpha((unsigned char)*w) || *w == '_'))
		return 0;
	for (q = w; q < eq; q++)
		if (!isalnum((unsigned char)*q) && *q != '_')
			return 0;
	return 1;
}

/* One simple command; returns at an operator or the end. */
static int
simple(struct sp *p, char close)
{
	struct buf w = BUF_INIT(1u << 20);
	cJSON *argv = cJSON_CreateArray();
	int dynamic, redirect = 0, first = 1, rc = 0;
	char c;

	if (!argv) {
		p->oom = 1;
		return -1;
	}
	for (;;) {
		while (p->i < p->n && is_blank(p->s[p->i]))
			p->i++;
		if (p->i >= p->n)
			break;
		c = p->s[p->i];
		if (c == '#') { /* only ever seen at the start of a word */
			while (p->i < p->n && p->s[p->i] != '\n')
				p->i++;
			break;
		}
		if (c == '<' || c == '>') {
			if (p->i + 1 < p->n && p->s[p->i + 1] == '(') {
				/* process substitution <(...) >(...) */
				p->i += 2;
				if (nested(p, ')') < 0) {
					rc = -1;
					break;
				}
				continue;
			}
			if (c == '<' && p->i + 1 < p->n && p->s[p->i + 1] == '<') {
				p->complex = 1; /* here-documents */
				p->i = p->n;
				break;
			}
			p->i++;
			while (p->i < p->n && (p->s[p->i] == '>' ||
					       p->s[p->i] == '&' ||
					       p->s[p->i] == '|'))
				p->i++;
			redirect = 1;
			continue;
		}
		if (is_op(c))
			break;
		buf_reset(&w);
		dynamic = 0;
		if (word(p, &w, &dynamic) < 0) {
			rc = -1;
			break;
		}
		if (!w.data && buf_append(&w, "", 0) < 0) {
			p->oom = 1;
			rc = -1;
			break;
		}
		/* "2>file": the digits were a word; the > follows at once */
		if (p->i < p->n && (p->s[p->i] == '>' || p->s[p->i] == '<') &&
		    w.len && strspn(w.data, "0123456789") == w.len)
			continue;
		if (redirect) {
			redirect = 0;
			if (!cJSON_AddItemToArray(p->redirs,
						  cJSON_CreateString(w.data)))
				p->oom = 1;
			continue;
		}
		if (first && assignment(w.data))
			continue;
		if (first && (reserved(w.data) || !strcmp(w.data, "{") ||
			      !strcmp(w.data, "}") || !strcmp(w.data, "!"))) {
			if (reserved(w.data))
				p->complex = 1;
			continue;
		}
		if (first && dynamic)
			p->complex = 1; /* the command itself is unknown */
		if (first && p->i + 1 < p->n && p->s[p->i] == '(' &&
		    p->s[p->i + 1] == ')') {
			p->complex = 1; /* a function definition */
			p->i = p->n;
			break;
		}
		first = 0;
		if (!cJSON_AddItemToArray(argv, cJSON_CreateString(w.data)))
			p->oom = 1;
	}
	(void)close;
	if (cJSON_GetArraySize(argv))
		cJSON_AddItemToArray(p->cmds, argv);
	else
		cJSON_Delete(argv);
	buf_free(&w);
	return rc;
}

/* A list of commands joined by operators, up to close (or the end). */
static int
parse_list(struct sp *p, char close)
{
	char c;

	for (;;) {
		if (simple(p, close) < 0)
			return -1;
		if (p->i >= p->n) {
			if (close)
				p->complex = 1; /* unbalanced */
			return close ? -1 : 0;
		}
		c = p->s[p->i];
		if (c == close) {
			p->i++;
			return 0;
		}
		if (c == '(') {
			p->i++;
			if (nested(p, ')') < 0)
				return -1;
			continue;
		}
		if (c == ')') {
			p->complex = 1; /* a ) with no ( */
			p->i++;
			continue;
		}
		/* ; & && || | |& newline: another command follows */
		p->i++;
	}
}

cJSON *
shell_split(const char *cmd)
{
	struct sp p = { 0 };
	cJSON *o = cJSON_CreateObject();

	p.s = cmd;
	p.n = strlen(cmd);
	p.cmds = cJSON_CreateArray();
	p.redirs = cJSON_CreateArray();
	if (!o || !p.cmds || !p.redirs) {
		cJSON_Delete(o);
		cJSON_Delete(p.cmds);
		cJSON_Delete(p.redirs);
		return NULL;
	}
	parse_list(&p, 0);
	cJSON_AddItemToObject(o, "commands", p.cmds);
	cJSON_AddItemToObject(o, "redirects", p.redirs);
	cJSON_AddBoolToObject(o, "complex", p.complex);
	if (p.oom) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
