/* The family dispatch of model_random.h. */
#include "models/model_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "models/quant_random.h"

#define SHARD_MAX_BYTES ((size_t)4 << 30) /* like HF's shards */

nc_status model_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err) {
    switch (p->family) {
    case MODEL_FAMILY_QWEN3:
    case MODEL_FAMILY_LLAMA: /* the same layout, less the q/k norms */
    case MODEL_FAMILY_GEMMA3: /* the same, with four norms a layer */
        return qwen3_random_write(p, out, o, r, err);
    case MODEL_FAMILY_MODERNBERT:
        return modernbert_random_write(p, out, o, r, err);
    case MODEL_FAMILY_QWEN35:
        return qwen35_random_write(p, out, o, r, err);
    }
    return nc_fail(err, NC_ERR_INTERNAL, "%s: no random writer for this family", p->name);
}

nc_status model_random_write_decoder(const model_preset *s, const char *out,
                                     const model_random_options *o, model_random_planner plan,
                                     model_random_config config, model_random_report *r,
                                     nc_error *err) {
    static st_random_plan p; /* large (names); one per process */
    memset(&p, 0, sizeof p);
    p.kind = ST_RANDOM_SUM4;
    p.seed = o->seed * 0x9e3779b97f4a7c15ull;
    plan(&p, s, o->dtype);
    return model_random_write_plan(&p, out, o->dry_run ? NULL : config(s, o->dtype),
                                   o->dry_run ? NULL : model_random_generation_json(s), o, r, err);
}

json_t *model_random_generation_json(const model_preset *p) {
    json_t *g = json_object(), *eos = json_array();
    json_object_set_new(g, "bos_token_id", json_integer(p->bos));
    json_array_append_new(eos, json_integer(p->eos));
    if (p->eos_extra >= 0) json_array_append_new(eos, json_integer(p->eos_extra));
    json_object_set_new(g, "eos_token_id", eos);
    return g;
}

const char *model_random_torch_dtype(st_dtype dt) {
    return dt == ST_BF16 ? "bfloat16" : dt == ST_F16 ? "float16" : "float32";
}

/* One shard's tensors: the fill of the whole list, at an index offset. */
typedef struct {
    st_fill_fn fill;
    void *ctx;
    int offset;
} shard_ctx;

static nc_status fill_shard(void *ctx, int index, size_t first, size_t n, void *dst,
                            nc_error *err) {
    shard_ctx *s = ctx;
    return s->fill(s->ctx, index + s->offset, first, n, dst, err);
}

static size_t tensors_bytes(const st_write_tensor *t, int n) {
    size_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += st_write_tensor_bytes(&t[i]);
    return bytes;
}

/* start[0..n_shards]: the first tensor of each shard of at most
 * SHARD_MAX_BYTES (a bigger tensor gets a shard of its own); returns n_shards. */
int model_random_shards(const st_write_tensor *t, int n, int *start) {
    int n_shards = 0;
    size_t acc = 0;
    start[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t b = st_write_tensor_bytes(&t[i]);
        if (acc > 0 && acc + b > SHARD_MAX_BYTES) {
            start[++n_shards] = i;
            acc = 0;
        }
        acc += b;
    }
    start[++n_shards] = n;
    return n_shards;
}

nc_status model_random_write_shards(const st_write_tensor *t, int n, st_fill_fn fill, void *ctx,
                                    const char *out, const int *start, int n_shards,
                                    nc_error *err) {
    char path[4096];
    if (n_shards == 1) {
        hf_path_join(path, sizeof path, out, "model.safetensors");
        return st_write_file(path, t, n, fill, ctx, err);
    }
    json_t *index = json_object(), *map = json_object();
    json_object_set_new(index, "metadata",
                        json_pack("{s:I}", "total_size", (json_int_t)tensors_bytes(t, n)));
    for (int s = 0; s < n_shards; s++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        hf_path_join(path, sizeof path, out, name);
        shard_ctx sc = {fill, ctx, start[s]};
        nc_status st =
            st_write_file(path, t + start[s], start[s + 1] - start[s], fill_shard, &sc, err);
        if (st != NC_OK) {
            json_decref(index);
            json_decref(map);
            return st;
        }
        for (int i = start[s]; i < start[s + 1]; i++)
            json_object_set_new(map, t[i].name, json_string(name));
    }
    json_object_set_new(index, "weight_map", map);
    hf_path_join(path, sizeof path, out, "model.safetensors.index.json");
    return nc_json_save(index, path, 2, err);
}

nc_status model_random_write_plan(st_random_plan *p, const char *out, json_t *cfg, json_t *gen,
                                  const model_random_options *o, model_random_report *r,
                                  nc_error *err) {
    int start[ST_RANDOM_MAX_TENSORS + 1];
    memset(r, 0, sizeof *r);
    /* what is stored: the plan as is, or in q8/q4 blocks */
    quant_random *q = NULL;
    nc_status st = NC_OK;
    if (cpu_wtype_is_quant(o->quant) && (!(q = malloc(sizeof *q)) ||
                                         (st = quant_random_init(q, p, o->quant, err)) != NC_OK)) {
        if (!q) st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", out);
        free(q);
        json_decref(cfg);
        json_decref(gen);
        return st;
    }
    const st_write_tensor *t = q ? q->t : p->t;
    r->n_tensors = p->n;
    r->bytes = tensors_bytes(t, p->n);
    r->n_files = model_random_shards(t, p->n, start);
    char path[4096];
    if (!o->dry_run && (!cfg || !gen)) st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", out);
    if (!o->dry_run && st == NC_OK) {
        hf_path_join(path, sizeof path, out, "config.json");
        st = nc_json_save(cfg, path, 2, err);
        cfg = NULL;
    }
    if (!o->dry_run && st == NC_OK) {
        hf_path_join(path, sizeof path, out, "generation_config.json");
        st = nc_json_save(gen, path, 2, err);
        gen = NULL;
    }
    json_decref(cfg);
    json_decref(gen);
    if (!o->dry_run && st == NC_OK && (st = nc_pool_new(o->n_threads, &p->pool, err)) == NC_OK) {
        st = q ? model_random_write_shards(t, p->n, quant_random_fill, q, out, start, r->n_files,
                                           err)
               : model_random_write_shards(t, p->n, st_random_fill, p, out, start, r->n_files,
                                           err);
        nc_pool_free(p->pool);
        p->pool = NULL;
    }
    if (q) quant_random_free(q);
    free(q);
    return st;
}
