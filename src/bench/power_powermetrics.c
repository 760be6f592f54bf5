/* macOS `powermetrics` as a power source. Its text output is a series of
 * samples, each opened by "*** Sampled system activity (DATE) (N ms elapsed)
 * ***" and holding lines "CPU Power: 41 mW", "GPU Power: 2 mW",
 * "ANE Power: 0 mW", "Combined Power (CPU + GPU + ANE): 43 mW"; with
 * `-f plist` each sample is an XML plist, samples separated by NUL bytes,
 * with elapsed_ns, *_power (mW) and *_energy (mJ over the sample). A sample is
 * printed when its interval ends, so the arrival of its first byte marks
 * that end; the sampler integrates the watts over the reported interval. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/timer.h"
#include "bench/power.h"

static const char HEADER[] = "*** Sampled system activity";
#define HEADER_LEN (sizeof HEADER - 1)

static const char *find(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || n < m) return NULL;
    for (size_t i = 0; i + m <= n; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, m)) return hay + i;
    return NULL;
}

/* "  41 mW" / "1.5 W" after a label's colon, in watts. */
static int parse_watts(const char *p, double *out) {
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v)) return 0;
    while (*end == ' ')
        end++;
    if (!strncmp(end, "mW", 2))
        *out = v / 1000.0;
    else if (*end == 'W')
        *out = v;
    else
        return 0;
    return 1;
}

static void parse_text_line(const char *line, nc_pm_sample *s) {
    /* labels in the order of `fields` below */
    static const char *const labels[4] = {
        "CPU Power:", "GPU Power:", "ANE Power:", "Combined Power (CPU + GPU + ANE):"};
    double *fields[4] = {&s->cpu_w, &s->gpu_w, &s->ane_w, &s->combined_w};
    if (!strncmp(line, HEADER, HEADER_LEN)) {
        const char *e = strstr(line, "ms elapsed)");
        if (!e) return;
        const char *open = e;
        while (open > line && *open != '(')
            open--;
        char *end;
        double ms = strtod(open + 1, &end);
        if (*open == '(' && end != open + 1 && isfinite(ms) && ms > 0) s->elapsed_s = ms / 1000.0;
        return;
    }
    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(labels[i]);
        if (strncmp(line, labels[i], n) != 0) continue;
        double *field = fields[i];
        double w;
        /* "GPU Power" appears again in the GPU section: keep the first */
        if (isnan(*field) && parse_watts(line + n, &w)) *field = w;
        return;
    }
}

/* The number after <key>name</key> (an <integer> or <real> element). */
static int plist_number(const char *doc, const char *name, double *out) {
    char key[64];
    snprintf(key, sizeof key, "<key>%s</key>", name);
    const char *p = strstr(doc, key);
    if (!p) return 0;
    p += strlen(key);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!strncmp(p, "<integer>", 9))
        p += 9;
    else if (!strncmp(p, "<real>", 6))
        p += 6;
    else
        return 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p || *end != '<' || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

static void parse_plist(const char *doc, nc_pm_sample *s) {
    double ns;
    if (plist_number(doc, "elapsed_ns", &ns) && ns > 0) s->elapsed_s = ns * 1e-9;
    const char *names[4] = {"cpu", "gpu", "ane", "combined"};
    double *fields[4] = {&s->cpu_w, &s->gpu_w, &s->ane_w, &s->combined_w};
    for (int i = 0; i < 4; i++) {
        char key[32];
        double v;
        snprintf(key, sizeof key, "%s_power", names[i]);
        if (plist_number(doc, key, &v)) {
            *fields[i] = v / 1000.0; /* mW */
            continue;
        }
        snprintf(key, sizeof key, "%s_energy", names[i]);
        if (i < 3 && plist_number(doc, key, &v) && !isnan(s->elapsed_s))
            *fields[i] = v / 1000.0 / s->elapsed_s; /* mJ over the sample */
    }
}

nc_status nc_pm_parse_sample(const char *text, size_t len, nc_pm_sample *out, nc_error *err) {
    nc_pm_sample s = {0, NAN, NAN, NAN, NAN, NAN};
    char *copy = malloc(len + 1);
    if (!copy) return nc_fail(err, NC_ERR_NOMEM, "powermetrics sample: out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    size_t n = strlen(copy); /* stops at an embedded NUL */
    size_t i = 0;
    while (i < n && (copy[i] == ' ' || copy[i] == '\n' || copy[i] == '\t' || copy[i] == '\r'))
        i++;
    if (i < n && copy[i] == '<') {
        parse_plist(copy + i, &s);
    } else {
        for (char *line = copy; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            parse_text_line(line, &s);
            line = nl ? nl + 1 : NULL;
        }
    }
    free(copy);
    if (isnan(nc_pm_total_w(&s)))
        return nc_fail(err, NC_ERR_FORMAT, "powermetrics sample: no CPU/GPU/ANE power figure");
    *out = s;
    return NC_OK;
}

double nc_pm_total_w(const nc_pm_sample *s) {
    if (!isnan(s->combined_w)) return s->combined_w;
    double sum = 0;
    int n = 0;
    const double parts[3] = {s->cpu_w, s->gpu_w, s->ane_w};
    for (int i = 0; i < 3; i++)
        if (!isnan(parts[i])) {
            sum += parts[i];
            n++;
        }
    return n ? sum : NAN;
}

/* --- the incremental stream --------------------------------------------- */

static void emit_chunk(nc_pm_stream *st, size_t len, void (*emit)(const nc_pm_sample *, void *),
                       void *ctx) {
    nc_pm_sample s;
    nc_error ignored;
    if (nc_pm_parse_sample(st->buf, len, &s, &ignored) == NC_OK) {
        s.t_s = st->chunk_t_s;
        st->n_emitted++;
        emit(&s, ctx);
    } else {
        st->n_bad++;
    }
}

static void drop_front(nc_pm_stream *st, size_t n) {
    memmove(st->buf, st->buf + n, st->len - n);
    st->len -= n;
}

nc_status nc_pm_feed(nc_pm_stream *st, const char *data, size_t len, double now_s,
                     void (*emit)(const nc_pm_sample *, void *), void *ctx, nc_error *err) {
    if (st->len + len + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + len + 1)
            cap *= 2;
        char *b = realloc(st->buf, cap);
        if (!b) return nc_fail(err, NC_ERR_NOMEM, "powermetrics stream: out of memory");
        st->buf = b;
        st->cap = cap;
    }
    memcpy(st->buf + st->len, data, len);
    st->len += len;
    for (;;) {
        if (!st->has_chunk) {
            size_t i = 0;
            while (i < st->len && (st->buf[i] == '\0' || st->buf[i] == ' ' || st->buf[i] == '\n' ||
                                   st->buf[i] == '\t' || st->buf[i] == '\r'))
                i++;
            if (i == st->len) {
                st->len = 0;
                return NC_OK;
            }
            if (st->n_emitted + st->n_bad == 0 && st->buf[i] == '<') st->is_plist = 1;
            if (st->is_plist) {
                drop_front(st, i);
            } else {
                const char *h = find(st->buf, st->len, HEADER, HEADER_LEN);
                if (!h) { /* preamble (machine model, OS version): keep a tail only */
                    if (st->len > HEADER_LEN) drop_front(st, st->len - HEADER_LEN);
                    return NC_OK;
                }
                drop_front(st, (size_t)(h - st->buf));
            }
            st->has_chunk = 1;
            st->chunk_t_s = now_s;
        }
        const char *end;
        if (st->is_plist)
            end = memchr(st->buf, '\0', st->len);
        else
            end = find(st->buf + 1, st->len - 1, HEADER, HEADER_LEN);
        if (!end) return NC_OK;
        size_t n = (size_t)(end - st->buf);
        emit_chunk(st, n, emit, ctx);
        drop_front(st, n);
        if (st->is_plist) {
            st->has_chunk = 0; /* the next document's first byte sets its time */
        } else {
            st->chunk_t_s = now_s; /* the next header is already here */
        }
    }
}

nc_status nc_pm_finish(nc_pm_stream *st, void (*emit)(const nc_pm_sample *, void *), void *ctx,
                       nc_error *err) {
    (void)err;
    if (st->has_chunk && st->len) emit_chunk(st, st->len, emit, ctx);
    st->len = 0;
    st->has_chunk = 0;
    return NC_OK;
}

void nc_pm_stream_free(nc_pm_stream *st) {
    free(st->buf);
    memset(st, 0, sizeof *st);
}

/* --- the live sampler ------------------------------------------------------ */

typedef struct pm_impl {
    char *cmd;
    pid_t pid;
    int fd;
    pthread_t thread;
    int has_thread;
    nc_pm_stream stream;
    double energy_j;
    nc_power_sampler *owner;
} pm_impl;

/* Adds one sample to the trace: its interval ends at its arrival. */
static void on_sample(const nc_pm_sample *s, void *ctx) {
    nc_power_sampler *ps = ctx;
    pm_impl *pm = ps->impl;
    double w = nc_pm_total_w(s);
    double dt = isnan(s->elapsed_s) ? ps->period_s : s->elapsed_s;
    nc_error ignored;
    pthread_mutex_lock(&ps->lock);
    double t_end = s->t_s;
    if (ps->trace.n == 0)
        (void)nc_energy_trace_add(&ps->trace, t_end - dt, 0.0, &ignored);
    else if (t_end < ps->trace.pts[ps->trace.n - 1].t_s)
        t_end = ps->trace.pts[ps->trace.n - 1].t_s; /* samples that arrived together */
    pm->energy_j += w * dt;
    (void)nc_energy_trace_add(&ps->trace, t_end, pm->energy_j, &ignored);
    pthread_mutex_unlock(&ps->lock);
}

static void *pm_thread(void *arg) {
    nc_power_sampler *ps = arg;
    pm_impl *pm = ps->impl;
    char buf[4096];
    for (;;) {
        ssize_t n = read(pm->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        nc_error ignored;
        if (nc_pm_feed(&pm->stream, buf, (size_t)n, nc_now_s(), on_sample, ps, &ignored) != NC_OK)
            break;
    }
    nc_error ignored;
    nc_pm_finish(&pm->stream, on_sample, ps, &ignored);
    return NULL;
}

static nc_status pm_start(nc_power_sampler *ps, nc_error *err) {
    pm_impl *pm = ps->impl;
    int fds[2];
    if (pipe(fds) != 0) return nc_fail(err, NC_ERR_IO, "powermetrics: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return nc_fail(err, NC_ERR_IO, "powermetrics: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0); /* its own group, so stop can end the whole pipeline */
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", pm->cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so a stop right away still reaches the group */
    close(fds[1]);
    pm->pid = pid;
    pm->fd = fds[0];
    if (pthread_create(&pm->thread, NULL, pm_thread, ps) != 0) {
        kill(-pid, SIGTERM);
        waitpid(pid, NULL, 0);
        close(pm->fd);
        pm->pid = 0;
        return nc_fail(err, NC_ERR_INTERNAL, "powermetrics: cannot start a thread");
    }
    pm->has_thread = 1;
    return NC_OK;
}

static nc_status pm_stop(nc_power_sampler *ps, double t_end, nc_error *err) {
    (void)err;
    pm_impl *pm = ps->impl;
    if (!pm->pid) return NC_OK;
    /* wait (bounded) for the sample that covers t_end */
    double deadline = nc_now_s() + 3 * ps->period_s + 2.0;
    for (;;) {
        pthread_mutex_lock(&ps->lock);
        int covered = ps->trace.n && ps->trace.pts[ps->trace.n - 1].t_s >= t_end;
        pthread_mutex_unlock(&ps->lock);
        int exited = waitpid(pm->pid, NULL, WNOHANG) == pm->pid;
        if (exited) {
            pm->pid = 0;
            break;
        }
        if (covered || nc_now_s() > deadline) break;
        usleep(10000);
    }
    if (pm->pid) {
        /* powermetrics ends on SIGTERM; anything that ignores it gets SIGKILL */
        kill(-pm->pid, SIGTERM);
        double give_up = nc_now_s() + 1.0;
        while (waitpid(pm->pid, NULL, WNOHANG) != pm->pid) {
            if (nc_now_s() > give_up) {
                kill(-pm->pid, SIGKILL);
                waitpid(pm->pid, NULL, 0);
                break;
            }
            usleep(5000);
        }
        pm->pid = 0;
    }
    if (pm->has_thread) {
        pthread_join(pm->thread, NULL);
        pm->has_thread = 0;
    }
    if (pm->fd >= 0) close(pm->fd);
    pm->fd = -1;
    return NC_OK;
}

static void pm_close(nc_power_sampler *ps) {
    pm_impl *pm = ps->impl;
    nc_error ignored;
    pm_stop(ps, 0, &ignored);
    nc_pm_stream_free(&pm->stream);
    free(pm->cmd);
    free(pm);
}

static const nc_power_ops pm_ops = {pm_start, NULL, pm_stop, pm_close};

nc_status nc_powermetrics_open(const char *cmd, double period_s, nc_power_sampler **out,
                               nc_error *err) {
    *out = NULL;
    if (!cmd || !*cmd)
        return nc_fail(err, NC_ERR_INVALID, "--power powermetrics-cmd: empty command");
    nc_power_sampler *ps = calloc(1, sizeof *ps);
    pm_impl *pm = calloc(1, sizeof *pm);
    char *c = strdup(cmd);
    if (!ps || !pm || !c) {
        free(ps);
        free(pm);
        free(c);
        return nc_fail(err, NC_ERR_NOMEM, "powermetrics: out of memory");
    }
    pm->cmd = c;
    pm->fd = -1;
    pm->owner = ps;
    ps->impl = pm;
    ps->ops = &pm_ops;
    ps->period_s = period_s > 0 ? period_s : 0.1;
    pthread_mutex_init(&ps->lock, NULL);
    snprintf(ps->kind, sizeof ps->kind, "powermetrics");
    snprintf(ps->domain, sizeof ps->domain,
             "powermetrics Combined Power (CPU + GPU + ANE) of the SoC; not DRAM, display or "
             "whole-machine power");
    *out = ps;
    return NC_OK;
}
