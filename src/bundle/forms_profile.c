/* The lowering forms as probe-profile keys (forms_profile.h). */
#include "bundle/forms_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle_io.h"

/* Each key: its profile name, its compile option, and its values in the
 * order a refusal moves through them (data, not code: the ladder of forms).
 * kv_update "host" is left out of the order for now: the ane runner has
 * run it since its host step landed, but moving a refused kv kernel to it
 * has not been tried on a device. */
static const struct form_row {
    const char *name, *option;
    const char *order[7];
} FORM_KEYS[LOWER_N_FORM_KEYS] = {
    [LOWER_FK_PROGRAM_SPLIT] = {"program_split", "--program-split", {"layer", "kernel", "function"}},
    [LOWER_FK_KERNELS_PER_LAYER] = {"kernels_per_layer", "--kernels-per-layer", {"4", "3", "2", "1"}},
    [LOWER_FK_KV_UPDATE] = {"kv_update", "--kv-update", {"onehot", "gather"}},
    [LOWER_FK_ROPE] = {"rope", "--rope", {"conv", "matmul"}},
    [LOWER_FK_ATTENTION] = {"attention", "--attention", {"broadcast", "grouped"}},
    [LOWER_FK_HEAD_ROWS] = {"head_rows", "--head-rows", {"16384", "8192", "4096", "2048", "1024"}},
    [LOWER_FK_HEAD_SPLIT] = {"head_split", "--head-split", {"per-chunk", "one"}},
    [LOWER_FK_EXP] = {"exp", "--exp", {"sigmoid", "op"}},
    [LOWER_FK_MATMUL_PAD] = {"matmul_pad", "--matmul-pad", {"32", "none"}},
};

#define BIT(k) (1u << (k))

/* The forms each kernel holds: what its refusal is charged to. */
static const struct kernel_row {
    const char *kernel;
    unsigned keys;
} KERNEL_KEYS[] = {
    {"qkv", BIT(LOWER_FK_ROPE)},
    {"kv", BIT(LOWER_FK_KV_UPDATE) | BIT(LOWER_FK_KERNELS_PER_LAYER)},
    {"attn", BIT(LOWER_FK_ATTENTION)},
    {"kvattn", BIT(LOWER_FK_KV_UPDATE) | BIT(LOWER_FK_ATTENTION) | BIT(LOWER_FK_KERNELS_PER_LAYER)},
    {"qkva", BIT(LOWER_FK_ROPE) | BIT(LOWER_FK_KV_UPDATE) | BIT(LOWER_FK_ATTENTION) |
                 BIT(LOWER_FK_KERNELS_PER_LAYER)},
    {"layer", BIT(LOWER_FK_ROPE) | BIT(LOWER_FK_KV_UPDATE) | BIT(LOWER_FK_ATTENTION) |
                  BIT(LOWER_FK_KERNELS_PER_LAYER)},
    {"mlp", 0},
    {"head", BIT(LOWER_FK_HEAD_ROWS)},
    {"step", BIT(LOWER_FK_EXP) | BIT(LOWER_FK_MATMUL_PAD)},
    {"prefill", BIT(LOWER_FK_EXP) | BIT(LOWER_FK_MATMUL_PAD)},
};

const char *lower_form_key_name(lower_form_key k) {
    return k >= 0 && k < LOWER_N_FORM_KEYS ? FORM_KEYS[k].name : "?";
}

const char *lower_form_option(lower_form_key k) {
    return k >= 0 && k < LOWER_N_FORM_KEYS ? FORM_KEYS[k].option : "?";
}

void lower_form_value(const lower_all_forms *a, lower_form_key k, char *buf, size_t cap) {
    const lower_forms *f = &a->forms;
    switch (k) {
    case LOWER_FK_PROGRAM_SPLIT:
        snprintf(buf, cap, "%s", lower_program_split_name(f->program_split));
        return;
    case LOWER_FK_KERNELS_PER_LAYER:
        snprintf(buf, cap, "%d", a->kernels_per_layer ? a->kernels_per_layer : 4);
        return;
    case LOWER_FK_KV_UPDATE:
        snprintf(buf, cap, "%s", lower_kv_update_name(f->kv_update));
        return;
    case LOWER_FK_ROPE:
        snprintf(buf, cap, "%s", lower_rope_form_name(f->rope));
        return;
    case LOWER_FK_ATTENTION:
        snprintf(buf, cap, "%s", lower_attention_form_name(f->attention));
        return;
    case LOWER_FK_HEAD_ROWS:
        snprintf(buf, cap, "%d", f->head_rows ? f->head_rows : LOWER_HEAD_ROWS_DEFAULT);
        return;
    case LOWER_FK_HEAD_SPLIT:
        snprintf(buf, cap, "%s", lower_head_split_name(f->head_split));
        return;
    case LOWER_FK_EXP:
        snprintf(buf, cap, "%s", lower_exp_form_name(f->exp));
        return;
    case LOWER_FK_MATMUL_PAD:
        snprintf(buf, cap, "%s", lower_matmul_pad_name(f->matmul_pad));
        return;
    case LOWER_N_FORM_KEYS:
        break;
    }
    snprintf(buf, cap, "?");
}

/* *dst = v when v >= 0. */
static int set_if(int *dst, int v) {
    if (v < 0) return -1;
    *dst = v;
    return 0;
}

int lower_form_set(lower_all_forms *a, lower_form_key k, const char *value) {
    lower_forms *f = &a->forms;
    char *end;
    long n;
    switch (k) {
    case LOWER_FK_PROGRAM_SPLIT:
        return set_if((int *)&f->program_split, lower_program_split_parse(value));
    case LOWER_FK_KERNELS_PER_LAYER:
        n = strtol(value, &end, 10);
        return *end || n < 1 || n > 4 ? -1 : set_if(&a->kernels_per_layer, (int)n);
    case LOWER_FK_KV_UPDATE:
        return set_if((int *)&f->kv_update, lower_kv_update_parse(value));
    case LOWER_FK_ROPE:
        return set_if((int *)&f->rope, lower_rope_form_parse(value));
    case LOWER_FK_ATTENTION:
        return set_if((int *)&f->attention, lower_attention_form_parse(value));
    case LOWER_FK_HEAD_ROWS:
        n = strtol(value, &end, 10);
        return *end || n < 32 || n > LOWER_MAX_HEAD_ROWS ? -1 : set_if(&f->head_rows, (int)n);
    case LOWER_FK_HEAD_SPLIT:
        return set_if((int *)&f->head_split, lower_head_split_parse(value));
    case LOWER_FK_EXP:
        return set_if((int *)&f->exp, lower_exp_form_parse(value));
    case LOWER_FK_MATMUL_PAD:
        return set_if((int *)&f->matmul_pad, lower_matmul_pad_parse(value));
    case LOWER_N_FORM_KEYS:
        break;
    }
    return -1;
}

static unsigned keys_of(const lower_fn_info *fn);

void lower_forms_tally_init(lower_forms_tally *t, const lower_manifest *m) {
    memset(t, 0, sizeof *t);
    t->of.forms = m->forms;
    t->of.kernels_per_layer = m->kernels_per_layer;
    /* the model, as compile's rules see it: Qwen3.5 by its linear layers'
     * programs (step, prefill: the forms of exp) */
    for (int p = 0; p < m->n_programs && m->programs; p++)
        for (int f = 0; f < m->programs[p].n_fns; f++)
            t->of.model.recurrent |= (keys_of(&m->programs[p].fns[f]) & BIT(LOWER_FK_EXP)) != 0;
    t->of.model.windows = m->cfg.norm_plus_one; /* Gemma 3 */
    t->of.model.vocab = m->lm_head_on_ane ? m->cfg.vocab_size : 0;
}

/* The forms function fn holds: its kernel's row ("attn_s64" -> attn), and
 * the head split when it has several outputs (--head-split one). */
static unsigned keys_of(const lower_fn_info *fn) {
    size_t len = strlen(fn->name);
    const char *s = strrchr(fn->name, '_');
    if (s && (s[1] == 's' || s[1] == 'b') && s[2] >= '0' && s[2] <= '9') len = (size_t)(s - fn->name);
    unsigned keys = 0;
    for (size_t i = 0; i < sizeof KERNEL_KEYS / sizeof KERNEL_KEYS[0]; i++)
        if (strlen(KERNEL_KEYS[i].kernel) == len && !strncmp(KERNEL_KEYS[i].kernel, fn->name, len))
            keys = KERNEL_KEYS[i].keys;
    if (len == 4 && !strncmp(fn->name, "head", 4) && fn->n_out > 1) keys |= BIT(LOWER_FK_HEAD_SPLIT);
    return keys;
}

static void charge(lower_forms_tally *t, unsigned keys, int ok, const char *error) {
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        if (!(keys & BIT(k))) continue;
        if (ok) {
            t->key[k].ok++;
            continue;
        }
        if (!t->key[k].refused++)
            snprintf(t->key[k].error, sizeof t->key[k].error, "%s", error ? error : "refused");
    }
}

void lower_forms_tally_program(lower_forms_tally *t, const lower_program_info *p, int whole_ok,
                               const char *whole_error, const int *fn_ok,
                               const char *const *fn_error) {
    int all_alone = p->n_fns > 1; /* every function compiled alone */
    for (int f = 0; f < p->n_fns; f++) {
        int ok = whole_ok ? 1 : p->n_fns == 1 ? 0 : fn_ok ? fn_ok[f] : -1;
        all_alone &= ok == 1;
        if (ok < 0) continue;
        const char *e = p->n_fns == 1 ? whole_error : fn_error ? fn_error[f] : NULL;
        charge(t, keys_of(&p->fns[f]), ok, e);
    }
    /* the split: a program of several functions that compiled as it is, or
     * was refused although each of its functions compiles alone */
    if (p->layer >= 0 && p->n_fns > 1 && (whole_ok || all_alone))
        charge(t, BIT(LOWER_FK_PROGRAM_SPLIT), whole_ok, whole_error);
}

void lower_forms_tally_put(json_t *profile, const char *device, const lower_forms_tally *t) {
    json_t *dev = NULL;
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        if (!t->key[k].ok && !t->key[k].refused) continue;
        if (!dev) dev = lower_json_child(lower_json_child(profile, "forms"), device);
        char v[32];
        lower_form_value(&t->of, (lower_form_key)k, v, sizeof v);
        json_object_set_new(lower_json_child(dev, FORM_KEYS[k].name), v,
                            json_pack("{s:i, s:i, s:s}", "ok", t->key[k].ok, "refused",
                                      t->key[k].refused, "error", t->key[k].error));
    }
}

/* The record of value v of key k for the device: -1 refused (no kernel
 * accepted), 1 accepted (none refused), 0 not tried or mixed; the error. */
static int verdict(const json_t *dev, lower_form_key k, const char *v, const char **error) {
    const json_t *e = json_object_get(json_object_get(dev, FORM_KEYS[k].name), v);
    long long ok = json_integer_value(json_object_get(e, "ok"));
    long long refused = json_integer_value(json_object_get(e, "refused"));
    *error = json_string_value(json_object_get(e, "error"));
    if (refused > 0 && ok == 0) return -1;
    return ok > 0 && refused == 0;
}

/* Appends to buf (cap bytes). */
static void append(char *buf, size_t cap, const char *sep, const char *text) {
    size_t n = strlen(buf);
    if (n + 1 < cap) snprintf(buf + n, cap - n, "%s%s", n ? sep : "", text);
}

/* The first value of key k's order, other than v, whose record for the
 * device is `pass` (1 accepted, 0 not tried) and that out's other forms
 * allow (lower_forms_check); NULL when none. */
static const char *next_value(const json_t *dev, lower_form_key k, const char *v, int pass,
                              const lower_all_forms *out) {
    const struct form_row *row = &FORM_KEYS[k];
    for (int i = 0; i < 7 && row->order[i]; i++) {
        const char *e;
        lower_all_forms trial = *out;
        nc_error ignored;
        if (strcmp(row->order[i], v) && verdict(dev, k, row->order[i], &e) == pass &&
            (pass || !json_object_get(json_object_get(dev, row->name), row->order[i])) &&
            !lower_form_set(&trial, k, row->order[i]) &&
            lower_forms_check(&trial.forms, trial.kernels_per_layer, &trial.model, &ignored) ==
                NC_OK)
            return row->order[i];
    }
    return NULL;
}

int lower_forms_recommend(const json_t *profile, const char *device, const lower_all_forms *cur,
                          lower_all_forms *out, char *why, size_t why_cap, char *options,
                          size_t options_cap) {
    *out = *cur;
    if (why_cap) why[0] = '\0';
    if (options_cap) options[0] = '\0';
    const json_t *dev = json_object_get(json_object_get(profile, "forms"), device);
    if (!json_is_object(dev)) return 0;
    int changes = 0, changed_in_round = 1;
    /* a key's move may be what lets another move (grouped attention once
     * the RoPE is conv again): go round while something changes */
    for (int round = 0; changed_in_round && round < LOWER_N_FORM_KEYS; round++) {
        changed_in_round = 0;
        for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
            char v[32];
            const char *error;
            lower_form_value(out, (lower_form_key)k, v, sizeof v);
            if (verdict(dev, (lower_form_key)k, v, &error) >= 0) continue;
            const char *pick = next_value(dev, (lower_form_key)k, v, 1, out); /* accepted */
            if (!pick) pick = next_value(dev, (lower_form_key)k, v, 0, out);  /* untried */
            if (!pick || lower_form_set(out, (lower_form_key)k, pick)) continue;
            changes++;
            changed_in_round = 1;
            char line[400];
            snprintf(line, sizeof line, "%s %s (%s refused: %.240s)", FORM_KEYS[k].option, pick,
                     v, error ? error : "");
            append(why, why_cap, "; ", line);
            snprintf(line, sizeof line, "%s %s", FORM_KEYS[k].option, pick);
            append(options, options_cap, " ", line);
        }
    }
    return changes;
}
