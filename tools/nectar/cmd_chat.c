/* `nectar chat`: interactive multi-turn chat. Each turn renders the whole
 * history with the Qwen3 chat template and hands it to the sequence, which
 * recomputes only what differs from its KV cache (the previous turns are a
 * shared prefix). Thinking (<think>...</think>) is dimmed on a terminal or
 * hidden with --hide-think. With stdin not a terminal, each line is a turn,
 * so the command can be driven through a pipe. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "commands.h"
#include "gen_cli.h"
#include "text/chat.h"

#define DIM "\x1b[2m"
#define UNDIM "\x1b[0m"

typedef struct chat_msg_store {
    chat_message *msgs;
    char **owned; /* the strings msgs point to */
    size_t n, cap;
} chat_msg_store;

static int store_add(chat_msg_store *s, const char *role, const char *content) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        chat_message *m = realloc(s->msgs, cap * sizeof *m);
        if (!m) return -1;
        s->msgs = m;
        char **o = realloc(s->owned, cap * sizeof *o);
        if (!o) return -1;
        s->owned = o;
        s->cap = cap;
    }
    char *copy = strdup(content);
    if (!copy) return -1;
    s->owned[s->n] = copy;
    s->msgs[s->n] = (chat_message){role, copy, NULL};
    s->n++;
    return 0;
}

static void store_truncate(chat_msg_store *s, size_t n) {
    while (s->n > n)
        free(s->owned[--s->n]);
}

/* Removes the messages [i, i + k), keeping the order of the rest. */
static void store_remove(chat_msg_store *s, size_t i, size_t k) {
    for (size_t j = i; j < i + k; j++)
        free(s->owned[j]);
    memmove(s->msgs + i, s->msgs + i + k, (s->n - i - k) * sizeof *s->msgs);
    memmove(s->owned + i, s->owned + i + k, (s->n - i - k) * sizeof *s->owned);
    s->n -= k;
}

/* The reply as it streams: its answer kept for the history (the template
 * drops earlier turns' thinking anyway), printed with the thinking dimmed
 * or hidden. */
typedef struct reply {
    char *text;
    size_t len, cap;
    int is_dim, is_tty, hide_think, failed;
} reply;

/* Ctrl-C during a reply ends that reply (kept in the history as far as it
 * got); at the prompt it quits as usual, the handler being installed only
 * while generating. */
static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

static int on_text(void *user, gen_text_kind kind, const char *text, size_t len) {
    reply *r = user;
    if (interrupted) return 1;
    if (kind == GEN_TEXT_CONTENT) {
        if (r->len + len + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 1024;
            while (cap < r->len + len + 1)
                cap *= 2;
            char *t = realloc(r->text, cap);
            if (!t) return r->failed = 1;
            r->text = t;
            r->cap = cap;
        }
        memcpy(r->text + r->len, text, len);
        r->len += len;
        r->text[r->len] = '\0';
    }
    if (kind == GEN_TEXT_REASONING && r->hide_think) return 0;
    if (r->is_tty) {
        int is_dim = kind == GEN_TEXT_REASONING; /* switch only on a change */
        if (is_dim != r->is_dim) fputs(is_dim ? DIM : UNDIM, stdout);
        r->is_dim = is_dim;
    }
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* The conversation h rendered with the template of the model's family and
 * encoded. */
static nc_status chat_encode(gen_cli_loaded *l, const chat_msg_store *h, int enable_thinking,
                             int32_t **ids, size_t *n_ids, nc_error *err) {
    char *rendered = NULL;
    chat_options copt = {1, enable_thinking, 0};
    NC_TRY(chat_render_family(l->model->e->family->chat, h->msgs, h->n, &copt, NULL, &rendered,
                              err));
    nc_status st = tok_encode(l->tok, rendered, strlen(rendered), ids, n_ids, err);
    free(rendered);
    return st;
}

/* One turn: render, encode, generate. Returns NC_OK with the reply in r.
 * Context shift (as llama.cpp's): while the conversation leaves a reply less
 * than min(-n, ctx/2) tokens, the oldest exchange after the first n_keep
 * messages (the system prompt) is dropped, said on stderr; the turn being
 * asked always stays. */
static nc_status chat_turn(gen_cli_loaded *l, const gen_cli_opts *o, chat_msg_store *h,
                           size_t n_keep, int context_shift, int enable_thinking, reply *r,
                           gen_result *res, nc_error *err) {
    int32_t *ids = NULL;
    size_t n_ids = 0;
    NC_TRY(chat_encode(l, h, enable_thinking, &ids, &n_ids, err));
    int ctx = gen_cli_ctx(l);
    int want = o->max_new_tokens < 0 || o->max_new_tokens > ctx / 2 ? ctx / 2 : o->max_new_tokens;
    size_t n_dropped = 0;
    while (context_shift && ctx - (int)n_ids < want && h->n > n_keep + 1) {
        /* a user message and the reply after it go together */
        size_t k = h->n > n_keep + 2 && !strcmp(h->msgs[n_keep + 1].role, "assistant") ? 2 : 1;
        store_remove(h, n_keep, k);
        n_dropped += k;
        free(ids);
        ids = NULL;
        NC_TRY(chat_encode(l, h, enable_thinking, &ids, &n_ids, err));
    }
    if (n_dropped)
        fprintf(stderr,
                "nectar: context shift: dropped the %zu oldest message%s%s; the conversation is "
                "%zu tokens of %d\n",
                n_dropped, n_dropped == 1 ? "" : "s", n_keep ? " (the system prompt kept)" : "",
                n_ids, ctx);
    nc_status st;
    /* a reply may use whatever room the conversation leaves, up to -n */
    int room = ctx - (int)n_ids;
    if (room <= 0) {
        free(ids);
        return nc_fail(err, NC_ERR_RANGE,
                       "the conversation (%zu tokens) does not fit in the context of %d tokens",
                       n_ids, gen_cli_ctx(l));
    }
    int max_new = o->max_new_tokens < 0 || o->max_new_tokens > room ? room : o->max_new_tokens;
    /* Qwen3.5's generation prompt with thinking on ends in "<think>\n": the
     * reply starts inside the reasoning */
    gen_request req = {o->sampling, max_new, o->stops,
                       o->n_stops,  0,       1,
                       l->model->e->family->prompt_opens_think && enable_thinking, NULL};
    gen_callbacks cb = {NULL, on_text, r};
    st = gen_generate(l->seq, ids, (int)n_ids, &req, &cb, res, err);
    free(ids);
    if (st == NC_OK && r->failed) st = nc_fail(err, NC_ERR_NOMEM, "chat: out of memory");
    return st;
}

int cmd_chat(int argc, char **argv) {
    gen_cli_opts o;
    gen_cli_defaults(&o, 1024);
    const char *system = NULL;
    int think = 0, no_think = 0, hide_think = 0, no_context_shift = 0;
    const cli_opt own[] = {
        CLI_OPT(NULL, "--system", CLI_STRING, "TEXT", "system prompt", &system),
        CLI_OPT(NULL, "--think", CLI_FLAG, NULL, "let the model think first (default)", &think),
        CLI_OPT(NULL, "--no-think", CLI_FLAG, NULL,
                "answer directly (the template's empty think block)", &no_think),
        CLI_OPT(NULL, "--hide-think", CLI_FLAG, NULL, "do not print the thinking", &hide_think),
        CLI_OPT(NULL, "--no-context-shift", CLI_FLAG, NULL,
                "refuse a turn that does not fit instead of dropping the oldest turns",
                &no_context_shift),
        CLI_ENDROW};
    cli_opt shared[GEN_CLI_N_ROWS];
    gen_cli_table(&o, shared);
    const cli_command cmd = {
        .name = "chat",
        .usage = "-m DIR [--system TEXT] [--think | --no-think] [--hide-think] [options]",
        .about = "Interactive chat with the Qwen3 chat template. One line is one user turn;\n"
                 "/reset clears the history, Ctrl-D (end of input) quits. Defaults: -n 1024 per\n"
                 "reply (less when the context has less room); sampling from the model's\n"
                 "generation_config.json where it has a value, else as Qwen3 recommends: with\n"
                 "thinking temp 0.6, top-p 0.95, top-k 20; without, temp 0.7, top-p 0.8,\n"
                 "top-k 20. When the conversation outgrows the context, the oldest turns are\n"
                 "dropped (the system prompt kept) and a line on stderr says so.\n",
        .opts = {own, shared}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc == CLI_GO) rc = gen_cli_finish(&cmd, &o);
    if (rc != CLI_GO) return rc;
    if (think && no_think)
        return cli_usage_error(&cmd, "--think and --no-think exclude each other");
    int enable_thinking = !no_think;
    rc = 0;
    if (enable_thinking) { /* Qwen3's recommended thinking-mode sampling */
        if (!(o.set & GEN_SET_TEMPERATURE)) o.sampling.temperature = 0.6f;
        if (!(o.set & GEN_SET_TOP_P)) o.sampling.top_p = 0.95f;
    }

    nc_error err = {0};
    engine_options eo; /* checks --ane-device / NECTAR_ANE_DEVICE: a usage error */
    if (gen_cli_engine_options(&o, &eo, &err) != NC_OK) return cli_usage_error(&cmd, "%s", err.msg);
    if (gen_cli_apply_generation_config(&o, &err) != NC_OK) return cli_fail(&err);
    gen_cli_loaded l;
    if (gen_cli_load(&o, &l, &err) != NC_OK) return cli_fail(&err);
    int is_tty_in = isatty(STDIN_FILENO), is_tty_out = isatty(STDOUT_FILENO);
    fprintf(stderr, "nectar: loaded %s in %.2f s; /reset clears the history, Ctrl-D quits\n",
            o.model_dir, l.load_s);

    chat_msg_store h = {0};
    if (system && store_add(&h, "system", system)) rc = cli_failf("chat: out of memory");
    size_t n_base = h.n;
    reply r = {0};
    r.is_tty = is_tty_out;
    r.hide_think = hide_think;
    char *line = NULL;
    size_t line_cap = 0;
    while (rc == 0) {
        if (is_tty_in) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &line_cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0) continue;
        if (!strcmp(line, "/reset")) {
            store_truncate(&h, n_base);
            gen_seq_reset(l.seq);
            fprintf(stderr, "nectar: history cleared\n");
            continue;
        }
        if (store_add(&h, "user", line)) {
            rc = cli_failf("chat: out of memory");
            break;
        }
        r.len = 0;
        gen_result res;
        struct sigaction sa = {0}, old_sa;
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        interrupted = 0;
        sigaction(SIGINT, &sa, &old_sa);
        nc_status st =
            chat_turn(&l, &o, &h, n_base, !no_context_shift, enable_thinking, &r, &res, &err);
        sigaction(SIGINT, &old_sa, NULL);
        if (r.is_dim) fputs(UNDIM, stdout);
        r.is_dim = 0;
        if (st == NC_OK || r.len) fputc('\n', stdout); /* a refused turn printed nothing */
        fflush(stdout);
        if (st != NC_OK) {
            /* the turn is dropped; the history stays usable (or /reset) */
            store_truncate(&h, h.n - 1);
            if (st == NC_ERR_RANGE)
                fprintf(stderr, "nectar: error: %s (/reset clears the history)\n", err.msg);
            else
                rc = cli_fail(&err);
            continue;
        }
        if (store_add(&h, "assistant", r.text ? r.text : "")) {
            rc = cli_failf("chat: out of memory");
            break;
        }
        fprintf(stderr, "nectar: ");
        gen_cli_timings tm = gen_cli_timings_of_result(&res);
        gen_cli_print_timings(stderr, &tm);
        fputc('\n', stderr);
        fflush(stderr);
    }
    free(line);
    free(r.text);
    store_truncate(&h, 0);
    free(h.msgs);
    free(h.owned);
    gen_cli_unload(&l);
    return rc;
}
