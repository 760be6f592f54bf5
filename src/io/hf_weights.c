/* Opening the safetensors of a model folder, single file or sharded. The
 * index is checked against the shards (every listed tensor must be in the
 * shard the index names), so a missing or stale shard fails at load. */
#include "io/hf_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

const char *hf_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    size_t n = strlen(dir);
    snprintf(buf, cap, "%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/", name);
    return buf;
}

void hf_weights_close(hf_weights *w) {
    if (!w) return;
    for (int i = 0; i < w->n_shards; i++)
        st_close(w->shards[i]);
    free(w->shards);
    free(w);
}

static nc_status add_shard(hf_weights *w, const char *path, nc_error *err) {
    st_file **ns = realloc(w->shards, (size_t)(w->n_shards + 1) * sizeof *ns);
    if (!ns) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    w->shards = ns;
    NC_TRY(st_open(path, &w->shards[w->n_shards], err));
    w->total_bytes += w->shards[w->n_shards]->map.size_bytes;
    w->n_shards++;
    return NC_OK;
}

/* Shard names come from a file we do not trust: plain names only. */
static int is_plain_name(const char *s) {
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static nc_status open_sharded(hf_weights *w, const char *dir, const char *index_path,
                              nc_error *err) {
    json_t *root;
    NC_TRY(nc_json_load_file(index_path, &root, err));
    nc_status st = NC_OK;
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map) || json_object_size(map) == 0) {
        st = nc_fail(err, NC_ERR_FORMAT, "%s: missing or empty object 'weight_map'", index_path);
        goto done;
    }
    const char *name;
    json_t *v;
    char path[4096];
    /* Open each distinct shard once, in order of first mention. */
    json_object_foreach(map, name, v) {
        if (!json_is_string(v) || !is_plain_name(json_string_value(v))) {
            st = nc_fail(err, NC_ERR_FORMAT, "%s: weight_map['%s'] must be a shard file name",
                         index_path, name);
            goto done;
        }
        hf_path_join(path, sizeof path, dir, json_string_value(v));
        int seen = 0;
        for (int i = 0; i < w->n_shards && !seen; i++)
            seen = !strcmp(w->shards[i]->path, path);
        if (!seen && (st = add_shard(w, path, err)) != NC_OK) goto done;
    }
    json_object_foreach(map, name, v) {
        hf_path_join(path, sizeof path, dir, json_string_value(v));
        for (int i = 0; i < w->n_shards; i++)
            if (!strcmp(w->shards[i]->path, path) && !st_find(w->shards[i], name)) {
                st = nc_fail(err, NC_ERR_NOT_FOUND,
                             "%s: tensor '%s' listed in %s is not in that shard", path, name,
                             index_path);
                goto done;
            }
    }
done:
    json_decref(root);
    return st;
}

nc_status hf_weights_open(const char *dir, hf_weights **out, nc_error *err) {
    *out = NULL;
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    hf_weights *w = calloc(1, sizeof *w);
    if (!w) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    char index_path[4096], single[4096];
    hf_path_join(index_path, sizeof index_path, dir, "model.safetensors.index.json");
    hf_path_join(single, sizeof single, dir, "model.safetensors");
    nc_status st;
    if (nc_file_exists(index_path))
        st = open_sharded(w, dir, index_path, err);
    else if (nc_file_exists(single))
        st = add_shard(w, single, err);
    else
        st = nc_fail(err, NC_ERR_NOT_FOUND,
                     "%s: no model.safetensors or model.safetensors.index.json in the folder", dir);
    if (st != NC_OK) {
        hf_weights_close(w);
        return st;
    }
    *out = w;
    return NC_OK;
}

nc_status hf_weights_open_to_run(const char *dir, hf_weights **out, nc_error *err) {
    NC_TRY(hf_weights_open(dir, out, err));
    hf_weights *w = *out;
    weights_residency_choose(w->total_bytes, &w->residency);
    nc_status st = NC_OK;
    for (int i = 0; st == NC_OK && w->residency.resident && i < w->n_shards; i++)
        st = st_make_resident(w->shards[i], w->residency.drop_page_cache, err);
    if (st != NC_OK) {
        hf_weights_close(w);
        *out = NULL;
    }
    return st;
}

const st_tensor *hf_weights_find(const hf_weights *w, const char *name, const char **file) {
    for (int i = 0; i < w->n_shards; i++) {
        const st_tensor *t = st_find(w->shards[i], name);
        if (t) {
            if (file) *file = w->shards[i]->path;
            return t;
        }
    }
    return NULL;
}

void hf_weights_writable(hf_weights *w, int on) {
    for (int i = 0; w && i < w->n_shards; i++)
        w->shards[i]->writable = nc_mapped_set_writable(&w->shards[i]->map, on) && on;
}

void *hf_weights_rewritable(hf_weights *w, const char *name, int *earlier) {
    *earlier = 0;
    for (int i = 0; w && i < w->n_shards; i++) {
        st_tensor *t = (st_tensor *)st_find(w->shards[i], name);
        if (!t) continue;
        if (t->rewritten) {
            *earlier = 1;
            return NULL;
        }
        if (!w->shards[i]->writable) return NULL;
        t->rewritten = 1;
        return (void *)t->data;
    }
    return NULL;
}
