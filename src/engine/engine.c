/* engine_open and the table of engine kinds: the one place where a backend
 * is chosen. A kind is a model family (a row of models/family.h, which
 * matches config.json's model_type) on a backend; the backends' table says
 * what opens a decoder family on it and what opens the encoder, and the
 * family row whether it has a lowering (the bundle backends run only
 * those). So adding a decoder family adds no row here, and adding a
 * backend is one row and its openers (docs/engine.md). */
#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mmap.h"
#include "engine/engine_options.h"
#include "engine/engines.h"

/* A backend: its name (`--backend`), the opener of every decoder family's
 * kind on it and the encoder's. */
typedef struct engine_backend {
    const char *name;
    engine_open_fn open_decoder, open_encoder;
    int runs_bundles; /* a compiled bundle: families with a lowering (family.compiles) only */
} engine_backend;

static const engine_backend backends[] = {
    {"cpu", engine_open_decoder_cpu, engine_open_modernbert_cpu, 0},
    {"mil", engine_open_bundle_mil, engine_open_modernbert_mil, 1},
    {"ane", engine_open_bundle_ane, engine_open_modernbert_ane, 1},
};
#define N_BACKENDS (int)(sizeof backends / sizeof backends[0])

/* A kind: "<family>-<backend>", made once from the two tables. */
typedef struct engine_row {
    char kind[32];
    const char *family, *backend;
    engine_open_fn open;
    int chosen; /* engine_kind_for may pick it for a folder of its family */
} engine_row;

/* At most every family on every backend, and the script kind: the tables
 * size it, so a family or backend added can never find it full. */
#define MAX_ROWS (MODEL_FAMILY_ROWS * N_BACKENDS + 1)
static engine_row rows[MAX_ROWS];
static int n_rows;
static pthread_once_t rows_made = PTHREAD_ONCE_INIT;

static engine_row *add_row(const char *family, const char *backend, engine_open_fn open,
                           int chosen) {
    engine_row *r = &rows[n_rows++];
    snprintf(r->kind, sizeof r->kind, "%s-%s", family, backend);
    r->family = family;
    r->backend = backend;
    r->open = open;
    r->chosen = chosen;
    return r;
}

static void make_rows(void) {
    const model_family_row *f;
    for (int i = 0; (f = model_family_at(i)); i++)
        for (int b = 0; b < N_BACKENDS; b++)
            if (f->compiles || !backends[b].runs_bundles)
                add_row(f->name, backends[b].name,
                        f->is_encoder ? backends[b].open_encoder : backends[b].open_decoder, 1);
    /* tests: a deterministic stand-in model (engine_script.c) with Qwen3's
     * tokenizer, template and end token */
    engine_row *script = add_row("qwen3", "script", engine_open_script, 0);
    snprintf(script->kind, sizeof script->kind, "script");
}

static void ensure_rows(void) {
    pthread_once(&rows_made, make_rows);
}

const char *const *engine_kinds(void) {
    static const char *names[MAX_ROWS + 1];
    ensure_rows();
    for (int i = 0; i < n_rows; i++)
        names[i] = rows[i].kind;
    return names;
}

/* The i-th backend (`--backend`'s choices), NULL past the last. */
const char *engine_backend_at(int i) {
    return i >= 0 && i < N_BACKENDS ? backends[i].name : NULL;
}

/* "cpu|mil|ane" (sep "|", last "|"), "cpu, mil or ane" (", ", " or ") */
static const char *backend_list(char *buf, size_t cap, const char *sep, const char *last) {
    buf[0] = '\0';
    for (int i = 0; engine_backend_at(i); i++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s",
                 !i ? "" : engine_backend_at(i + 1) ? sep : last, engine_backend_at(i));
    return buf;
}

const char *engine_backend_choices(void) {
    static char buf[64];
    return buf[0] ? buf : backend_list(buf, sizeof buf, "|", "|");
}

nc_status engine_backend_check(const char *name, const char *what, nc_error *err) {
    for (int i = 0; engine_backend_at(i); i++)
        if (!strcmp(engine_backend_at(i), name)) return NC_OK;
    char list[64];
    return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not a backend (%s)", what, name,
                   backend_list(list, sizeof list, ", ", " or "));
}

static const engine_row *row_of(const char *kind) {
    ensure_rows();
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].kind, kind)) return &rows[i];
    return NULL;
}

const model_family_row *engine_kind_family(const char *kind) {
    const engine_row *row = kind ? row_of(kind) : NULL;
    return row ? model_family_named(row->family) : NULL;
}

const char *engine_family_kind(const model_family_row *f, const char *backend) {
    ensure_rows();
    for (int i = 0; f && i < n_rows; i++)
        if (rows[i].chosen && !strcmp(rows[i].family, f->name) && !strcmp(rows[i].backend, backend))
            return rows[i].kind;
    return NULL;
}

nc_status engine_open(const char *kind, const char *dir, const engine_options *opt, engine **out,
                      nc_error *err) {
    *out = NULL;
    const engine_row *row = row_of(kind);
    if (!row) return nc_fail(err, NC_ERR_INVALID, "no engine kind '%s'", kind);
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    engine_options none = {0};
    engine *e = calloc(1, sizeof *e);
    if (!e) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->kind = row->kind;
    e->family = model_family_named(row->family);
    e->is_encoder = e->family->is_encoder;
    nc_status st = row->open(dir, opt ? opt : &none, e, err);
    if (st != NC_OK) {
        engine_close(e);
        return st;
    }
    /* what the options became (NECTAR_LOG=debug; tests read it) */
    if (!e->is_encoder)
        nc_log(NC_LOG_DEBUG, "engine %s: %s, %s KV cache, context %d", kind, dir,
               e->is_kv_f16 ? "fp16" : "fp32", e->ctx_max);
    *out = e;
    return NC_OK;
}

void engine_close(engine *e) {
    if (!e) return;
    if (e->ops && e->ops->close) e->ops->close(e);
    free(e);
}

const char *engine_placement(const engine *e) {
    if (e->placement) return e->placement;
    if (strstr(e->kind, "-mil")) return "every kernel in the MIL interpreter (fp16, on the CPU)";
    return "every kernel on the CPU";
}

/* want: -1 any kind, 0 decoders only, 1 encoders only */
static nc_status kind_for(const char *backend, const char *dir, int want, const char **kind,
                          nc_error *err) {
    *kind = NULL;
    int known = 0; /* a backend of any row: "script" has rows, none chosen for a folder */
    ensure_rows();
    for (int i = 0; i < n_rows; i++)
        known |= !strcmp(rows[i].backend, backend);
    if (!known) return engine_backend_check(backend, "--backend", err);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    if (!nc_file_exists(path)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: file not found", path);
    json_t *doc = NULL;
    NC_TRY(nc_json_load_file(path, &doc, err));
    const char *type = json_string_value(json_object_get(doc, "model_type"));
    const model_family_row *f = model_family_of_type(type);
    if (f && want >= 0 && f->is_encoder != want) f = NULL; /* not of the wanted sort */
    *kind = engine_family_kind(f, backend);
    nc_status st = NC_OK;
    if (!f)
        st = nc_fail(err, NC_ERR_INVALID, "%s: model_type '%s' is not supported%s", path,
                     type ? type : "(none)",
                     want == 1   ? " (not an encoder)"
                     : want == 0 ? " (not a text generator)"
                                 : "");
    else if (!*kind)
        st = nc_fail(err, NC_ERR_INVALID, "%s: model_type '%s' has no %s engine", path, type,
                     backend);
    json_decref(doc);
    return st;
}

nc_status engine_kind_for(const char *backend, const char *dir, const char **kind, nc_error *err) {
    return kind_for(backend, dir, -1, kind, err);
}

nc_status engine_kind_for_decoder(const char *backend, const char *dir, const char **kind,
                                  nc_error *err) {
    return kind_for(backend, dir, 0, kind, err);
}

nc_status engine_kind_for_encoder(const char *backend, const char *dir, const char **kind,
                                  nc_error *err) {
    return kind_for(backend, dir, 1, kind, err);
}

nc_status engine_forward(engine *e, engine_seq *s, const int32_t *tokens, int n, float *logits,
                         nc_error *err) {
    engine_step_item it = {s, tokens, n, logits, NC_OK, {0}, 0};
    NC_TRY(e->ops->step(e, &it, 1, err));
    if (it.status != NC_OK && err) *err = it.err;
    return it.status;
}

nc_status engine_set_layer_hook(engine *e, engine_layer_hook hook, void *user, nc_error *err) {
    if (!e->ops->set_layer_hook)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s engine cannot report per-layer states",
                       e->kind);
    e->ops->set_layer_hook(e, hook, user);
    return NC_OK;
}

nc_status engine_encode(engine *e, const modernbert_io *io, nc_error *err) {
    if (!e->ops->encode)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s engine is not an encoder", e->kind);
    return e->ops->encode(e, io, err);
}

void engine_set_eos(engine *e, const int32_t *ids, int n) {
    e->n_eos = 0;
    for (int i = 0; i < n && e->n_eos < ENGINE_MAX_EOS; i++) {
        int seen = ids[i] < 0;
        for (int k = 0; k < e->n_eos; k++)
            seen |= e->eos_ids[k] == ids[i];
        if (!seen) e->eos_ids[e->n_eos++] = ids[i];
    }
}
