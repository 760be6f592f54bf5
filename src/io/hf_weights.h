/* The weights of a Hugging Face model folder: `model.safetensors`, or the
 * shards listed in `model.safetensors.index.json` ("weight_map": tensor name
 * -> shard file). All shards are mmapped and validated up front; lookups go
 * by tensor name across every shard. */
#ifndef NC_IO_HF_WEIGHTS_H
#define NC_IO_HF_WEIGHTS_H

#include "io/safetensors.h"
#include "io/weights_residency.h"

typedef struct hf_weights {
    st_file **shards;
    int n_shards;
    size_t total_bytes; /* sum of the shard file sizes */
    weights_residency residency;
} hf_weights;

nc_status hf_weights_open(const char *dir, hf_weights **out, nc_error *err);

/* hf_weights_open for a model that will run from these weights: then read
 * into memory where weights_residency_choose says so (NECTAR_WEIGHTS). */
nc_status hf_weights_open_to_run(const char *dir, hf_weights **out, nc_error *err);
void hf_weights_close(hf_weights *w);

/* NULL when no shard holds it; *file (if non-NULL) gets the shard's path. */
const st_tensor *hf_weights_find(const hf_weights *w, const char *name, const char **file);

/* Rearranging a tensor's bytes in place for a kernel (Q4 rows interleaved,
 * q4_interleave.h), on weights read into memory only: a mapped file's
 * pages would be copied out of the page cache. Between
 * hf_weights_writable(w, 1) and (w, 0), hf_weights_rewritable gives the
 * tensor's bytes to rewrite the first time it is asked for (*earlier = 0),
 * NULL with *earlier = 1 once an earlier call gave them (a tied embedding
 * loaded twice is rearranged once), and NULL with *earlier = 0 where they
 * stay as in the file (mapped, or not found). */
void hf_weights_writable(hf_weights *w, int on);
void *hf_weights_rewritable(hf_weights *w, const char *name, int *earlier);

/* "dir/name" into buf; returns buf (truncated paths fail the later open). */
const char *hf_path_join(char *buf, size_t cap, const char *dir, const char *name);

#endif
