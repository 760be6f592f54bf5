/* The probe on a bundle's own programs (ane_bundle_probe.h). */
#include "ane_host/ane_bundle_probe.h"

#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_ladder.h"
#include "ane_host/ane_stage.h"
#include "bundle/manifest.h"
#include "bundle/modernbert_manifest.h"
#include "mil/parse.h"

/* The construct each kernel holds and the compile options that change its
 * form: what to try when the device refuses the kernel even alone. */
static const struct kernel_form {
    const char *kernel, *construct, *options;
} KERNEL_FORMS[] = {
    {"qkv", "RoPE's rotate-half and the q/k norms", "--rope conv|matmul"},
    {"kv", "the KV cache update", "--kv-update onehot|gather"},
    {"attn", "GQA attention's batched matmuls", "--attention broadcast|grouped"},
    {"kvattn", "the KV update fused with attention", "--kernels-per-layer 4, --kv-update, --attention"},
    {"qkva", "projections, RoPE and attention fused", "--kernels-per-layer 4 or 3"},
    {"layer", "a whole layer in one function", "--kernels-per-layer 4, 3 or 2"},
    {"mlp", "the MLP's 1x1 convs", "--kernels-per-layer"},
    {"head", "LM-head convs (rows per chunk)", "--head-rows 16384 or fewer, --head-split one|per-chunk"},
    {"encoder", "the encoder island", "compile's seqs/batches (fewer shapes per program)"},
};

/* The kernel of a function name: "attn_s64" -> "attn", "encoder_b3_s64" -> "encoder". */
static void kernel_of(const char *fn, char *out, size_t cap) {
    snprintf(out, cap, "%s", fn);
    for (char *p = out; *p; p++)
        if (p > out && p[0] == '_' && (p[1] == 's' || p[1] == 'b') && p[2] >= '0' && p[2] <= '9') {
            *p = '\0';
            return;
        }
}

static void add_name(char *list, size_t cap, const char *name) {
    if (ane_ladder_listed(list, name)) return;
    size_t n = strlen(list);
    snprintf(list + n, cap - n, "%s%s", n ? "," : "", name);
}

/* Compiles and loads folder dir on the device; NC_OK or the refusal in e. */
static int try_open(const ane_device *dev, const char *dir, int *opens, nc_error *e) {
    ane_model *m = NULL;
    (*opens)++;
    memset(e, 0, sizeof *e);
    nc_status st = dev->ops->model_open(dev->impl, dir, &m, e);
    if (m) dev->ops->model_close(m);
    return st == NC_OK;
}

static nc_status probe_program(const ane_device *dev, const char *bundle, const char *work,
                               const lower_program_info *pi, ane_bundle_probe_prog *r,
                               int *opens, nc_error *err) {
    char dir[4300], sub[4600], name[64];
    snprintf(dir, sizeof dir, "%s/%s", bundle, pi->path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    const char *prog_name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    snprintf(r->path, sizeof r->path, "%s", pi->path);
    r->n_fns = pi->n_fns;
    nc_error e;
    r->whole_ok = try_open(dev, dir, opens, &e);
    if (!r->whole_ok) snprintf(r->whole_error, sizeof r->whole_error, "%s", e.msg);
    mil_program *prog;
    snprintf(sub, sizeof sub, "%s/model.mil", dir);
    NC_TRY(mil_parse_file(sub, &prog, err));
    nc_status st = NC_OK;
    const char *idx[64];
    /* per bucket: the functions of one S together */
    for (int f = 0; !st && f < pi->n_fns; f++) {
        int seen = 0;
        for (int g = 0; g < f; g++)
            seen |= pi->fns[g].seq == pi->fns[f].seq;
        if (seen) continue;
        int k = 0;
        for (int g = f; g < pi->n_fns && k < 64; g++)
            if (pi->fns[g].seq == pi->fns[f].seq) idx[k++] = pi->fns[g].name;
        r->n_buckets++;
        snprintf(sub, sizeof sub, "%s/%s_s%d", work, prog_name, pi->fns[f].seq);
        st = ane_ladder_write_view(prog, idx, k, dir, sub, err);
        if (st) break;
        if (try_open(dev, sub, opens, &e))
            r->buckets_ok++;
        else if (!r->bucket_error[0])
            snprintf(r->bucket_error, sizeof r->bucket_error, "%s", e.msg);
    }
    /* per function (an enumerated function's entries after the first: the same one) */
    for (int f = 0; !st && f < pi->n_fns; f++) {
        const lower_fn_info *first = lower_manifest_fn(pi, pi->fns[f].name);
        if (first != &pi->fns[f]) {
            r->fn_ok[f] = r->fn_ok[first - pi->fns];
            r->fns_ok += r->fn_ok[f];
            continue;
        }
        snprintf(sub, sizeof sub, "%s/%s_%s", work, prog_name, pi->fns[f].name);
        const char *one = pi->fns[f].name;
        st = ane_ladder_write_view(prog, &one, 1, dir, sub, err);
        if (st) break;
        r->fn_ok[f] = try_open(dev, sub, opens, &e);
        if (r->fn_ok[f]) {
            r->fns_ok++;
            continue;
        }
        if (!r->fn_error[0]) snprintf(r->fn_error, sizeof r->fn_error, "%s", e.msg);
        kernel_of(pi->fns[f].name, name, sizeof name);
        if (ane_ladder_listed(r->refused_kernels, name)) continue;
        int k = r->refused_kernels[0] != '\0'; /* names listed so far */
        for (const char *q = r->refused_kernels; *q; q++)
            k += *q == ',';
        if (k < 4) snprintf(r->kernel_error[k], sizeof r->kernel_error[k], "%s", e.msg);
        add_name(r->refused_kernels, sizeof r->refused_kernels, name);
    }
    mil_program_free(prog);
    return st;
}

nc_status ane_bundle_probe(const ane_device *dev, const char *bundle, const char *work,
                           ane_bundle_probe_prog **out, int *n, int *opens, nc_error *err) {
    *out = NULL;
    *n = *opens = 0;
    lower_manifest man = {0};
    mb_manifest enc;
    const lower_program_info *progs;
    int np, is_enc = mb_manifest_is_encoder(bundle);
    if (is_enc) {
        NC_TRY(mb_manifest_read(bundle, &enc, err));
        progs = &enc.program;
        np = 1;
    } else {
        NC_TRY(lower_manifest_read(bundle, &man, err));
        progs = man.programs;
        np = man.n_programs;
    }
    ane_bundle_probe_prog *r = calloc((size_t)np + 1, sizeof *r);
    nc_status st = r ? ane_make_dirs(work, err) : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < np; i++)
        st = probe_program(dev, bundle, work, &progs[i], &r[i], opens, err);
    if (!is_enc) lower_manifest_free(&man);
    if (st) {
        free(r);
        return st;
    }
    *out = r;
    *n = np;
    return NC_OK;
}

nc_status ane_bundle_probe_forms(const char *bundle, const ane_bundle_probe_prog *p, int n,
                                 lower_forms_tally *t, int *has, nc_error *err) {
    *has = 0;
    if (mb_manifest_is_encoder(bundle)) return NC_OK;
    lower_manifest man = {0};
    NC_TRY(lower_manifest_read(bundle, &man, err));
    lower_forms_tally_init(t, &man);
    for (int i = 0; i < n && i < man.n_programs; i++) {
        const char *errs[LOWER_MAX_FUNCS];
        for (int f = 0; f < LOWER_MAX_FUNCS; f++)
            errs[f] = p[i].fn_error;
        lower_forms_tally_program(t, &man.programs[i], p[i].whole_ok, p[i].whole_error,
                                  p[i].fn_ok, errs);
    }
    lower_manifest_free(&man);
    *has = 1;
    return NC_OK;
}

void ane_bundle_probe_print(const ane_bundle_probe_prog *p, int n, FILE *f) {
    fprintf(f, "%-22s %7s %9s %11s  first refusal\n", "program", "whole", "buckets", "functions");
    for (int i = 0; i < n; i++) {
        const char *why = p[i].whole_error[0] ? p[i].whole_error : "";
        fprintf(f, "%-22s %7s %4d/%-4d %5d/%-5d  %.160s\n", p[i].path, p[i].whole_ok ? "ok" : "refused",
                p[i].buckets_ok, p[i].n_buckets, p[i].fns_ok, p[i].n_fns, why);
    }
}

void ane_bundle_probe_recommend(const ane_bundle_probe_prog *p, int n, FILE *f) {
    int whole = 0, fns = 0, all_fns = 0;
    char refused[400] = "";
    for (int i = 0; i < n; i++) {
        whole += p[i].whole_ok;
        fns += p[i].fns_ok;
        all_fns += p[i].n_fns;
        for (const char *k = p[i].refused_kernels; *k;) {
            char one[64];
            size_t len = strcspn(k, ",");
            snprintf(one, sizeof one, "%.*s", (int)len, k);
            add_name(refused, sizeof refused, one);
            k += len + (k[len] == ',');
        }
    }
    if (whole == n)
        fprintf(f, "program split: layer (the default): every program compiled whole\n");
    else if (fns == all_fns)
        fprintf(f, "program split: function -- %d of %d programs refused whole, every function "
                   "compiles alone (compile --program-split function; costs one compile per "
                   "function)\n",
                n - whole, n);
    else
        fprintf(f, "program split: %d of %d programs compile whole and %d of %d functions alone; "
                   "what is refused alone runs on the CPU unless another form of its construct "
                   "compiles:\n",
                whole, n, fns, all_fns);
    for (const char *k = refused; *k;) {
        char one[64];
        size_t len = strcspn(k, ",");
        snprintf(one, sizeof one, "%.*s", (int)len, k);
        k += len + (k[len] == ',');
        const struct kernel_form *row = NULL;
        for (size_t r = 0; r < sizeof KERNEL_FORMS / sizeof KERNEL_FORMS[0]; r++)
            if (!strcmp(KERNEL_FORMS[r].kernel, one)) row = &KERNEL_FORMS[r];
        const char *why = "";
        for (int i = 0; i < n && !why[0]; i++) {
            int pos = 0; /* its place in the program's list */
            for (const char *q = p[i].refused_kernels; *q;) {
                size_t l = strcspn(q, ",");
                if (l == strlen(one) && !strncmp(q, one, l)) {
                    if (pos < 4) why = p[i].kernel_error[pos];
                    break;
                }
                q += l + (q[l] == ',');
                pos++;
            }
        }
        fprintf(f, "  kernel %s refused alone (%.200s): %s -- try %s\n", one, why,
                row ? row->construct : "its construct", row ? row->options : "another form");
    }
}
