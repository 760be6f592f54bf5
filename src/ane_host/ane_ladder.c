/* The ladder's order and its record in the probe profile (ane_ladder.h).
 * The profile's "ladder" member:
 *   {"<device>": {"<program key>": {"paths": [...], "start": "function",
 *     "outcomes": {"program": {"ok": false, "error": "..."},
 *                  "function": {"ok": true, "functions": 12, "refused": 0,
 *                               "refused_functions": "", "error": ""}}}}} */
#include "ane_host/ane_ladder.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ane_host/ane_stage.h"
#include "base/json.h"
#include "base/mmap.h"
#include "bundle/bundle_io.h"
#include "mil/print.h"

const char *const ANE_LADDER_ORDER[ANE_N_RUNGS] = {"program", "function", "outputs", "relower",
                                                   "cpu"};

const char *ane_rung_name(ane_rung r) {
    return r >= 0 && r < ANE_N_RUNGS ? ANE_LADDER_ORDER[r] : "?";
}

int ane_rung_parse(const char *name) {
    for (int i = 0; name && i < ANE_N_RUNGS; i++)
        if (!strcmp(ANE_LADDER_ORDER[i], name)) return i;
    return -1;
}

nc_status ane_ladder_profile_path(int is_fake, char *buf, size_t cap, nc_error *err) {
    const char *env = getenv("NECTAR_ANE_PROFILE");
    buf[0] = '\0';
    if (env && !strcmp(env, "off")) return NC_OK;
    if (env && *env) {
        if (strlen(env) >= cap) return nc_fail(err, NC_ERR_RANGE, "NECTAR_ANE_PROFILE is too long");
        snprintf(buf, cap, "%s", env);
        return NC_OK;
    }
    if (is_fake) return NC_OK;
    char root[1024];
    NC_TRY(ane_stage_default_root(root, sizeof root, err));
    if (strlen(root) + sizeof "/profile.json" > cap)
        return nc_fail(err, NC_ERR_RANGE, "the probe profile's path is too long");
    snprintf(buf, cap, "%s/profile.json", root);
    return NC_OK;
}

/* The order: the profile's "ladder_order" (rung names) or the default. */
static nc_status read_order(ane_ladder *l, const json_t *doc, nc_error *err) {
    const json_t *o = doc ? json_object_get(doc, "ladder_order") : NULL;
    char names[128] = ""; /* for messages: "program, function, ..." */
    for (int i = 0; i < ANE_N_RUNGS; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 ANE_LADDER_ORDER[i]);
    l->n_order = 0;
    if (!o) {
        for (int i = 0; i < ANE_N_RUNGS; i++)
            l->order[l->n_order++] = (ane_rung)i;
        return NC_OK;
    }
    size_t i;
    const json_t *v;
    if (!json_is_array(o) || json_array_size(o) == 0 || json_array_size(o) > ANE_N_RUNGS)
        return nc_fail(err, NC_ERR_FORMAT, "%s: ladder_order: give a list of %s", l->profile,
                       names);
    json_array_foreach(o, i, v) {
        int r = ane_rung_parse(json_string_value(v));
        if (r < 0)
            return nc_fail(err, NC_ERR_FORMAT, "%s: ladder_order[%zu]: not a rung (%s)",
                           l->profile, i, names);
        l->order[l->n_order++] = (ane_rung)r;
    }
    return NC_OK;
}

nc_status ane_ladder_open(ane_ladder *l, const char *profile, const char *device, nc_error *err) {
    memset(l, 0, sizeof *l);
    snprintf(l->profile, sizeof l->profile, "%s", profile ? profile : "");
    snprintf(l->device, sizeof l->device, "%s", device ? device : "");
    json_t *doc = NULL;
    if (l->profile[0] && nc_file_exists(l->profile)) {
        NC_TRY(nc_json_load_file(l->profile, &doc, err));
        if (!json_is_object(doc)) {
            json_decref(doc);
            return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", l->profile);
        }
    }
    nc_status st = read_order(l, doc, err);
    if (st) {
        json_decref(doc);
        return st;
    }
    l->recorded = doc;
    return NC_OK;
}

void ane_ladder_close(ane_ladder *l) {
    json_decref(l->recorded);
    l->recorded = NULL;
}

nc_status ane_ladder_program_key(const char *dir, char key[24], nc_error *err) {
    char path[4400];
    snprintf(path, sizeof path, "%s/model.mil", dir);
    char *text;
    size_t n;
    NC_TRY(nc_read_file(path, &text, &n, err));
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)text[i]) * 0x100000001b3ull;
    free(text);
    snprintf(key, 24, "%016llx", (unsigned long long)h);
    return NC_OK;
}

static const json_t *entry(const ane_ladder *l, const char *key) {
    const json_t *lad = l->recorded ? json_object_get(l->recorded, "ladder") : NULL;
    const json_t *dev = lad ? json_object_get(lad, l->device) : NULL;
    return dev ? json_object_get(dev, key) : NULL;
}

int ane_ladder_start(const ane_ladder *l, ane_ladder_outcome *o) {
    const json_t *e = entry(l, o->key);
    int r = e ? ane_rung_parse(json_string_value(json_object_get(e, "start"))) : -1;
    int start = -1;
    for (int i = 0; r >= 0 && i < l->n_order; i++)
        if (l->order[i] == (ane_rung)r) start = i;
    if (start <= 0) return 0;
    const json_t *out = json_object_get(e, "outcomes");
    for (int i = 0; i < start; i++) {
        ane_rung k = l->order[i];
        const json_t *x = json_object_get(out, ane_rung_name(k));
        const char *t = json_string_value(json_object_get(x, "error"));
        o->tried[k] = 1;
        o->ok[k] = 0;
        snprintf(o->error[k], sizeof o->error[k], "%s", t ? t : "refused (recorded)");
    }
    const json_t *f = json_object_get(out, ane_rung_name(ANE_RUNG_FUNCTION));
    const char *names = json_string_value(json_object_get(f, "refused_functions"));
    snprintf(o->fns_refused, sizeof o->fns_refused, "%s", names ? names : "");
    const json_t *s = json_object_get(out, ane_rung_name(ANE_RUNG_OUTPUTS));
    names = json_string_value(json_object_get(s, "split_functions"));
    snprintf(o->fns_split, sizeof o->fns_split, "%s", names ? names : "");
    o->outputs_known = s != NULL;
    const json_t *rl = json_object_get(out, ane_rung_name(ANE_RUNG_RELOWER));
    names = json_string_value(json_object_get(rl, "relowered_functions"));
    snprintf(o->fns_relowered, sizeof o->fns_relowered, "%s", names ? names : "");
    o->relower_known = rl != NULL;
    return start;
}

int ane_ladder_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

nc_status ane_ladder_record(ane_ladder *l, const ane_ladder_outcome *o, int n, nc_error *err) {
    if (!l->profile[0] || (n <= 0 && !l->recorded)) return NC_OK;
    if (!l->recorded) l->recorded = json_object();
    json_t *dev = lower_json_child(lower_json_child(l->recorded, "ladder"), l->device);
    for (int i = 0; i < n; i++) {
        int same = -1; /* an earlier program of the same text: one entry, its paths listed */
        for (int k = 0; k < i && same < 0; k++)
            if (!strcmp(o[k].key, o[i].key)) same = k;
        if (same >= 0) {
            json_array_append_new(json_object_get(json_object_get(dev, o[i].key), "paths"),
                                  json_string(o[i].path));
            continue;
        }
        json_t *outs = json_object();
        for (int r = 0; r < ANE_N_RUNGS; r++) {
            if (!o[i].tried[r]) continue;
            json_t *x = json_pack("{s:b, s:s}", "ok", o[i].ok[r], "error", o[i].error[r]);
            if (r == ANE_RUNG_FUNCTION) {
                json_object_set_new(x, "functions", json_integer(o[i].n_fns));
                json_object_set_new(x, "refused", json_integer(o[i].n_fns_refused));
                json_object_set_new(x, "refused_functions", json_string(o[i].fns_refused));
            }
            if (r == ANE_RUNG_OUTPUTS)
                json_object_set_new(x, "split_functions", json_string(o[i].fns_split));
            if (r == ANE_RUNG_RELOWER) {
                json_object_set_new(x, "relowered_functions", json_string(o[i].fns_relowered));
                json_object_set_new(x, "forms", json_string(o[i].relowered_forms));
            }
            json_object_set_new(outs, ane_rung_name((ane_rung)r), x);
        }
        json_object_set_new(dev, o[i].key,
                            json_pack("{s:[s], s:s, s:o}", "paths", o[i].path, "start",
                                      ane_rung_name(o[i].start), "outcomes", outs));
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", l->profile);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        NC_TRY(ane_make_dirs(dir, err));
    }
    json_incref(l->recorded); /* nc_json_save takes a reference */
    return nc_json_save(l->recorded, l->profile, 1, err);
}

void ane_ladder_put_forms(ane_ladder *l, const lower_forms_tally *t) {
    if (!l->profile[0]) return;
    if (!l->recorded) l->recorded = json_object();
    lower_forms_tally_put(l->recorded, l->device, t);
}

int ane_ladder_recommend(const ane_ladder *l, const lower_all_forms *cur, lower_all_forms *out,
                         char *why, size_t why_cap, char *options, size_t options_cap) {
    return lower_forms_recommend(l->recorded, l->device, cur, out, why, why_cap, options,
                                 options_cap);
}

void ane_ladder_tally(lower_forms_tally *t, const lower_program_info *p,
                      const ane_ladder_outcome *o) {
    int whole = o->tried[ANE_RUNG_PROGRAM] && o->ok[ANE_RUNG_PROGRAM];
    int fn_ok[LOWER_MAX_FUNCS];
    const char *fn_err[LOWER_MAX_FUNCS];
    for (int f = 0; f < p->n_fns && f < LOWER_MAX_FUNCS; f++) {
        fn_ok[f] = !o->tried[ANE_RUNG_FUNCTION] ? -1
                   : ane_ladder_listed(o->fns_refused, p->fns[f].name) ? 0
                                                                       : 1;
        /* this run's own refusal, else the rung's first (recorded runs keep that one) */
        fn_err[f] = o->fn_error[f][0] ? o->fn_error[f] : o->error[ANE_RUNG_FUNCTION];
    }
    lower_forms_tally_program(t, p, whole, o->error[ANE_RUNG_PROGRAM], fn_ok, fn_err);
}

/* Links src's weights into dst/weights (created): hard, else symbolic. */
static nc_status link_weights(const char *src, const char *dst, nc_error *err) {
    char path[4600], from[4600];
    snprintf(path, sizeof path, "%s/weights", dst);
    NC_TRY(ane_make_dirs(path, err));
    snprintf(from, sizeof from, "%s/weights/weight.bin", src);
    snprintf(path, sizeof path, "%s/weights/weight.bin", dst);
    struct stat a, b;
    if (stat(from, &a) != 0) return NC_OK; /* a program without weights */
    if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return NC_OK;
    /* absent, or a link to an older file (a folder written again: the relower rung) */
    if ((unlink(path) != 0 && errno != ENOENT) || (link(from, path) != 0 && symlink(from, path) != 0))
        return nc_fail(err, NC_ERR_IO, "%s: %s", path, strerror(errno));
    return NC_OK;
}

nc_status ane_ladder_write_output_view(const mil_program *prog, const char *fn, int out_index,
                                       const char *piece, const char *src, const char *dst,
                                       nc_error *err) {
    const mil_function *f = mil_program_function(prog, fn);
    if (!f || out_index < 0 || out_index >= f->n_outputs)
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no output %d of function %s", src, out_index,
                       fn);
    NC_TRY(link_weights(src, dst, err));
    /* the ops the output needs: backwards from it, over every argument */
    char *need = calloc((size_t)f->n_vars + 1, 1);
    mil_op **ops = calloc((size_t)f->n_ops + 1, sizeof *ops);
    if (!need || !ops) {
        free(need);
        free(ops);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    need[f->outputs[out_index]->id] = 1;
    for (int k = f->n_ops - 1; k >= 0; k--) {
        const mil_op *op = f->ops[k];
        int used = 0;
        for (int o = 0; o < op->n_outputs; o++)
            used |= need[op->outputs[o]->id];
        if (!used) continue;
        for (int a = 0; a < op->n_args; a++)
            for (int j = 0; j < op->args[a].n_items; j++) {
                int id = op->args[a].items[j]->id;
                if (id >= 0 && id < f->n_vars) need[id] = 1;
            }
    }
    int n = 0;
    for (int k = 0; k < f->n_ops; k++) {
        int used = 0;
        for (int o = 0; o < f->ops[k]->n_outputs; o++)
            used |= need[f->ops[k]->outputs[o]->id];
        if (used) ops[n++] = f->ops[k];
    }
    mil_function one = *f; /* a view: the same inputs, one output, the ops it needs */
    one.name = piece;
    one.ops = ops;
    one.n_ops = one.cap_ops = n;
    one.outputs = &f->outputs[out_index];
    one.n_outputs = 1;
    mil_function *list[1] = {&one};
    mil_program view = *prog;
    view.functions = list;
    view.n_functions = view.cap_functions = 1;
    char path[4600];
    snprintf(path, sizeof path, "%s/model.mil", dst);
    nc_status st = mil_print_file(&view, path, err);
    free(need);
    free(ops);
    return st;
}

nc_status ane_ladder_write_view(const mil_program *prog, const char *const *names, int n,
                                const char *src, const char *dst, nc_error *err) {
    char path[4600];
    NC_TRY(link_weights(src, dst, err));
    mil_function **sub = calloc((size_t)n + 1, sizeof *sub);
    if (!sub) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    int k = 0;
    for (int i = 0; i < n; i++) {
        mil_function *fn = mil_program_function(prog, names[i]);
        if (!fn) {
            free(sub);
            return nc_fail(err, NC_ERR_NOT_FOUND, "%s: the program has no function %s", src,
                           names[i]);
        }
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= sub[j] == fn;
        if (!seen) sub[k++] = fn;
    }
    mil_program view = *prog; /* a view: the chosen functions */
    view.n_functions = view.cap_functions = k;
    view.functions = sub;
    snprintf(path, sizeof path, "%s/model.mil", dst);
    nc_status st = mil_print_file(&view, path, err);
    free(sub);
    return st;
}
