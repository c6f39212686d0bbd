/* shsplit.c: a shell command line split into its simple commands, for
 * permission rules.  It does not run or expand anything.
 *
 * Two readers.  The grammar (st_*, below) accepts only what it
 * understands completely, a small allow-listed part of bash, and lists
 * every command such a line runs; any byte or construct outside it makes
 * the line "complex".  For a complex line a lenient reader, which follows
 * as much of bash as it can, still lists the commands it finds, so that
 * deny rules see them (a best effort); no allow rule may trust it. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define SH_MAX_DEPTH 32
#define SH_MAX_WORDS 4096

struct sp {
	const char *s;
	size_t i, n;
	cJSON *cmds;      /* array of argv arrays */
	cJSON *redirs;    /* array of redirection targets */
	cJSON *outs;      /* the targets of output redirections */
	int complex;      /* something we could not follow */
	int expanded;     /* a word holds an expansion, a glob, a ~ */
	int depth;
	int oom;
	int strict;       /* read by the grammar: refuse what is not known */
	int dyncmd;       /* a command word known only when it runs */
	cJSON *written;   /* the grammar's commands as written, for the round trip */
	int cmdsub;       /* the grammar's $( ) nesting */
};

/* The words of one simple command, and which hold an expansion. */
struct words {
	char **w;
	unsigned char *dyn;
	size_t n, cap;
};

static int parse_list(struct sp *p, char close);
static void analyse(struct sp *p, struct words *v);
static void st_sub(struct sp *p, const char *text, size_t len);

static int
is_op(char c)
{
	return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
	       c == '<' || c == '>' || c == '\n';
}

/* bash's blanks are space and tab only: a carriage return is part of a
 * word (and makes the line complex, as every control character does). */
static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
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

/* Parses text as a command line of its own, into p's lists. */
static void
sub_parse(struct sp *p, const char *text, size_t len)
{
	struct sp sub = *p;

	if (p->depth >= SH_MAX_DEPTH) {
		p->complex = 1;
		return;
	}
	sub.s = text;
	sub.i = 0;
	sub.n = len;
	sub.depth = p->depth + 1;
	parse_list(&sub, 0);
	p->complex |= sub.complex;
	p->expanded |= sub.expanded;
	p->oom |= sub.oom;
}

/* A nested command, $(...), <(...), ( ... ), parsed as a list of its own. */
static int
nested(struct sp *p, char close)
{
	int rc;

	if (++p->depth > SH_MAX_DEPTH) {
		p->complex = 1;
		p->i = p->n;
		p->depth--;
		return -1;
	}
	rc = parse_list(p, close);
	p->depth--;
	return rc;
}

/* Backquotes: the text up to the closing ` is a command line once the
 * backslashes before \ ` $ (and " inside double quotes) are removed, as
 * bash does; so `ls \`rm x\`` runs rm x, and we see it. */
static int
backquote(struct sp *p, int in_dq)
{
	struct buf t = BUF_INIT(1u << 20);
	char c;

	p->i++;
	while (p->i < p->n && p->s[p->i] != '`') {
		c = p->s[p->i];
		if (c == '\\' && p->i + 1 < p->n &&
		    (p->s[p->i + 1] == '\\' || p->s[p->i + 1] == '`' ||
		     p->s[p->i + 1] == '$' || (in_dq && p->s[p->i + 1] == '"'))) {
			p->i++;
			c = p->s[p->i];
		}
		if (push(&t, c, p) < 0) {
			buf_free(&t);
			return -1;
		}
		p->i++;
	}
	if (p->i >= p->n) {
		p->complex = 1;
		buf_free(&t);
		return -1;
	}
	p->i++;
	sub_parse(p, t.data ? t.data : "", t.len);
	buf_free(&t);
	return 0;
}

static int
name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static int
name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Is s[0..len) a parameter whose plain expansion runs nothing: a name,
 * a positional parameter, or a special parameter?  With len_ok, also
 * ${#NAME}, the length. */
static int
plain_param(const char *s, size_t len, int len_ok)
{
	size_t k = 0;

	if (len_ok && len > 1 && s[0] == '#') {
		s++;
		len--;
	}
	if (!len)
		return 0;
	if (len == 1 && strchr("@*#?$!-0123456789", s[0]))
		return 1;
	if (isdigit((unsigned char)s[0])) {
		while (k < len && isdigit((unsigned char)s[k]))
			k++;
		return k == len;
	}
	if (!name_start(s[0]))
		return 0;
	while (k < len && name_char(s[k]))
		k++;
	return k == len;
}

/* Skips from the open character at j to its match, a "$" in the word. */
static int
skip_to(struct sp *p, size_t j, char open, char close, struct buf *w)
{
	int depth = 0;

	for (; j < p->n; j++) {
		if (p->s[j] == open)
			depth++;
		else if (p->s[j] == close && !--depth)
			break;
	}
	if (j >= p->n) {
		p->i = p->n;
		return -1;
	}
	p->i = j + 1;
	return push(w, '$', p) < 0 ? -1 : 1;
}

static int
hex(char c)
{
	return isdigit((unsigned char)c) ? c - '0'
	       : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10
	       : -1;
}

/* $'...' at p->i: decoded as bash does for the common escapes, so that
 * the deny rules see $'\x73udo' as sudo; the line stays complex (\u,
 * \c and the rest are kept as written). */
static int
ansi_c(struct sp *p, struct buf *w)
{
	const char *s = p->s;
	size_t j = p->i + 2;
	static const char from[] = "abefnrtv\\'\"?E", to[] = "\a\b\033\f\n\r\t\v\\'\"?\033";

	while (j < p->n && s[j] != '\'') {
		int c = (unsigned char)s[j++], k, d;
		const char *f;

		if (c == '\\' && j < p->n) {
			c = (unsigned char)s[j++];
			if ((f = strchr(from, c)) && c) {
				c = (unsigned char)to[f - from];
			} else if (c == 'x' && j < p->n && hex(s[j]) >= 0) {
				for (d = 0, k = 0; k < 2 && j < p->n &&
				     hex(s[j]) >= 0; k++)
					d = d * 16 + hex(s[j++]);
				c = d;
			} else if (c >= '0' && c <= '7') {
				for (d = c - '0', k = 1; k < 3 && j < p->n &&
				     s[j] >= '0' && s[j] <= '7'; k++)
					d = d * 8 + (s[j++] - '0');
				c = d & 0xff;
			} else if (push(w, '\\', p) < 0)
				return -1;
		}
		if (c && push(w, (char)c, p) < 0)
			return -1;
	}
	if (j >= p->n) {
		p->i = p->n;
		return -1;
	}
	p->i = j + 1;
	return 1;
}

/* $ at p->i, in a word or inside double quotes.  $(...) is split as a
 * list of its own; $NAME, ${NAME}, ${#NAME} and the special parameters
 * are kept as text.  Every other expansion may run code (${x@P},
 * ${!x}, ${a[$(cmd)]}, ${x:$(cmd)}, $[...], $((...))), or decodes text
 * ($'\x73udo'): complex.  Returns 1 when it took something, 0 when the $
 * is a plain character, -1 on error. */
static int
dollar(struct sp *p, struct buf *w, int *dynamic, int in_dq)
{
	const char *s = p->s;
	size_t j = p->i + 1, start;
	int depth;
	char c = j < p->n ? s[j] : '\0';

	if (c == '(') {
		*dynamic = 1;
		if (j + 1 < p->n && s[j + 1] == '(') {
			p->complex = 1; /* arithmetic: skipped */
			return skip_to(p, j, '(', ')', w);
		}
		/* $(<file) is the file's text: words nobody has read */
		for (j += 1; j < p->n && is_blank(s[j]); j++)
			;
		if (j < p->n && s[j] == '<')
			p->complex = 1;
		p->i += 2;
		return nested(p, ')') < 0 || push(w, '$', p) < 0 ? -1 : 1;
	}
	if (c == '{') {
		*dynamic = 1;
		start = j + 1;
		for (j = start, depth = 1; j < p->n; j++) {
			if (s[j] == '\\')
				j++;
			else if (s[j] == '{')
				depth++;
			else if (s[j] == '}' && !--depth)
				break;
		}
		if (j >= p->n) {
			p->complex = 1;
			p->i = p->n;
			return -1;
		}
		if (!plain_param(s + start, j - start, 1) ||
		    (j - start == 1 && s[start] == '_'))
			p->complex = 1; /* ${_}: the last word of the last command */
		if (buf_append(w, s + p->i, j + 1 - p->i) < 0) {
			p->oom = 1;
			return -1;
		}
		p->i = j + 1;
		return 1;
	}
	if (c == '[' || (!in_dq && (c == '\'' || c == '"'))) {
		/* $[ arithmetic ], $'ANSI-C', $"translated" */
		*dynamic = 1;
		p->complex = 1;
		if (c == '[')
			return skip_to(p, j, '[', ']', w);
		if (c == '\'')
			return ansi_c(p, w);
		p->i++; /* the quotes are read as plain ones */
		return push(w, '$', p) < 0 ? -1 : 1;
	}
	if (name_start(c)) {
		*dynamic = 1;
		while (j < p->n && name_char(s[j]))
			j++;
		if (j == p->i + 2 && c == '_')
			p->complex = 1; /* $_: the last word of the last command */
	} else if (c && strchr("@*#?$!-0123456789", c)) {
		*dynamic = 1;
		j++;
	} else
		return 0;
	if (buf_append(w, s + p->i, j - p->i) < 0) {
		p->oom = 1;
		return -1;
	}
	p->i = j;
	return 1;
}

/* Reads one word (quotes removed, expansions kept as text) into w.
 * *dynamic is set when the word holds an expansion ($x, $(...), `...`,
 * a glob, a leading ~, a brace expansion), whose value only the shell
 * knows. */
static int
word(struct sp *p, struct buf *w, int *dynamic)
{
	int k, brace = 0, brace_sep = 0;
	char c;

	while (p->i < p->n) {
		c = p->s[p->i];
		if (is_blank(c) || is_op(c))
			break;
		if (c == '\\') {
			p->i++;
			if (p->i >= p->n)
				break;
			if (p->s[p->i] != '\n' && push(w, p->s[p->i], p) < 0)
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
				if (c == '\\' && p->i + 1 < p->n &&
				    strchr("$`\"\\\n", p->s[p->i + 1])) {
					p->i++;
					if (p->s[p->i] != '\n' &&
					    push(w, p->s[p->i], p) < 0)
						return -1;
					p->i++;
				} else if (c == '`') {
					*dynamic = 1;
					if (backquote(p, 1) < 0 ||
					    push(w, '$', p) < 0)
						return -1;
				} else if (c == '$' &&
					   (k = dollar(p, w, dynamic, 1)) != 0) {
					if (k < 0)
						return -1;
				} else {
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
		} else if (c == '`') {
			*dynamic = 1;
			if (backquote(p, 0) < 0 || push(w, '$', p) < 0)
				return -1;
		} else if (c == '$' && (k = dollar(p, w, dynamic, 0)) != 0) {
			if (k < 0)
				return -1;
		} else {
			if (c == '*' || c == '?' || c == '[' ||
			    (c == '~' && !w->len))
				*dynamic = 1;
			/* {a,b} and {1..3}: one word becomes several */
			if (c == '{')
				brace = 1;
			else if (brace && (c == ',' || (c == '.' &&
				 p->i + 1 < p->n && p->s[p->i + 1] == '.')))
				brace_sep = 1;
			else if (c == '}' && brace_sep) {
				*dynamic = 1;
				p->complex = 1;
			}
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

/* NAME=value or NAME+=value. */
static int
assignment(const char *w)
{
	const char *q = w;

	if (!name_start(*q))
		return 0;
	while (name_char(*q))
		q++;
	return *q == '=' || (q[0] == '+' && q[1] == '=');
}

/* May the grammar let a command set NAME (w is NAME=value)?  bash gives
 * meaning to many upper-case names (PATH, IFS, PS4, BASH_ENV, SHELLOPTS,
 * BASH_CMDS...), and programs to others (GIT_PAGER, LD_PRELOAD): only
 * lower-case names are taken, and the locale's. */
static int
name_ok(const char *w)
{
	static const char *const locale[] = { "LANG", "LANGUAGE", "LC_ALL",
		"LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC",
		"LC_TIME", "TZ", "NO_COLOR", NULL };
	size_t len = strcspn(w, "=");
	size_t k;
	int i;

	if (w[len] != '=' || !len)
		return 0;
	for (i = 0; locale[i]; i++)
		if (strlen(locale[i]) == len && !strncmp(w, locale[i], len))
			return 1;
	if (!islower((unsigned char)w[0]))
		return 0;
	for (k = 1; k < len; k++)
		if (!islower((unsigned char)w[k]) &&
		    !isdigit((unsigned char)w[k]) && w[k] != '_')
			return 0;
	return 1;
}

/* Variables whose value bash expands, or runs, later: a prompt. */
static int
prompt_var(const char *w)
{
	static const char *const v[] = { "PS0", "PS1", "PS2", "PS3", "PS4",
		"PROMPT_COMMAND", NULL };
	size_t len = strcspn(w, "+=");
	int i;

	for (i = 0; v[i]; i++)
		if (strlen(v[i]) == len && !strncmp(w, v[i], len))
			return 1;
	return 0;
}

/* Variables bash gives the integer attribute: a value assigned to them is
 * evaluated as arithmetic, which expands a[$(cmd)]. */
static int
integer_var(const char *w)
{
	static const char *const v[] = { "RANDOM", "SRANDOM", "OPTIND",
		"HISTCMD", "SECONDS", "LINENO", "BASH_ARGV0", NULL };
	size_t len = strcspn(w, "+=");
	int i;

	for (i = 0; v[i]; i++)
		if (strlen(v[i]) == len && !strncmp(w, v[i], len))
			return 1;
	return 0;
}

static int
words_add(struct words *v, const char *s, size_t len, int dyn)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 8;
		char **w;
		unsigned char *d;

		if (cap > SH_MAX_WORDS)
			return 1;
		w = realloc(v->w, cap * sizeof *w);
		if (!w)
			return -1;
		v->w = w;
		d = realloc(v->dyn, cap);
		if (!d)
			return -1;
		v->dyn = d;
		v->cap = cap;
	}
	v->w[v->n] = malloc(len + 1);
	if (!v->w[v->n])
		return -1;
	memcpy(v->w[v->n], s, len);
	v->w[v->n][len] = '\0';
	v->dyn[v->n++] = (unsigned char)dyn;
	return 0;
}

static void
words_free(struct words *v)
{
	size_t k;

	for (k = 0; k < v->n; k++)
		free(v->w[k]);
	free(v->w);
	free(v->dyn);
	memset(v, 0, sizeof *v);
}

/* An output redirection's target as rules see it in "outputs": a
 * duplicated descriptor as &N. */
static void
add_redirect(struct sp *p, const char *op, const char *target)
{
	int output = strchr(op, '>') != NULL;
	int dup = op[strlen(op) - 1] == '&' &&
		  (!strcmp(target, "-") ||
		   (*target && strspn(target, "0123456789") == strlen(target)));
	cJSON *s;

	if (!cJSON_AddItemToArray(p->redirs, cJSON_CreateString(target)))
		p->oom = 1;
	if (!output)
		return;
	if (dup) {
		char *t = malloc(strlen(target) + 2);

		if (!t) {
			p->oom = 1;
			return;
		}
		t[0] = '&';
		memcpy(t + 1, target, strlen(target) + 1);
		s = cJSON_CreateString(t);
		free(t);
	} else
		s = cJSON_CreateString(target);
	if (!cJSON_AddItemToArray(p->outs, s))
		p->oom = 1;
}

/* One simple command; returns at an operator or the end. */
static int
simple(struct sp *p)
{
	struct buf w = BUF_INIT(1u << 20);
	struct words v = { 0 };
	char op[4] = "";
	int dynamic, added, rc = 0, timed = 0;
	size_t k;
	char c;

	for (;;) {
		while (p->i < p->n && is_blank(p->s[p->i]))
			p->i++;
		if (p->i >= p->n)
			break;
		c = p->s[p->i];
		/* a comment starts a word, after a blank or an operator
		 * (not after the ) of <(...): bash reads a word there) */
		if (c == '#' && !op[0] && (!p->i ||
		    strchr(" \t\n;&|(", p->s[p->i - 1]))) {
			while (p->i < p->n && p->s[p->i] != '\n')
				p->i++;
			break;
		}
		if (c == '&' && !op[0] && p->i + 1 < p->n &&
		    p->s[p->i + 1] == '>') {
			/* &>file, &>>file: both outputs */
			p->i += 2;
			k = p->i < p->n && p->s[p->i] == '>';
			p->i += k;
			memcpy(op, k ? ">>" : ">", k ? 3 : 2);
			continue;
		}
		if ((c == '<' || c == '>') && !op[0]) {
			if (p->i + 1 < p->n && p->s[p->i + 1] == '(') {
				/* process substitution <(...) >(...) */
				p->i += 2;
				if (nested(p, ')') < 0) {
					rc = -1;
					break;
				}
				continue;
			}
			if (c == '<' && p->i + 2 < p->n && p->s[p->i + 1] == '<' &&
			    p->s[p->i + 2] == '<') {
				/* a here-string: its word is the input */
				p->i += 3;
				memcpy(op, "<<<", sizeof "<<<");
				continue;
			}
			if (c == '<' && p->i + 1 < p->n && p->s[p->i + 1] == '<') {
				p->complex = 1; /* here-documents */
				p->i = p->n;
				break;
			}
			k = 0;
			op[k++] = c;
			p->i++;
			while (k < 2 && p->i < p->n && (p->s[p->i] == '>' ||
			       p->s[p->i] == '&' || p->s[p->i] == '|'))
				op[k++] = p->s[p->i++];
			op[k] = '\0';
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
		if (dynamic)
			p->expanded = 1;
		if (!w.data && buf_append(&w, "", 0) < 0) {
			p->oom = 1;
			rc = -1;
			break;
		}
		/* "2>file", "{fd}>file": the descriptor was a word; the >
		 * follows at once */
		if (!op[0] && p->i < p->n &&
		    (p->s[p->i] == '>' || p->s[p->i] == '<') && w.len &&
		    (strspn(w.data, "0123456789") == w.len ||
		     (w.data[0] == '{' && w.data[w.len - 1] == '}')))
			continue;
		if (op[0]) {
			if (strcmp(op, "<<<"))
				add_redirect(p, op, w.data);
			op[0] = '\0';
			continue;
		}
		if (!v.n && (reserved(w.data) || !strcmp(w.data, "{") ||
			     !strcmp(w.data, "}") || !strcmp(w.data, "!") ||
			     !strcmp(w.data, "time") ||
			     (timed && !strcmp(w.data, "-p")))) {
			/* keywords: the command follows (time ! sudo id) */
			p->complex = 1;
			timed = !strcmp(w.data, "time");
			continue;
		}
		timed = 0;
		if (p->i < p->n && p->s[p->i] == '(' && w.len &&
		    w.data[w.len - 1] == '=' && assignment(w.data))
			p->complex = 1; /* NAME=(...): subscripts are arithmetic */
		if (!v.n && p->i + 1 < p->n && p->s[p->i] == '(' &&
		    p->s[p->i + 1] == ')') {
			p->complex = 1; /* a function definition */
			p->i = p->n;
			break;
		}
		added = words_add(&v, w.data, w.len, dynamic);
		if (added > 0)
			p->complex = 1; /* too many words to follow */
		else if (added < 0) {
			p->oom = 1;
			rc = -1;
			break;
		}
	}
	if (op[0])
		p->complex = 1; /* a redirection with no target */
	analyse(p, &v);
	words_free(&v);
	buf_free(&w);
	return rc;
}

/* --- what a command runs ------------------------------------------------ */

static const char *
base(const char *w)
{
	const char *s = strrchr(w, '/');

	return s ? s + 1 : w;
}

static int
in_list(const char *w, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(w, *list))
			return 1;
	return 0;
}

/* The shells whose -c string is read as a command line. */
static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh",
	"mksh", "ash", "yash", "posh", "rbash", NULL };

/* A program that runs the command given in its arguments. */
struct wrapper {
	const char *name;
	const char *argopts;        /* short options taking an argument */
	const char *flags;          /* short options taking none */
	const char *const *longarg; /* long options taking an argument */
	const char *const *longflag;
	int operands;               /* operands before the command */
	int assigns;                /* NAME=value words before the command */
	int digits;                 /* -NUM is an option (nice) */
};

static const char *const env_long[] = { "unset", "chdir", NULL };
static const char *const env_flag[] = { "ignore-environment", "null",
	"debug", "default-signal", "ignore-signal", "block-signal",
	"list-signal-handling", NULL };
static const char *const nice_long[] = { "adjustment", NULL };
static const char *const timeout_long[] = { "signal", "kill-after", NULL };
static const char *const timeout_flag[] = { "foreground",
	"preserve-status", "verbose", NULL };
static const char *const stdbuf_long[] = { "input", "output", "error", NULL };
static const char *const xargs_long[] = { "arg-file", "delimiter",
	"max-args", "max-procs", "max-chars", "process-slot-var", NULL };
static const char *const xargs_flag[] = { "null", "interactive",
	"no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "eof",
	"replace", "max-lines", NULL };
static const char *const sudo_long[] = { "close-from", "chdir", "group",
	"prompt", "chroot", "role", "type", "command-timeout", "other-user",
	"user", "host", NULL };
static const char *const sudo_flag[] = { "askpass", "background", "bell",
	"preserve-env", "edit", "help", "set-home", "login",
	"remove-timestamp", "reset-timestamp", "list", "non-interactive",
	"preserve-groups", "stdin", "shell", "version", "validate", NULL };
static const char *const setsid_flag[] = { "ctty", "fork", "wait", NULL };
static const char *const chroot_long[] = { "userspec", "groups", NULL };
static const char *const chroot_flag[] = { "skip-chdir", NULL };
static const char *const flock_long[] = { "conflict-exit-code", "timeout",
	"wait", NULL };
static const char *const flock_flag[] = { "shared", "exclusive", "unlock",
	"nonblock", "nb", "close", "no-fork", "verbose", NULL };
static const char *const unshare_long[] = { "propagation", "setgroups",
	"root", "wd", "setuid", "setgid", "monotonic", "boottime", "map-user",
	"map-group", "map-users", "map-groups", NULL };
static const char *const unshare_flag[] = { "mount", "uts", "ipc", "net",
	"pid", "user", "cgroup", "time", "fork", "kill-child",
	"map-root-user", "map-current-user", "mount-proc", "keep-caps",
	"map-auto", NULL };

static const struct wrapper wrappers[] = {
	{ "command", "", "pvV", NULL, NULL, 0, 0, 0 },
	{ "builtin", "", "", NULL, NULL, 0, 0, 0 },
	{ "exec", "a", "cl", NULL, NULL, 0, 0, 0 },
	{ "env", "uC", "i0v", env_long, env_flag, 0, 1, 0 },
	{ "time", "of", "pvaq", NULL, NULL, 0, 0, 0 },
	{ "nice", "n", "", nice_long, NULL, 0, 0, 1 },
	{ "nohup", "", "", NULL, NULL, 0, 0, 0 },
	{ "timeout", "sk", "v", timeout_long, timeout_flag, 1, 0, 0 },
	{ "stdbuf", "ioe", "", stdbuf_long, NULL, 0, 0, 0 },
	{ "xargs", "aEILnPsd", "0opriltxe", xargs_long, xargs_flag, 0, 0, 0 },
	{ "busybox", "", "", NULL, NULL, 0, 0, 0 },
	{ "sudo", "CDgpRrTtUu", "AbEeHhiKklnPSsVv", sudo_long, sudo_flag, 0, 1, 0 },
	{ "doas", "uC", "Lns", NULL, NULL, 0, 0, 0 },
	{ "setsid", "", "cfw", NULL, setsid_flag, 0, 0, 0 },
	{ "chroot", "", "", chroot_long, chroot_flag, 1, 0, 0 },
	{ "ionice", "cn", "t", NULL, NULL, 0, 0, 0 },
	{ "taskset", "", "ac", NULL, NULL, 1, 0, 0 },
	{ "flock", "Ew", "sxunoFv", flock_long, flock_flag, 1, 0, 0 },
	{ "unshare", "SGRw", "muinpUCTfrc", unshare_long, unshare_flag, 0, 0, 0 },
	{ "chrt", "", "abdfiormRv", NULL, NULL, 1, 0, 0 },
	{ "prlimit", "p", "", NULL, NULL, 0, 0, 0 },
	{ NULL, NULL, NULL, NULL, NULL, 0, 0, 0 },
};

/* A long option of wr, by its name or an unambiguous abbreviation:
 * 1 when it takes a value, 0 when it takes none, -1 when unknown or
 * ambiguous. */
static int
long_opt(const char *opt, const struct wrapper *wr)
{
	const char *const *l;
	size_t len = strlen(opt);
	int found = -1, n = 0, pass;

	for (pass = 0; pass < 2; pass++)
		for (l = pass ? wr->longflag : wr->longarg; l && *l; l++) {
			if (!strcmp(*l, opt))
				return !pass;
			if (len && !strncmp(*l, opt, len)) {
				found = !pass;
				n++;
			}
		}
	return n == 1 ? found : -1;
}

/* When argv[i] is a wrapper, the index of the command it runs; 0 when it
 * is none, or runs none.  An option we do not know makes the line
 * complex: it might take the command's place as its argument. */
static size_t
unwrap(struct sp *p, const struct words *v, size_t i, const char *name)
{
	const struct wrapper *wr;
	size_t k = i + 1;
	int operands, xargs = !strcmp(name, "xargs");
	const char *repl = NULL; /* xargs -I: the string input replaces */

	for (wr = wrappers; wr->name && strcmp(wr->name, name); wr++)
		;
	if (!wr->name)
		return 0;
	operands = wr->operands;
	if (!strcmp(name, "command") && k < v->n && v->w[k][0] == '-' &&
	    strpbrk(v->w[k], "vV"))
		return 0; /* command -v NAME only says what NAME is */
	while (k < v->n) {
		const char *a = v->w[k];

		if (v->dyn[k]) {
			p->complex = 1; /* an option or a name we cannot know */
			return 0;
		}
		if (!strcmp(a, "--")) {
			k++;
			/* env -- - cmd: the - is still -i */
			if (!strcmp(name, "env") && k < v->n &&
			    !strcmp(v->w[k], "-")) {
				p->complex = 1;
				k++;
			}
			break;
		}
		if (wr->assigns && assignment(a)) {
			if (p->strict && !name_ok(a))
				p->complex = 1; /* env GIT_PAGER=cmd git log */
			k++;
			continue;
		}
		if (wr->assigns && strchr(a, '=') && a[0] != '-') {
			/* env 'a-=1' cmd: env takes it as an assignment */
			p->complex = 1;
			k++;
			continue;
		}
		if (!strcmp(a, "-") && !strcmp(wr->name, "env")) {
			if (p->strict)
				p->complex = 1; /* env -- - cmd: - is -i */
			k++;
			continue;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			size_t len = strcspn(a + 2, "=");
			char opt[64];

			if (len >= sizeof opt) {
				p->complex = 1;
				k++;
				continue;
			}
			memcpy(opt, a + 2, len);
			opt[len] = '\0';
			if (xargs && len >= 3 && !strncmp("replace", opt, len))
				repl = a[2 + len] ? a + 3 + len : "{}";
			/* getopt_long takes any unambiguous abbreviation */
			switch (long_opt(opt, wr)) {
			case 1:
				if (!a[2 + len])
					k++; /* the value is the next word */
				break;
			case 0:
				break;
			default:
				/* env --split-string, an ambiguous prefix, one
				 * we do not know: where the command starts is
				 * unknown */
				p->complex = 1;
				return 0;
			}
			k++;
			continue;
		}
		if (wr->digits && strspn(a + 1, "0123456789") == strlen(a + 1)) {
			k++;
			continue;
		}
		{
			const char *o;

			for (o = a + 1; *o; o++) {
				if (xargs && *o == 'i') {
					repl = o[1] ? o + 1 : "{}";
					break; /* -i[R]: the rest is its argument */
				}
				if (strchr(wr->argopts, *o)) {
					if (xargs && *o == 'I')
						repl = o[1] ? o + 1 : k + 1 < v->n
						       ? v->w[k + 1] : NULL;
					if (!o[1])
						k++; /* the argument is the next word */
					break;
				}
				if (!strchr(wr->flags, *o))
					p->complex = 1; /* env -S, ... */
			}
		}
		k++;
	}
	while (operands-- > 0 && k < v->n) {
		if (p->strict && v->w[k][0] == '-')
			p->complex = 1;
		k++;
	}
	if (k >= v->n)
		return 0;
	/* an expansion among the wrapper's arguments may vanish or split
	 * (nice -n $x 5 ls): where the command starts is not known */
	if (p->strict) {
		size_t j;

		for (j = i + 1; j <= k; j++)
			if (v->dyn[j])
				p->complex = 1;
	}
	if (!strcmp(name, "flock") && k + 1 < v->n &&
	    (!strcmp(v->w[k], "-c") || !strncmp(v->w[k], "--command", 9))) {
		/* flock f -c CMD: CMD is a line for sh -c */
		p->complex = 1;
		if (!p->strict && !v->dyn[k + 1])
			sub_parse(p, v->w[k + 1], strlen(v->w[k + 1]));
		return 0;
	}
	/* flock f -c CMD, env -- -i: an option where the command should be */
	if (p->strict && (v->w[k][0] == '-' || strchr(v->w[k], '=')))
		p->complex = 1;
	if (repl && *repl) {
		size_t j;
		int shell = in_list(base(v->w[k]), shells);

		/* xargs -I{} {}, xargs -I{} sh -c {}: the command comes
		 * from the input */
		for (j = k; j < v->n; j++)
			if ((j == k || shell) && strstr(v->w[j], repl)) {
				p->dyncmd = 1;
				p->complex = 1;
			}
	}
	return k;
}

/* sh -c STRING: the string is a command line to split too. */
static void
shell_c(struct sp *p, const struct words *v, size_t i, const char *name)
{
	static const char *const longarg[] = { "--rcfile", "--init-file", NULL };
	size_t k;
	int c = 0;

	if (!in_list(name, shells))
		return;
	for (k = i + 1; k < v->n; k++) {
		const char *a = v->w[k];

		if (v->dyn[k]) {
			p->complex = 1;
			return;
		}
		if (!strcmp(a, "--") || !strcmp(a, "-")) {
			k++;
			break;
		}
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break;
		/* a login or interactive shell, or one given a file to
		 * start with, runs the commands of its start-up files */
		if (p->strict && (in_list(a, longarg) ||
		    !strncmp(a, "--login", 7) || !strncmp(a, "--interactive", 13) ||
		    (a[1] != '-' && strpbrk(a + 1, "il"))))
			p->complex = 1;
		if (in_list(a, longarg))
			k++;
		else if (a[1] != '-') {
			if (strchr(a + 1, 'c'))
				c = 1;
			if (strchr(a + 1, 'o') || strchr(a + 1, 'O'))
				k++;
		}
	}
	if (c && k >= v->n) {
		/* xargs sh -c: the command string comes from the input */
		p->complex = 1;
		p->dyncmd = 1;
		return;
	}
	if (!c)
		return;
	if (p->strict && strstr(v->w[k], "{}"))
		p->complex = 1; /* find -exec sh -c 'x {}': a file's name */
	if (v->dyn[k])
		p->complex = 1;
	else if (p->strict)
		st_sub(p, v->w[k], strlen(v->w[k]));
	else
		sub_parse(p, v->w[k], strlen(v->w[k]));
}

/* Builtins whose arguments run code the splitter cannot see. */
static void
builtin_check(struct sp *p, const struct words *v, size_t i,
	      const char *name)
{
	/* eval runs its arguments, trap and the others store code for
	 * later, let is arithmetic */
	static const char *const opaque[] = { "eval", "let", "trap", "alias",
		"enable", "compgen", "complete", "fc", "bind", "hash", NULL };
	/* they take variable names: a[$(cmd)] runs cmd, so does a value
	 * given to an integer variable */
	static const char *const names[] = { "declare", "typeset", "local",
		"export", "readonly", "read", "mapfile", "readarray", "printf",
		"unset", "getopts", "wait", "test", "[", NULL };
	static const char *const decl[] = { "declare", "typeset", "local",
		"export", "readonly", NULL };
	size_t k;

	if ((!strcmp(name, "mapfile") || !strcmp(name, "readarray")) &&
	    !p->strict) {
		/* -C CALLBACK: code run for each line read */
		for (k = i + 1; k + 1 < v->n; k++)
			if (!strcmp(v->w[k], "-C")) {
				p->complex = 1;
				sub_parse(p, v->w[k + 1], strlen(v->w[k + 1]));
			}
	}
	if (in_list(name, opaque)) {
		p->complex = 1;
		if (!strcmp(name, "eval")) {
			struct buf t = BUF_INIT(1u << 20);

			for (k = i + 1; k < v->n; k++)
				if ((k > i + 1 && buf_putc(&t, ' ') < 0) ||
				    buf_append(&t, v->w[k], strlen(v->w[k])) < 0)
					p->oom = 1;
			if (t.data)
				sub_parse(p, t.data, t.len);
			buf_free(&t);
		}
		return;
	}
	if (!in_list(name, names))
		return;
	if (!strcmp(name, "printf") || !strcmp(name, "test") ||
	    !strcmp(name, "[")) {
		/* only printf -v NAME and test -v NAME take a name */
		for (k = i + 1; k < v->n; k++)
			if (!strncmp(v->w[k], "-v", 2) ||
			    !strcmp(v->w[k], "-R"))
				break;
		if (k >= v->n)
			return;
	}
	for (k = i + 1; k < v->n; k++) {
		const char *a = v->w[k];

		if (strchr(a, '[') || integer_var(a))
			p->complex = 1;
		if (in_list(name, decl) && (a[0] == '-' || a[0] == '+') &&
		    strpbrk(a + 1, "in"))
			p->complex = 1; /* -i integer, -n name reference */
	}
}

/* Programs that run a command in a way not followed here (a string for
 * a shell, a command on another host, under a tracer): complex. */
static int
runner(const char *name)
{
	static const char *const r[] = { "watch", "script", "parallel",
		"strace", "ltrace", "gdb", "valgrind", "systemd-run", "nsenter",
		"firejail", "bwrap", "proot", "fakeroot", "fakechroot", "ssh",
		"expect", "tmux", "screen", "at", "batch", "dbus-run-session",
		"xvfb-run", "catchsegv", "setarch", "linux32", "linux64",
		"numactl", "cgexec", "systemd-nspawn", "toolbox", "distrobox",
		"podman", "docker", "kubectl", "nix-shell", "direnv", "su",
		"sg", "runuser", "setpriv", "capsh", "ld.so", NULL };

	return in_list(name, r) || !strncmp(name, "ld-linux", 8);
}

static void
emit(struct sp *p, struct words *v, size_t from)
{
	cJSON *argv = cJSON_CreateArray();
	size_t k;

	if (!argv) {
		p->oom = 1;
		return;
	}
	for (k = from; k < v->n; k++)
		if (!cJSON_AddItemToArray(argv, cJSON_CreateString(v->w[k])))
			p->oom = 1;
	if (!cJSON_AddItemToArray(p->cmds, argv)) {
		cJSON_Delete(argv);
		p->oom = 1;
	}
}

static void
emit_echo(struct sp *p)
{
	struct words e = { 0 };

	if (words_add(&e, "echo", 4, 0))
		p->oom = 1;
	else
		emit(p, &e, 0);
	words_free(&e);
}

/* The grammar follows a builtin only when its arguments are inert; any
 * other (declare, read, mapfile, set, shopt, source, exec, eval, trap,
 * let, ...) stores or runs code, or changes how bash reads what follows.
 * A name bash may make a builtin later is a program to it today: the
 * list is bash 5.2's (enable -a) and its reserved words. */
static void
builtin_allowed(struct sp *p, const struct words *v, size_t i)
{
	static const char *const bash[] = { ".", ":", "[", "alias", "bg",
		"bind", "break", "builtin", "caller", "cd", "command",
		"compgen", "complete", "compopt", "continue", "declare", "dirs",
		"disown", "echo", "enable", "eval", "exec", "exit", "export",
		"false", "fc", "fg", "getopts", "hash", "help", "history",
		"jobs", "kill", "let", "local", "logout", "mapfile", "popd",
		"printf", "pushd", "pwd", "read", "readarray", "readonly",
		"return", "set", "shift", "shopt", "source", "suspend", "test",
		"times", "trap", "true", "type", "typeset", "ulimit", "umask",
		"unalias", "unset", "wait", "if", "then", "else", "elif", "fi",
		"case", "esac", "for", "select", "while", "until", "do", "done",
		"in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
		NULL };
	static const char *const inert[] = { "cd", "pwd", "echo", "printf",
		"true", "false", ":", "test", "[", "type", "command", "exit",
		NULL };
	const char *w = v->w[i];
	size_t k;

	if (!in_list(w, bash))
		return;
	if (!in_list(w, inert)) {
		p->complex = 1;
		return;
	}
	for (k = i + 1; k < v->n; k++) {
		const char *a = v->w[k];

		/* printf -v NAME, test -v NAME: a[$(cmd)] runs cmd */
		if ((!strcmp(w, "printf") && !strncmp(a, "-v", 2)) ||
		    ((!strcmp(w, "test") || !strcmp(w, "[")) &&
		     (!strcmp(a, "-v") || !strcmp(a, "-R"))))
			p->complex = 1;
	}
	/* command NAME runs NAME (unwrap follows it); command -v, -V only
	 * say what it is; any other option is not known */
	if (!strcmp(w, "command") && i + 1 < v->n && v->w[i + 1][0] == '-' &&
	    strcmp(v->w[i + 1], "-v") && strcmp(v->w[i + 1], "-V"))
		p->complex = 1;
}

/* find -exec CMD ... ; (and -execdir, -ok, -okdir): each CMD is a
 * command of the line, seen through wrappers as any other. */
static void
find_exec(struct sp *p, const struct words *v, size_t i)
{
	size_t k, j;

	for (k = i + 1; k < v->n; k++) {
		struct words sub = { 0 };

		if (strcmp(v->w[k], "-exec") && strcmp(v->w[k], "-execdir") &&
		    strcmp(v->w[k], "-ok") && strcmp(v->w[k], "-okdir"))
			continue;
		for (j = k + 1; j < v->n && strcmp(v->w[j], ";") &&
		     strcmp(v->w[j], "+"); j++)
			if (words_add(&sub, v->w[j], strlen(v->w[j]),
				      v->dyn[j]) != 0)
				p->oom = 1;
		if (sub.n && strstr(sub.w[0], "{}")) {
			p->dyncmd = 1; /* find -exec {}: a file names the command */
			p->complex = 1;
		}
		if (sub.n)
			analyse(p, &sub);
		words_free(&sub);
		k = j;
	}
}

/* A simple command goes to "commands" as written, assignments included;
 * then, each on its own, the command it runs after its assignments, and
 * the one every wrapper runs: "A=1 env sudo rm x" gives
 * ["A=1","env","sudo","rm","x"], ["env","sudo","rm","x"],
 * ["sudo","rm","x"], ["rm","x"]. */
static void
analyse(struct sp *p, struct words *v)
{
	size_t i = 0, j, k;
	const char *name;

	if (!v->n)
		return;
	emit(p, v, 0);
	for (k = 0; k < v->n && assignment(v->w[k]); k++) {
		/* values bash runs later as code: PS4='$(cmd)'; set -x */
		if (!p->strict && prompt_var(v->w[k])) {
			const char *val = strchr(v->w[k], '=') + 1;

			p->complex = 1;
			sub_parse(p, val, strlen(val));
		}
		if (integer_var(v->w[k]) &&
		    strspn(strchr(v->w[k], '=') + 1, "0123456789") !=
		    strlen(strchr(v->w[k], '=') + 1))
			p->complex = 1;
	}
	i = k;
	while (i < v->n) {
		if (i > 0)
			emit(p, v, i);
		if (v->dyn[i]) {
			/* the command itself is unknown; a parameter or a
			 * substitution (kept as $) names it only when it runs */
			p->complex = 1;
			if (strchr(v->w[i], '$'))
				p->dyncmd = 1;
			return;
		}
		name = base(v->w[i]);
		if (p->strict)
			builtin_allowed(p, v, i);
		if (runner(name))
			p->complex = 1;
		if (!strcmp(name, "find"))
			find_exec(p, v, i);
		builtin_check(p, v, i, name);
		j = unwrap(p, v, i, name);
		if (!j) {
			shell_c(p, v, i, name);
			if (!strcmp(name, "xargs"))
				emit_echo(p); /* xargs with no command runs echo */
			return;
		}
		i = j;
	}
}

/* A list of commands joined by operators, up to close (or the end). */
static int
parse_list(struct sp *p, char close)
{
	size_t j;
	char c;

	for (;;) {
		if (simple(p) < 0)
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
			if (p->i < p->n && p->s[p->i] == '(')
				p->complex = 1; /* (( arithmetic )) */
			for (j = p->i; j < p->n && is_blank(p->s[j]); j++)
				;
			if (j < p->n && p->s[j] == ')')
				p->complex = 1; /* "f ()": a function */
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

/* --- the grammar ---------------------------------------------------------
 *
 * What the splitter understands completely; anything else makes the line
 * complex (hook-perm(1), "The grammar", says the same in prose):
 *
 *   line     = list
 *   list     = [cmd] { sep [cmd] }, where a command must follow && || |
 *   sep      = ";" | "&&" | "||" | "|" | newline
 *   cmd      = { assign } { word | redir }, at least one of them
 *   assign   = name "=" [ value ], name lower-case ([a-z][a-z0-9_]*) or a
 *              locale name (LANG, LC_*, TZ, NO_COLOR), unquoted
 *   word     = [ "~" ] { plain | \c | '...' | "..." | param | $( list ) },
 *              the ~ alone or before a /
 *   plain    = [A-Za-z0-9_./,:=+%@^-], and ~ after one of them but = and :
 *   param    = $name | ${name} | $digit | $? | $# | $$  (not $_)
 *   "..."    = characters but ` and !, with \\ \$ \" \` and param, $( )
 *   redir    = [digit] ( "<" | ">" | ">>" ) target | [digit] ">&" digit
 *   target   = a word with no expansion that does not start with "-"
 *   comment  = "#" after a blank or a newline, outside $( ), to the end
 *              of the line
 *
 * A backslash-newline is taken only after a blank, where bash's removal
 * of it leaves a blank.  The first word of a command may not be a
 * reserved word ('{' and 'time' quoted too), an expansion, or hold a "=";
 * a word of digits read as a descriptor (2>x) must be unquoted.  Then the
 * commands go through analyse(): builtins by allow-list, wrappers only
 * when each of their arguments is classified. */

static int
st_fail(struct sp *p)
{
	p->complex = 1;
	return -1;
}

static int
st_plain(char c)
{
	return c && (isalnum((unsigned char)c) || strchr("_./,:=+%@^-", c));
}

/* Where a word may end: a blank, a newline, an operator of the grammar,
 * or a ) closing $( ). */
static int
st_end_at(const struct sp *p, size_t i)
{
	char c;

	if (i >= p->n)
		return 1;
	c = p->s[i];
	return is_blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' ||
	       c == '<' || c == '>' || (c == ')' && p->cmdsub > 0);
}

static int
st_end(const struct sp *p)
{
	return st_end_at(p, p->i);
}

/* Blanks, and a backslash-newline after a blank or a newline. */
static void
st_blanks(struct sp *p)
{
	while (p->i < p->n) {
		if (is_blank(p->s[p->i]))
			p->i++;
		else if (p->s[p->i] == '\\' && p->i + 1 < p->n &&
			 p->s[p->i + 1] == '\n' && p->i > 0 &&
			 (is_blank(p->s[p->i - 1]) || p->s[p->i - 1] == '\n'))
			p->i += 2;
		else
			break;
	}
}

static int st_list(struct sp *p);

/* $ at p->i: a parameter or $( list ), kept as text ($( ) as "$"). */
static int
st_dollar(struct sp *p, struct buf *w)
{
	const char *s = p->s;
	size_t j = p->i + 1, k;
	char c = j < p->n ? s[j] : '\0';

	if (c == '(') {
		int r;

		if ((j + 1 < p->n && s[j + 1] == '(') || p->depth >= SH_MAX_DEPTH)
			return st_fail(p);
		p->i = j + 1;
		p->depth++;
		p->cmdsub++;
		r = st_list(p);
		p->depth--;
		p->cmdsub--;
		if (r || p->i >= p->n || s[p->i] != ')')
			return st_fail(p);
		p->i++;
		return push(w, '$', p);
	}
	if (c == '{') {
		/* ${name}, ${#name} */
		k = j + 1 + (j + 1 < p->n && s[j + 1] == '#');
		if (k >= p->n || !name_start(s[k]))
			return st_fail(p);
		while (k < p->n && name_char(s[k]))
			k++;
		if (k >= p->n || s[k] != '}' || (k == j + 2 && s[j + 1] == '_'))
			return st_fail(p);
		k++;
	} else if (name_start(c)) {
		for (k = j; k < p->n && name_char(s[k]); k++)
			;
		if (k == j + 1 && c == '_')
			return st_fail(p); /* $_: the last word of the last command */
	} else if ((isdigit((unsigned char)c) || c == '?' ||
		   c == '#' || c == '$' || c == '@' || c == '*'))
		k = j + 1;
	else
		return st_fail(p);
	if (buf_append(w, s + p->i, k - p->i) < 0) {
		p->oom = 1;
		return -1;
	}
	p->i = k;
	return 0;
}

/* One word of the grammar into w, its quotes removed.  *dyn when it
 * holds an expansion, *quoted when some of it was quoted, *plain the
 * length of its unquoted start. */
static int
st_word(struct sp *p, struct buf *w, int *dyn, int *quoted, size_t *plain)
{
	const char *s = p->s;
	int lead = 1;
	char c;

	*dyn = *quoted = 0;
	*plain = 0;
	/* ~ and ~/...: the home directory, an expansion that runs nothing
	 * (~user, ~+, ~- are not taken) */
	if (s[p->i] == '~' && (st_end_at(p, p->i + 1) || s[p->i + 1] == '/')) {
		if (push(w, '~', p) < 0)
			return -1;
		p->i++;
		*dyn = 1;
		lead = 0;
	}
	/* {} alone is a word (find -exec's), no brace expansion */
	if (p->i + 1 < p->n && s[p->i] == '{' && s[p->i + 1] == '}') {
		p->i += 2;
		if (!st_end(p) || buf_append(w, "{}", 2) < 0)
			return st_fail(p);
		return 0;
	}
	while (p->i < p->n) {
		c = s[p->i];
		/* a ~ within a word, not after = or : (HEAD~1): no tilde
		 * expansion */
		if (st_plain(c) || (c == '~' && lead && w->len &&
		    w->data[w->len - 1] != '=' && w->data[w->len - 1] != ':')) {
			if (push(w, c, p) < 0)
				return -1;
			p->i++;
			if (lead)
				*plain = w->len;
			continue;
		}
		lead = 0;
		if (c == '\\') {
			/* an escaped printable character; a backslash-newline
			 * inside a word is not taken */
			if (p->i + 1 >= p->n || s[p->i + 1] < 0x20 ||
			    s[p->i + 1] > 0x7e)
				return st_fail(p);
			if (push(w, s[p->i + 1], p) < 0)
				return -1;
			p->i += 2;
			*quoted = 1;
		} else if (c == '\'') {
			for (p->i++; p->i < p->n && s[p->i] != '\''; p->i++)
				if (push(w, s[p->i], p) < 0)
					return -1;
			if (p->i >= p->n)
				return st_fail(p);
			p->i++;
			*quoted = 1;
		} else if (c == '"') {
			*quoted = 1;
			for (p->i++; p->i < p->n && s[p->i] != '"';) {
				c = s[p->i];
				if (c == '\\' && p->i + 1 < p->n &&
				    strchr("$`\"\\", s[p->i + 1])) {
					if (push(w, s[p->i + 1], p) < 0)
						return -1;
					p->i += 2;
				} else if (c == '\\' && p->i + 1 < p->n &&
					   s[p->i + 1] == '\n') {
					return st_fail(p);
				} else if (c == '`' || c == '!') {
					return st_fail(p);
				} else if (c == '$') {
					*dyn = 1;
					if (st_dollar(p, w) < 0)
						return -1;
				} else {
					if (push(w, c, p) < 0)
						return -1;
					p->i++;
				}
			}
			if (p->i >= p->n)
				return st_fail(p);
			p->i++;
		} else if (c == '$') {
			*dyn = 1;
			if (st_dollar(p, w) < 0)
				return -1;
		} else
			break;
	}
	/* a glob, a brace, ~, (, #, ` or a byte outside ASCII: not known */
	if (!st_end(p))
		return st_fail(p);
	if (!w->data && buf_append(w, "", 0) < 0) {
		p->oom = 1;
		return -1;
	}
	return 0;
}

/* A redirection at p->i (at its descriptor's digit, < or >). */
static int
st_redir(struct sp *p)
{
	const char *s = p->s;
	struct buf w = BUF_INIT(1u << 20);
	char op[3] = "";
	int dyn, quoted, rc = -1;
	size_t plain;

	if (isdigit((unsigned char)s[p->i]))
		p->i++;
	op[0] = s[p->i++];
	if (p->i < p->n && op[0] == '>' && (s[p->i] == '>' || s[p->i] == '&'))
		op[1] = s[p->i++];
	if (!strcmp(op, ">&")) {
		/* N>&M with a digit: a duplicated descriptor */
		if (p->i >= p->n || !isdigit((unsigned char)s[p->i]))
			return st_fail(p);
		op[1] = s[p->i++];
		if (!st_end(p))
			return st_fail(p);
		op[2] = '\0';
		add_redirect(p, ">&", op + 1);
		return 0;
	}
	/* <<, <&, <>, <(, >|, >(, >>&, >>> ... */
	if (p->i < p->n && strchr("<>&|(", s[p->i]))
		return st_fail(p);
	st_blanks(p);
	if (st_word(p, &w, &dyn, &quoted, &plain) < 0)
		goto out;
	/* a target the shell expands, or an option to a reader (<&-) */
	if (dyn || !w.len || w.data[0] == '-') {
		st_fail(p);
		goto out;
	}
	add_redirect(p, op, w.data);
	rc = 0;
out:
	buf_free(&w);
	return rc;
}

/* A word of the grammar that bash would read otherwise in a command's
 * first place, once unquoted: a reserved word, { or time. */
static int
st_keyword(const char *w)
{
	return reserved(w) || !strcmp(w, "{") || !strcmp(w, "}") ||
	       !strcmp(w, "!") || !strcmp(w, "time") || !strcmp(w, "in") ||
	       !strcmp(w, "[[") || !strcmp(w, "]]");
}

static int
st_written(struct sp *p, const struct words *v)
{
	cJSON *a;
	size_t k;

	if (!p->written)
		return 0;
	a = cJSON_CreateArray();
	if (!a || !cJSON_AddItemToArray(p->written, a)) {
		cJSON_Delete(a);
		p->oom = 1;
		return -1;
	}
	for (k = 0; k < v->n; k++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(v->w[k]))) {
			p->oom = 1;
			return -1;
		}
	return 0;
}

/* One simple command: 1 when it had a word or a redirection, 0 when
 * empty, -1 when outside the grammar. */
static int
st_simple(struct sp *p)
{
	const char *s = p->s;
	struct buf w = BUF_INIT(1u << 20);
	struct words v = { 0 };
	int dyn, quoted, assigns = 1, items = 0, rc = -1, added;
	size_t plain, k;
	char c;

	for (;;) {
		st_blanks(p);
		if (p->i >= p->n)
			break;
		c = s[p->i];
		if (c == '\n' || c == ';' || c == '&' || c == '|' || c == ')')
			break;
		if (c == '#') {
			if (p->cmdsub > 0 || !p->i || !(is_blank(s[p->i - 1]) ||
			    s[p->i - 1] == '\n'))
				goto fail;
			while (p->i < p->n && s[p->i] != '\n')
				p->i++;
			break;
		}
		for (k = p->i; k < p->n && isdigit((unsigned char)s[k]); k++)
			;
		if (c == '<' || c == '>' || (k == p->i + 1 && k < p->n &&
		    (s[k] == '<' || s[k] == '>'))) {
			if (st_redir(p) < 0)
				goto fail;
			items++;
			continue;
		}
		if (k > p->i + 1 && k < p->n && (s[k] == '<' || s[k] == '>'))
			goto fail; /* 10>x: not in the grammar */
		buf_reset(&w);
		if (st_word(p, &w, &dyn, &quoted, &plain) < 0)
			goto fail;
		/* '2'>x: a quoted word of digits before a redirection */
		if (p->i < p->n && (s[p->i] == '<' || s[p->i] == '>') &&
		    w.len && strspn(w.data, "0123456789") == w.len)
			goto fail;
		if (dyn)
			p->expanded = 1;
		if (assigns && assignment(w.data) &&
		    strcspn(w.data, "+=") < plain) {
			if (!name_ok(w.data))
				goto fail; /* PATH=, PS4=, BASH_ENV=, a+= */
		} else if (assigns) {
			assigns = 0;
			/* the command's name: no keyword, no expansion, no
			 * 'a'=b that reads like an assignment */
			if (st_keyword(w.data) || strchr(w.data, '='))
				goto fail;
			if (dyn) {
				p->dyncmd = 1;
				goto fail;
			}
		}
		added = words_add(&v, w.data, w.len, dyn);
		if (added > 0)
			goto fail;
		if (added < 0) {
			p->oom = 1;
			goto fail;
		}
		items++;
	}
	if (v.n && st_written(p, &v) < 0)
		goto fail;
	if (!v.n && p->cmdsub > 0)
		goto fail; /* $(<file): the file's text as words */
	analyse(p, &v);
	rc = items > 0;
	goto out;
fail:
	p->complex = 1;
out:
	words_free(&v);
	buf_free(&w);
	return rc;
}

/* A list of commands, up to the end or, in $( ), up to its ). */
static int
st_list(struct sp *p)
{
	const char *s = p->s;
	int need = 0, have = 0, any = 0, r;
	char c;

	for (;;) {
		st_blanks(p);
		if (p->i >= p->n)
			return need || p->cmdsub > 0 ? st_fail(p) : 0;
		c = s[p->i];
		if (c == '#') {
			/* a comment: only where bash surely reads one */
			if (p->cmdsub > 0 || (p->i && !is_blank(s[p->i - 1]) &&
			    s[p->i - 1] != '\n'))
				return st_fail(p);
			while (p->i < p->n && s[p->i] != '\n')
				p->i++;
		} else if (c == '\n') {
			p->i++;
			if (!need)
				have = 0;
		} else if (c == ')') {
			if (p->cmdsub == 0 || need || !any)
				return st_fail(p);
			return 0; /* st_dollar takes the ) */
		} else if (c == ';') {
			if (!have)
				return st_fail(p);
			p->i++;
			have = 0;
		} else if (c == '&' || c == '|') {
			if (!have)
				return st_fail(p);
			if (p->i + 1 < p->n && s[p->i + 1] == c)
				p->i += 2; /* && || */
			else if (c == '|' && (p->i + 1 >= p->n ||
				 s[p->i + 1] != '&'))
				p->i++;
			else
				return st_fail(p); /* &, &>, |& */
			need = 1;
			have = 0;
		} else {
			if (have)
				return st_fail(p);
			r = st_simple(p);
			if (r <= 0)
				return st_fail(p);
			have = any = 1;
			need = 0;
		}
		if (p->oom)
			return -1;
	}
}

/* Reads text (sh -c STRING) with the grammar, into p. */
static void
st_sub(struct sp *p, const char *text, size_t len)
{
	struct sp sub = *p;

	if (p->depth >= SH_MAX_DEPTH) {
		p->complex = 1;
		return;
	}
	sub.s = text;
	sub.i = 0;
	sub.n = len;
	sub.depth = p->depth + 1;
	sub.cmdsub = 0;
	sub.written = NULL; /* not words of the line */
	st_list(&sub);
	p->complex |= sub.complex;
	p->expanded |= sub.expanded;
	p->oom |= sub.oom;
	p->dyncmd |= sub.dyncmd;
}

/* Quotes each word of the commands as written, one command a line. */
static int
st_render(const cJSON *written, struct buf *out)
{
	const cJSON *c, *w;
	const char *q;
	int assigns;

	cJSON_ArrayForEach(c, written) {
		assigns = 1;
		cJSON_ArrayForEach(w, c) {
			q = w->valuestring;
			/* an assignment's name stays unquoted */
			if (assigns && assignment(q) && name_ok(q)) {
				if (buf_append(out, q, strcspn(q, "=") + 1) < 0)
					return -1;
				q += strcspn(q, "=") + 1;
			} else
				assigns = 0;
			if (buf_putc(out, '\'') < 0)
				return -1;
			for (; *q; q++)
				if ((*q == '\'' ? buf_append(out, "'\\''", 4)
				     : buf_putc(out, *q)) < 0)
					return -1;
			if (buf_append(out, "' ", 2) < 0)
				return -1;
		}
		if (buf_putc(out, '\n') < 0)
			return -1;
	}
	return 0;
}

/* The line read with the grammar: 1 when it is within it, with *out the
 * split; 0 when not (*dyncmd set when a command's name is an
 * expansion); -1 when out of memory. */
static int
st_split(const char *cmd, int roundtrip, cJSON **out, int *dyncmd)
{
	struct sp p = { 0 };
	struct buf r = BUF_INIT(0);
	cJSON *o = NULL, *back = NULL;
	int rc = -1, k;

	*out = NULL;
	p.s = cmd;
	p.n = strlen(cmd);
	p.strict = 1;
	p.cmds = cJSON_CreateArray();
	p.redirs = cJSON_CreateArray();
	p.outs = cJSON_CreateArray();
	p.written = cJSON_CreateArray();
	o = cJSON_CreateObject();
	if (!o || !p.cmds || !p.redirs || !p.outs || !p.written)
		goto out;
	st_list(&p);
	if (p.oom)
		goto out;
	*dyncmd = p.dyncmd;
	if (p.complex) {
		rc = 0;
		goto out;
	}
	/* The round trip: the commands, each word quoted, read again, are
	 * the same words; a word dropped or invented on the way is not. */
	if (!roundtrip) {
		if (st_render(p.written, &r) < 0)
			goto out;
		k = st_split(r.data ? r.data : "", 1, &back, dyncmd);
		if (k < 0)
			goto out;
		if (!k || !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(back,
		    "written"), p.written, 1)) {
			rc = 0;
			goto out;
		}
	}
	if (!cJSON_AddItemToObject(o, "commands", p.cmds)) 
		goto out;
	p.cmds = NULL;
	if (!cJSON_AddItemToObject(o, "redirects", p.redirs))
		goto out;
	p.redirs = NULL;
	if (!cJSON_AddItemToObject(o, "outputs", p.outs))
		goto out;
	p.outs = NULL;
	if (!cJSON_AddBoolToObject(o, "complex", 0) ||
	    !cJSON_AddBoolToObject(o, "literal", !p.expanded) ||
	    !cJSON_AddBoolToObject(o, "dynamic_command", 0))
		goto out;
	if (roundtrip) {
		if (!cJSON_AddItemToObject(o, "written", p.written))
			goto out;
		p.written = NULL;
	}
	*out = o;
	o = NULL;
	rc = 1;
out:
	cJSON_Delete(o);
	cJSON_Delete(back);
	cJSON_Delete(p.cmds);
	cJSON_Delete(p.redirs);
	cJSON_Delete(p.outs);
	cJSON_Delete(p.written);
	buf_free(&r);
	return rc;
}

/* bash removes every backslash-newline pair outside single quotes before
 * it reads a token, so "$\<newline>(cmd)" is "$(cmd)".  The same is done
 * here, before splitting.  Quotes are followed roughly (no nesting of
 * $(...) in double quotes); where this reading and bash's may differ the
 * line is complex: a pair left inside what looks single-quoted, and a
 * pair on a line with a comment (bash does not continue a comment). */
static char *
join_lines(const char *cmd, int *complex)
{
	size_t n = strlen(cmd), i, o = 0;
	char *out = malloc(n + 1), q = 0;
	int joined = 0;

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		char c = cmd[i];

		if (q == '\'') {
			if (c == '\'')
				q = 0;
			else if (c == '\\' && cmd[i + 1] == '\n')
				*complex = 1;
		} else if (c == '\\' && cmd[i + 1] == '\n') {
			i++;
			joined = 1;
			continue;
		} else if (c == '\\' && cmd[i + 1]) {
			out[o++] = c;
			c = cmd[++i];
		} else if (c == '"')
			q = q == '"' ? 0 : '"';
		else if (c == '\'' && !q)
			q = '\'';
		out[o++] = c;
	}
	out[o] = '\0';
	if (joined && strchr(out, '#'))
		*complex = 1;
	return out;
}

cJSON *
shell_split(const char *cmd)
{
	struct sp p = { 0 };
	cJSON *o;
	const unsigned char *c;
	char *text;
	int ctl = 0;

	/* a control character (a carriage return, an escape) is where a
	 * reader and bash may see different things */
	for (c = (const unsigned char *)cmd; *c; c++)
		if ((*c < 0x20 && *c != '\t' && *c != '\n') || *c == 0x7f)
			ctl = 1;
	/* bash -c LINE reads a LINE that starts with - or + as options */
	if (!ctl && cmd[0] != '-' && cmd[0] != '+') {
		switch (st_split(cmd, 0, &o, &p.dyncmd)) {
		case 1:
			return o;
		case -1:
			return NULL;
		}
	}
	/* Outside the grammar: complex, and the lenient reader lists what
	 * it finds, for the deny rules. */
	p.complex = 1;
	o = cJSON_CreateObject();
	text = join_lines(cmd, &p.complex);
	if (!text) {
		cJSON_Delete(o);
		return NULL;
	}
	cmd = text;
	p.s = cmd;
	p.n = strlen(cmd);
	p.cmds = cJSON_CreateArray();
	p.redirs = cJSON_CreateArray();
	p.outs = cJSON_CreateArray();
	if (!o || !p.cmds || !p.redirs || !p.outs) {
		cJSON_Delete(o);
		cJSON_Delete(p.cmds);
		cJSON_Delete(p.redirs);
		cJSON_Delete(p.outs);
		free(text);
		return NULL;
	}
	parse_list(&p, 0);
	/* a field missing for want of memory would read as null: as not
	 * complex, to a rule */
	if (!cJSON_AddItemToObject(o, "commands", p.cmds) && (p.oom = 1))
		cJSON_Delete(p.cmds);
	if (!cJSON_AddItemToObject(o, "redirects", p.redirs) && (p.oom = 1))
		cJSON_Delete(p.redirs);
	if (!cJSON_AddItemToObject(o, "outputs", p.outs) && (p.oom = 1))
		cJSON_Delete(p.outs);
	if (!cJSON_AddBoolToObject(o, "complex", p.complex) ||
	    !cJSON_AddBoolToObject(o, "literal", !p.expanded) ||
	    !cJSON_AddBoolToObject(o, "dynamic_command", p.dyncmd))
		p.oom = 1;
	free(text);
	if (p.oom) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
