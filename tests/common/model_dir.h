/* Broken copies of a fixture model folder for the loaders' bad-input
 * tests: the config with one string replaced, the weights with tensors
 * dropped, retyped or reshaped. */
#ifndef NC_TEST_MODEL_DIR_H
#define NC_TEST_MODEL_DIR_H

/* root/name (created) with src's config.json, its first `from` replaced by
 * `to` (from NULL: unchanged). Returns the folder (a static buffer: valid
 * until the next call) or NULL. */
const char *nc_test_model_case(const char *src, const char *root, const char *name,
                               const char *from, const char *to);

/* src's weights into dir/model.safetensors, without the tensors whose name
 * starts with `drop`, with tensor `retype` as I32 and tensor `reshape` one
 * row longer (each NULL: none). Returns 0 or -1. */
int nc_test_write_weights(const char *src, const char *dir, const char *drop, const char *retype,
                          const char *reshape);

#endif
