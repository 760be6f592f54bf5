/* What the tests of lowered decoder bundles share: a bundle compiled from a
 * fixture folder into a temporary directory, a prompt and HF's greedy ids
 * from the fixture's reference.json, and the host's side of a chunk written
 * from docs/lowering.md and docs/qwen35.md (independently of src/engine):
 * token at position p in column p mod S, its RoPE angles
 * p * theta^(-2i/rotary_dim) (1/0 past rotary_dim), its mask row open up to
 * p (other rows: key 0 only), kv_write 1 at p; the logits read from
 * column 0 of the head's chunks. */
#ifndef NC_TEST_BUNDLE_REF_H
#define NC_TEST_BUNDLE_REF_H

#include "ane_host/ane_runner.h"
#include "io/hf_weights.h"

/* Compiles model_dir into root/name (root: created on first use from
 * "/tmp/nectar_<tag>_XXXXXX" into root, which holds cap bytes) with
 * buckets 32 and 64 (q35_prefill: a Qwen3.5 folder's prefill form,
 * lower_q35_prefill_form). Returns 1, or 0 after printing why. */
int nc_test_compile_bundle(char *root, size_t cap, const char *tag, const char *model_dir,
                           const char *name, char *out, size_t out_cap, int ctx,
                           int kernels_per_layer, int lm_head_on_cpu, int q35_prefill);
/* rm -rf root (when it was made). */
void nc_test_remove_root(const char *root);

/* Prompt `which` of fixture/reference.json: its ids (at most max_ids) and
 * the first n_greedy of HF's greedy ids. Returns 1 on success. */
int nc_test_load_prompt(const char *fixture, int which, int max_ids, int n_greedy, int *ids,
                        int *n_ids, int *greedy);

int nc_test_argmax(const float *x, int n);

typedef struct nc_test_host {
    lower_manifest m; /* shallow: owned by the runner */
    hf_weights *ckpt;
    const st_tensor *embed;
    int D, hd, rd, V, ctx;
    double theta;
    float *x, *cs, *sn, *mask, *wr, *logits;
} nc_test_host;

/* The host of runner r's bundle with RoPE over the first rotary_dim of each
 * head (head_dim for Qwen3). Returns 1 on success. */
int nc_test_host_open(nc_test_host *h, const ane_runner *r, int rotary_dim);
void nc_test_host_close(nc_test_host *h);
/* Writes the inputs of toks[0..n) at positions pos.. in bucket seq. */
nc_status nc_test_host_write(nc_test_host *h, ane_runner *r, int seq, const int32_t *toks, int n,
                             int pos, nc_error *err);
/* h->logits from column 0 of every logits_<i> of bucket seq. */
nc_status nc_test_host_logits(nc_test_host *h, ane_runner *r, int seq, nc_error *err);

#endif
