/* Test-side helpers for driving `$NECTAR_BIN serve`: start it on a free
 * loopback port (--port 0; the server prints the real one), send requests
 * with curl (through popen, bodies in temporary files so no shell quoting
 * is involved), parse JSON and SSE replies, and always stop the server.
 * Header-only so each serve test binary stays one file. */
#ifndef NC_TESTS_SERVE_CLIENT_H
#define NC_TESTS_SERVE_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct srv {
    pid_t pid;
    int port;
    char log_path[256];
} srv;

static char tmp_dir[256];

static inline const char *nectar_bin(void) {
    const char *b = getenv("NECTAR_BIN");
    return b && *b ? b : "build/nectar";
}

static inline int have_curl(void) {
    return system("command -v curl >/dev/null 2>&1") == 0;
}

static inline void make_tmp_dir(void) {
    if (tmp_dir[0]) return;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/nectar_serve_test_XXXXXX");
    if (!mkdtemp(tmp_dir)) tmp_dir[0] = '\0';
}

static inline void rm_tmp_dir(void) {
    if (!tmp_dir[0]) return;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    tmp_dir[0] = '\0';
}

/* Starts the server with the given extra arguments (NULL-terminated);
 * returns 0 once it printed its port. */
static inline int srv_start(srv *s, const char *const *args) {
    make_tmp_dir();
    static int n_started;
    snprintf(s->log_path, sizeof s->log_path, "%s/server%d.log", tmp_dir, n_started++);
    int fds[2];
    if (pipe(fds) != 0) return -1;
    s->pid = fork();
    if (s->pid < 0) return -1;
    if (s->pid == 0) {
        const char *argv[64];
        int n = 0;
        argv[n++] = nectar_bin();
        argv[n++] = "serve";
        argv[n++] = "--port";
        argv[n++] = "0";
        for (int i = 0; args[i] && n < 62; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        dup2(fds[1], 1);
        FILE *log = fopen(s->log_path, "w");
        if (log) dup2(fileno(log), 2);
        close(fds[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    /* The first stdout line names the port: "... on http://127.0.0.1:PORT ...". */
    char line[512];
    size_t len = 0;
    struct pollfd p = {fds[0], POLLIN, 0};
    while (len < sizeof line - 1) {
        if (poll(&p, 1, 20000) <= 0) break;
        ssize_t r = read(fds[0], line + len, 1);
        if (r <= 0) break;
        if (line[len++] == '\n') break;
    }
    line[len] = '\0';
    close(fds[0]);
    const char *at = strstr(line, "http://127.0.0.1:");
    s->port = at ? atoi(at + 17) : 0;
    if (s->port <= 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        return -1;
    }
    return 0;
}

/* Stops with signal sig; returns the exit status (0: clean shutdown, which
 * under ASan also means no leak), or -1 when it had to be killed. */
static inline int srv_stop_with(srv *s, int sig) {
    if (s->pid <= 0) return -1;
    kill(s->pid, sig);
    for (int i = 0; i < 200; i++) {
        int status;
        pid_t r = waitpid(s->pid, &status, WNOHANG);
        if (r == s->pid) {
            s->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        usleep(50000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return -1;
}

static inline int srv_stop(srv *s) {
    return srv_stop_with(s, SIGTERM);
}

static inline char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static inline int spit(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, len, f);
    fclose(f);
    return w == len ? 0 : -1;
}

/* A reply: status code, headers and body (malloc'ed). */
typedef struct reply {
    int status;
    char *headers;
    char *body;
    size_t body_len;
} reply;

static inline void reply_free(reply *r) {
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* The curl command line for a request, writing to files under tag. */
static inline void curl_cmd(char *cmd, size_t cap, const srv *s, const char *method,
                            const char *path, const char *body, size_t body_len, const char *extra,
                            const char *tag) {
    char bpath[320];
    snprintf(bpath, sizeof bpath, "%s/%s.req", tmp_dir, tag);
    if (body) spit(bpath, body, body_len);
    snprintf(cmd, cap,
             "curl -s -N --max-time 30 -o '%s/%s.body' -D '%s/%s.hdr' -w '%%{http_code}' -X %s "
             "%s%s%s -H 'Content-Type: application/json' %s 'http://127.0.0.1:%d%s'",
             tmp_dir, tag, tmp_dir, tag, method, body ? "--data-binary '@" : "", body ? bpath : "",
             body ? "'" : "", extra ? extra : "", s->port, path);
}

static inline void collect(reply *r, FILE *p, const char *tag) {
    char code[16] = {0};
    if (!fgets(code, sizeof code, p)) code[0] = '\0';
    pclose(p);
    r->status = atoi(code);
    char path[320];
    snprintf(path, sizeof path, "%s/%s.body", tmp_dir, tag);
    r->body = slurp(path, &r->body_len);
    snprintf(path, sizeof path, "%s/%s.hdr", tmp_dir, tag);
    r->headers = slurp(path, NULL);
    if (!r->body) r->body = strdup("");
    if (!r->headers) r->headers = strdup("");
}

static inline reply http(const srv *s, const char *method, const char *path, const char *body,
                         const char *extra) {
    reply r = {0};
    char cmd[2048];
    curl_cmd(cmd, sizeof cmd, s, method, path, body, body ? strlen(body) : 0, extra, "one");
    FILE *p = popen(cmd, "r");
    if (p) collect(&r, p, "one");
    return r;
}

static inline json_t *parse_json(const char *text) {
    json_error_t je;
    return json_loads(text ? text : "", 0, &je);
}

/* Dotted path with numeric indices: "choices.0.message.content". Tests
 * call it from several client threads at once, so strtok_r, not strtok. */
static inline json_t *jget(json_t *o, const char *path) {
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = o;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)atoi(tok));
        else
            cur = json_object_get(cur, tok);
    }
    return cur;
}

static inline const char *jstr(json_t *o, const char *path) {
    json_t *v = jget(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static inline long long jint(json_t *o, const char *path) {
    json_t *v = jget(o, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* A sample's value in Prometheus text (name with its labels), -1 if absent. */
static inline double metric_value(const char *text, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = text ? strstr(text, key) : NULL;
    return at ? atof(at + strlen(key)) : -1;
}

/* A raw TCP connection to the server (for slow and vanishing clients). */
static inline int raw_connect(const srv *s) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)s->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif
