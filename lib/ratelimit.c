/* ratelimit.c: one rate-limit budget per endpoint, shared by every
 * session of the machine through a small state file (agent-step(1),
 * RATE LIMITS).
 *
 * The file, per (base URL, hash of the key), lives in
 * ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/agent-harness/, a directory of ours
 * with mode 0700; the file has mode 0600 and holds no key.  It is one
 * line of text, read and written under flock(2):
 *
 *   ahrl1 until goes next learned strikes
 *         req: lim rem rate t reset   tok: lim rem rate t reset
 *         q: ticket pid ...   f: request pid ...   hits: time ...
 *
 * until: no request before (a 429's back-off); goes: requests sent so
 * far; next: the next ticket; learned: 0 nothing known (one request in
 * flight at a time: the probe), 1 the server sends no budget, 2 it does;
 * strikes: 429s in a row.  A bucket's level is rem at time t, refilled
 * at rate per second up to lim, or whole again at reset.  The queue holds
 * the sessions that wait, in the order they came; f the requests in
 * flight (what the server's count of what remains did not see yet); an
 * entry whose process is gone is dropped.  hits: the times of the last
 * 429s.
 *
 * Requests in flight (AGENT_MAX_CONCURRENT, and the probe) are counted
 * by flock(2)s on slot files beside the state: the kernel lets a lock go
 * with its process, so a session killed while it holds one leaves the
 * others working.  Times are the real-time clock's, shared by all. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

#define RL_QMAX 256       /* sessions waiting in the queue */
#define RL_HITS 8         /* 429s remembered */
#define RL_CAP 60.0       /* seconds: the longest back-off we honour */
#define RL_POLL 0.05      /* seconds between looks at the queue */
#define RL_SLOTS_MAX 64

struct rl_bucket {
	double lim, rem, rate, t, reset; /* t 0: nothing known */
};

/* Sessions by their number (a ticket, a request) and process. */
struct rl_list {
	unsigned long id[RL_QMAX];
	long pid[RL_QMAX];
	int n;
};

struct rl_state {
	double until;
	unsigned long goes, next;
	int learned, strikes;
	struct rl_bucket b[2];        /* requests, tokens */
	struct rl_list q;             /* waiting, in the order they came */
	struct rl_list f;             /* requests in flight */
	double hits[RL_HITS];
	int nhits;
};

struct ratelimit {
	int dirfd, fd;            /* the directory, the state file */
	char name[80];            /* the state file's name in it */
	char *url;
	int max;                  /* AGENT_MAX_CONCURRENT, 0: none */
	int slot;                 /* the slot file held, or -1 */
	int probe;                /* the probe file held, or -1 */
	unsigned long go;         /* goes when this request went */
	double need;              /* tokens this request was counted for */
};

static double
real_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Opens (creating) name in rl's directory: a regular file of ours, mode
 * 0600, one link.  The descriptor, or -1 (err). */
static int
open_ours(int dirfd, const char *dir, const char *name, struct ah_error *err)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			0600);

	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot open '%s/%s'", dir,
				     name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) || st.st_nlink != 1) {
		close(fd);
		return ah_fail(err, AH_EIO, "'%s/%s' is not a file of ours "
			       "with mode 0600: not used for the rate limit "
			       "(remove it)", dir, name);
	}
	return fd;
}

struct ratelimit *
ratelimit_open(const char *base_url, const char *key, int max_concurrent,
	       struct ah_error *err)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	struct ratelimit *rl = NULL;
	struct buf id = BUF_INIT(0);
	char dir[4096], hex[65];
	struct stat st;

	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if (snprintf(dir, sizeof dir, "%s/agent-harness", base) >=
	    (int)sizeof dir) {
		ah_fail(err, AH_EIO, "the rate limit's directory: '%.200s' is "
			"too long", base);
		return NULL;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ah_fail_errno(err, errno, "cannot make '%s'", dir);
		return NULL;
	}
	/* ours, nobody else's: another user could feed us a budget, or
	 * read which endpoints we use */
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077)) {
		ah_fail(err, AH_EIO, "'%s' is not a directory of ours with "
			"mode 0700: the rate limit's state is not kept there",
			dir);
		return NULL;
	}
	rl = calloc(1, sizeof *rl);
	if (!rl || !(rl->url = strdup(base_url)))
		goto nomem;
	rl->fd = rl->slot = rl->probe = -1;
	rl->max = max_concurrent;
	/* the name: a hash of the URL and of a hash of the key */
	policy_hash(key ? key : "", key ? strlen(key) : 0, hex);
	if (buf_printf(&id, "%s\n%s", base_url, hex) < 0)
		goto nomem;
	policy_hash(id.data, id.len, hex);
	explicit_bzero(id.data, id.len);
	buf_free(&id);
	snprintf(rl->name, sizeof rl->name, "rl-%.32s", hex);
	rl->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rl->dirfd < 0) {
		ah_fail_errno(err, errno, "cannot open '%s'", dir);
		goto fail;
	}
	if (fstat(rl->dirfd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		ah_fail(err, AH_EIO, "'%s' is not a directory of ours with "
			"mode 0700", dir);
		goto fail;
	}
	if ((rl->fd = open_ours(rl->dirfd, dir, rl->name, err)) < 0)
		goto fail;
	return rl;
nomem:
	ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	buf_free(&id);
fail:
	ratelimit_free(rl);
	return NULL;
}

/* Lets go of what a request held: its slot and the probe's lock. */
static void
let_go(struct ratelimit *rl)
{
	if (rl->probe >= 0) {
		close(rl->probe);
		rl->probe = -1;
	}
	if (rl->slot >= 0) {
		close(rl->slot);
		rl->slot = -1;
	}
}

void
ratelimit_free(struct ratelimit *rl)
{
	if (!rl)
		return;
	let_go(rl);
	if (rl->fd >= 0)
		close(rl->fd);
	if (rl->dirfd > 0)
		close(rl->dirfd);
	free(rl->url);
	free(rl);
}

/* --- the state file ---------------------------------------------------- */

static int
lock_state(struct ratelimit *rl, volatile sig_atomic_t *stop,
	   struct ah_error *err)
{
	while (flock(rl->fd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock the rate "
					     "limit's state");
		if (stop && *stop)
			return ah_fail(err, AH_EINTR, "interrupted");
	}
	return 0;
}

static void
unlock_state(struct ratelimit *rl)
{
	flock(rl->fd, LOCK_UN);
}

/* Reads the state; a file empty or not ours to read is a fresh one. */
static void
load(struct ratelimit *rl, struct rl_state *s)
{
	char text[8192], *p, *end;
	ssize_t n;
	int i, k;

	memset(s, 0, sizeof *s);
	n = pread(rl->fd, text, sizeof text - 1, 0);
	if (n <= 0)
		return;
	text[n] = '\0';
	if (strncmp(text, "ahrl1 ", 6))
		return;
	p = text + 6;
#define NUM(x) do { x = strtod(p, &end); if (end == p) goto bad; p = end; } while (0)
	{
		double v;

		NUM(s->until);
		NUM(v); s->goes = (unsigned long)v;
		NUM(v); s->next = (unsigned long)v;
		NUM(v); s->learned = (int)v;
		NUM(v); s->strikes = (int)v;
		for (k = 0; k < 2; k++) {
			NUM(s->b[k].lim);
			NUM(s->b[k].rem);
			NUM(s->b[k].rate);
			NUM(s->b[k].t);
			NUM(s->b[k].reset);
		}
		NUM(v);
		for (i = 0, k = (int)v; i < k && i < RL_QMAX; i++) {
			NUM(v); s->q.id[i] = (unsigned long)v;
			NUM(v); s->q.pid[i] = (long)v;
			s->q.n++;
		}
		NUM(v);
		for (i = 0, k = (int)v; i < k && i < RL_QMAX; i++) {
			NUM(v); s->f.id[i] = (unsigned long)v;
			NUM(v); s->f.pid[i] = (long)v;
			s->f.n++;
		}
		NUM(v);
		for (i = 0, k = (int)v; i < k && i < RL_HITS; i++) {
			NUM(s->hits[i]);
			s->nhits++;
		}
	}
#undef NUM
	return;
bad:
	/* a torn or foreign line: what was read stands, the rest is new */
	return;
}

static int
save(struct ratelimit *rl, const struct rl_state *s, struct ah_error *err)
{
	struct buf out = BUF_INIT(0);
	int i, k, rc = 0;

	rc |= buf_printf(&out, "ahrl1 %.3f %lu %lu %d %d", s->until, s->goes,
			 s->next, s->learned, s->strikes);
	for (k = 0; k < 2; k++)
		rc |= buf_printf(&out, " %.3f %.3f %.6f %.3f %.3f", s->b[k].lim,
				 s->b[k].rem, s->b[k].rate, s->b[k].t,
				 s->b[k].reset);
	rc |= buf_printf(&out, " %d", s->q.n);
	for (i = 0; i < s->q.n; i++)
		rc |= buf_printf(&out, " %lu %ld", s->q.id[i], s->q.pid[i]);
	rc |= buf_printf(&out, " %d", s->f.n);
	for (i = 0; i < s->f.n; i++)
		rc |= buf_printf(&out, " %lu %ld", s->f.id[i], s->f.pid[i]);
	rc |= buf_printf(&out, " %d", s->nhits);
	for (i = 0; i < s->nhits; i++)
		rc |= buf_printf(&out, " %.3f", s->hits[i]);
	rc |= buf_putc(&out, '\n');
	if (rc)
		rc = ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	else if (pwrite(rl->fd, out.data, out.len, 0) != (ssize_t)out.len ||
		 ftruncate(rl->fd, (off_t)out.len) < 0)
		rc = ah_fail_errno(err, errno, "cannot write the rate limit's "
				   "state");
	buf_free(&out);
	return rc;
}

/* Drops the entries whose process is gone (a session killed while it
 * waited, or while its request was in flight). */
static void
prune(struct rl_list *l)
{
	int i, j;

	for (i = j = 0; i < l->n; i++) {
		if (l->pid[i] > 0 && kill((pid_t)l->pid[i], 0) < 0 &&
		    errno == ESRCH)
			continue;
		l->id[j] = l->id[i];
		l->pid[j++] = l->pid[i];
	}
	l->n = j;
}

static void
list_drop(struct rl_list *l, unsigned long id)
{
	int i, j;

	for (i = j = 0; i < l->n; i++)
		if (l->id[i] != id) {
			l->id[j] = l->id[i];
			l->pid[j++] = l->pid[i];
		}
	l->n = j;
}

/* Adds id to l: 0, or -1 when l is full. */
static int
list_add(struct rl_list *l, unsigned long id)
{
	if (l->n == RL_QMAX)
		return -1;
	l->id[l->n] = id;
	l->pid[l->n++] = (long)getpid();
	return 0;
}

/* The level of bucket b at now: -1 unknown. */
static double
level(const struct rl_bucket *b, double now)
{
	double v;

	if (b->t <= 0)
		return -1;
	if (b->rate > 0) {
		v = b->rem + b->rate * (now - b->t);
		return b->lim > 0 && v > b->lim ? b->lim : v;
	}
	/* whole again at its reset, but for what went since: not known */
	if (b->reset > 0 && now >= b->reset)
		return -1;
	return b->rem;
}

/* Seconds until bucket b holds need at now: 0 now, -1 unknown. */
static double
time_for(const struct rl_bucket *b, double need, double now)
{
	double v = level(b, now);

	if (v < 0 || v >= need)
		return v < 0 ? -1 : 0;
	if (b->rate > 0)
		return (need - v) / b->rate;
	if (b->reset > now)
		return b->reset - now;
	return -1;
}

/* Tries the slot files for a free one: its descriptor kept, 1; 0 when
 * all are taken; -1 (err). */
static int
take_slot(struct ratelimit *rl, const char *what, int n, int *held,
	  struct ah_error *err)
{
	char name[96];
	int i, fd;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof name, "%s.%s%d", rl->name, what, i);
		fd = open_ours(rl->dirfd, "the rate limit's directory", name,
			       err);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*held = fd;
			return 1;
		}
		close(fd);
		if (errno != EWOULDBLOCK && errno != EINTR)
			return ah_fail_errno(err, errno, "cannot lock a slot "
					     "of the rate limit");
	}
	return 0;
}

int
ratelimit_acquire(struct ratelimit *rl, double tokens, double deadline,
		  volatile sig_atomic_t *stop,
		  void (*on_wait)(void *, const struct ratelimit_wait *),
		  void *ctx, struct ah_error *err)
{
	struct rl_state s;
	struct ratelimit_wait w = { 0 };
	unsigned long ticket = 0;
	double now, start = real_now(), pause, t;
	int queued = 0, said = 0, rc = -1, head, pos, i, go, unknown;
	const char *why;

	w.endpoint = rl->url;
	w.reason = "queue";
	for (;;) {
		if (stop && *stop) {
			ah_fail(err, AH_EINTR, "interrupted");
			break;
		}
		if (lock_state(rl, stop, err) < 0)
			break;
		load(rl, &s);
		now = real_now();
		go = 1;
		prune(&s.q);
		prune(&s.f);
		if (!queued) {
			/* no room: wait for some, outside the queue */
			if (list_add(&s.q, s.next) < 0)
				go = 0;
			else {
				ticket = s.next++;
				queued = 1;
			}
		}
		for (pos = 0; queued && pos < s.q.n && s.q.id[pos] != ticket;
		     pos++)
			;
		head = queued && pos == 0;
		pause = 0;
		why = "queue";
		if (!head)
			go = 0;
		if (s.until > now) {
			go = 0;
			pause = s.until - now;
			why = "retry-after";
		}
		/* the budget the server told of; one that is not known any
		 * more (its reset passed, and its refill is not known) is
		 * probed again */
		unknown = s.learned == 0;
		for (i = 0; i < 2 && s.learned == 2; i++) {
			double need = i ? tokens : 1;

			if (s.b[i].t <= 0)
				continue; /* never told of */
			if (s.b[i].lim > 0 && need > s.b[i].lim)
				need = s.b[i].lim;
			t = time_for(&s.b[i], need, now);
			if (t < 0)
				unknown = 1;
			if (t > 0) {
				go = 0;
				if (t > pause)
					pause = t;
				why = "budget";
			}
		}
		if (pause > RL_CAP)
			pause = RL_CAP;
		/* the requests in flight: the probe while nothing is known,
		 * the slots of AGENT_MAX_CONCURRENT */
		if (go && unknown && rl->probe < 0) {
			int got = take_slot(rl, "probe", 1, &rl->probe, err);

			if (got < 0)
				goto unlock;
			if (!got) {
				go = 0;
				why = "probe";
			}
		}
		if (go && rl->max > 0 && rl->slot < 0) {
			int got = take_slot(rl, "slot", rl->max, &rl->slot, err);

			if (got < 0)
				goto unlock;
			if (!got) {
				go = 0;
				why = "concurrency";
			}
		}
		if (go && list_add(&s.f, s.goes) < 0)
			go = 0;
		if (go) {
			list_drop(&s.q, ticket);
			rl->go = s.goes++;
			rl->need = tokens;
			for (i = 0; i < 2; i++) {
				double need = i ? tokens : 1;

				if (s.learned == 2 && s.b[i].t > 0) {
					s.b[i].rem = level(&s.b[i], now) - need;
					s.b[i].t = now;
				}
			}
			rc = save(rl, &s, err);
			unlock_state(rl);
			break;
		}
		/* not yet: what holds us (the last that did, when we go) */
		w.reason = why;
		/* back out of the probe or slot taken above */
		if (rl->probe >= 0 && !unknown) {
			close(rl->probe);
			rl->probe = -1;
		}
		if (save(rl, &s, err) < 0)
			goto unlock;
		unlock_state(rl);
		if (pause < RL_POLL)
			pause = RL_POLL;
		/* the estimate: this wait, and a turn of each before us */
		w.seconds = pause + pos * (s.learned == 2 && s.b[0].rate > 0
					   ? 1 / s.b[0].rate : 0);
		if (deadline > 0 && mono_now() + pause >= deadline) {
			ah_fail(err, AH_ENET, "not sent: the deadline of the "
				"answer would pass in the wait for the rate "
				"limit of %.300s", rl->url);
			goto out;
		}
		if (!said && on_wait && (w.seconds >= 1 ||
					 real_now() - start >= 1)) {
			said = 1;
			w.phase = RATELIMIT_WAITING;
			if (w.seconds < real_now() - start)
				w.seconds = real_now() - start;
			on_wait(ctx, &w);
		}
		/* a little jitter: the sessions do not look all at once */
		pause *= 1 + 0.2 * ((double)rand() / RAND_MAX);
		{
			struct timespec ts;

			ts.tv_sec = (time_t)pause;
			ts.tv_nsec = (long)((pause - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		continue;
unlock:
		unlock_state(rl);
		goto out;
	}
	if (rc == 0 && on_wait && real_now() - start >= 0.1) {
		w.phase = RATELIMIT_WAITED;
		w.seconds = real_now() - start;
		on_wait(ctx, &w);
	}
	return rc;
out:
	/* leave the queue */
	if (queued && lock_state(rl, NULL, NULL) == 0) {
		load(rl, &s);
		list_drop(&s.q, ticket);
		save(rl, &s, NULL);
		unlock_state(rl);
	}
	let_go(rl);
	return -1;
}

/* --- what the server said ---------------------------------------------- */

/* "6m0s", "1.5s", "20ms", "1h2m3s", or a number of seconds: seconds, or
 * -1. */
static double
parse_duration(const char *v)
{
	double total = 0, x;
	char *end;
	int any = 0;

	while (*v) {
		x = strtod(v, &end);
		if (end == v || x < 0)
			return -1;
		v = end;
		if (!strncmp(v, "ms", 2)) {
			total += x / 1000;
			v += 2;
		} else if (*v == 'h') {
			total += x * 3600;
			v++;
		} else if (*v == 'm') {
			total += x * 60;
			v++;
		} else if (*v == 's') {
			total += x;
			v++;
		} else if (!*v) {
			total += x;
		} else
			return -1;
		any = 1;
	}
	return any ? total : -1;
}

/* An RFC 3339 time (2026-12-05T03:00:00Z): seconds since the epoch, or
 * -1. */
static double
parse_rfc3339(const char *v)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof tm);
	end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -1;
	return (double)timegm(&tm);
}

void
ratelimit_header(struct ratelimit_seen *seen, const char *name,
		 const char *value)
{
	static const struct {
		const char *name;
		int bucket, field, anthropic;
	} known[] = {
		{ "x-ratelimit-limit-requests", 0, 0, 0 },
		{ "x-ratelimit-remaining-requests", 0, 1, 0 },
		{ "x-ratelimit-reset-requests", 0, 2, 0 },
		{ "x-ratelimit-limit-tokens", 1, 0, 0 },
		{ "x-ratelimit-remaining-tokens", 1, 1, 0 },
		{ "x-ratelimit-reset-tokens", 1, 2, 0 },
		{ "anthropic-ratelimit-requests-limit", 0, 0, 1 },
		{ "anthropic-ratelimit-requests-remaining", 0, 1, 1 },
		{ "anthropic-ratelimit-requests-reset", 0, 2, 1 },
		{ "anthropic-ratelimit-tokens-limit", 1, 0, 1 },
		{ "anthropic-ratelimit-tokens-remaining", 1, 1, 1 },
		{ "anthropic-ratelimit-tokens-reset", 1, 2, 1 },
		/* the input tokens, when the total is not said */
		{ "anthropic-ratelimit-input-tokens-limit", 2, 0, 1 },
		{ "anthropic-ratelimit-input-tokens-remaining", 2, 1, 1 },
		{ "anthropic-ratelimit-input-tokens-reset", 2, 2, 1 },
	};
	size_t i;
	double x;
	char *end;

	for (i = 0; i < sizeof known / sizeof *known; i++) {
		if (strcasecmp(name, known[i].name))
			continue;
		if (known[i].field < 2) {
			x = strtod(value, &end);
			if (end == value || x < 0)
				return;
		} else if (known[i].anthropic) {
			if ((x = parse_rfc3339(value)) < 0)
				return;
			x -= real_now();
			if (x < 0)
				x = 0;
		} else if ((x = parse_duration(value)) < 0)
			return;
		seen->v[known[i].bucket][known[i].field] = x;
		seen->set[known[i].bucket][known[i].field] = 1;
		return;
	}
}

/* Bucket b learns what the server said of it at now; others: the
 * requests sent after ours. */
static void
learn(struct rl_bucket *b, const double v[3], const int set[3], double now,
      double others)
{
	if (set[0])
		b->lim = v[0];
	if (set[1]) {
		/* the requests sent after ours had not reached it yet */
		b->rem = v[1] - others;
		b->t = now;
		/* a server rounds what remains down: with a level anywhere
		 * in [rem, rem + 1), the refill is at least this fast */
		if (set[2] && v[2] > 0 && b->lim > v[1] + 1)
			b->rate = (b->lim - v[1] - 1) / v[2];
	}
	if (set[2])
		b->reset = now + v[2];
}

void
ratelimit_done(struct ratelimit *rl, const struct ratelimit_seen *seen,
	       long status, double retry_after, double *wait)
{
	struct rl_state s;
	double now, w;
	int any, i, tb;

	*wait = -1;
	if (lock_state(rl, NULL, NULL) == 0) {
		load(rl, &s);
		now = real_now();
		/* ours is in flight no more; the others' are */
		prune(&s.f);
		list_drop(&s.f, rl->go);
		any = 0;
		for (i = 0; i < 3; i++)
			any |= seen->set[i][1];
		if (any) {
			double others = (double)s.f.n;

			s.learned = 2;
			learn(&s.b[0], seen->v[0], seen->set[0], now, others);
			/* the total's bucket, else the input tokens' */
			tb = seen->set[1][1] ? 1 : 2;
			learn(&s.b[1], seen->v[tb], seen->set[tb], now,
			      others * rl->need);
		} else if (status != 429 && status > 0 && s.learned == 0)
			s.learned = 1;
		if (status == 429) {
			/* every session of the endpoint waits, with jitter */
			s.strikes++;
			w = retry_after >= 0 ? retry_after
					     : 0.5 * pow(2, s.strikes - 1);
			if (w > RL_CAP)
				w = RL_CAP;
			/* our own back-off gets jitter here; the server's
			 * wait gets it as each session wakes (acquire) */
			if (retry_after < 0)
				w *= 1 + 0.2 * ((double)rand() / RAND_MAX);
			if (now + w > s.until)
				s.until = now + w;
			*wait = s.until - now;
			if (s.learned == 2) {
				/* nothing left, whatever we thought */
				if (s.b[0].t > 0) {
					s.b[0].rem = level(&s.b[0], now);
					if (s.b[0].rem > 0)
						s.b[0].rem = 0;
					s.b[0].t = now;
				}
			} else
				s.learned = 0; /* one at a time again */
			if (s.nhits == RL_HITS) {
				memmove(s.hits, s.hits + 1,
					(RL_HITS - 1) * sizeof *s.hits);
				s.nhits--;
			}
			s.hits[s.nhits++] = now;
		} else if (status > 0 && status < 400)
			s.strikes = 0;
		save(rl, &s, NULL);
		unlock_state(rl);
	}
	let_go(rl);
}
