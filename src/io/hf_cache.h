/* The Hugging Face hub cache as huggingface_hub lays it out, read only
 * (nothing is downloaded): CACHE/models--ORG--NAME/refs/REVISION holds a
 * commit hash, CACHE/models--ORG--NAME/snapshots/COMMIT/ the repository's
 * files (links into ../../blobs). The cache folder is the first of
 * $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
 * $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub, as
 * huggingface_hub's constants.py computes it; the caller passes the
 * environment's values (the library reads no environment). */
#ifndef NC_IO_HF_CACHE_H
#define NC_IO_HF_CACHE_H

#include <stddef.h>

#include "base/error.h"

typedef struct hf_env {
    const char *hf_hub_cache, *huggingface_hub_cache, *hf_home, *xdg_cache_home, *home;
} hf_env;

/* The cache folder for these environment values (unset: NULL or ""). */
void hf_cache_dir(const hf_env *env, char *out, size_t cap);

/* 1 when s has the shape of a hub model id, "ORG/NAME" or "ORG/NAME@REV"
 * (one '/', neither part empty nor "." or "..", no blanks). */
int hf_is_repo_id(const char *s);

/* The snapshot folder of repo id "ORG/NAME[@REV]" (REV: a branch or tag
 * under refs/, or a commit; default main) in cache. NC_ERR_NOT_FOUND when
 * it is not there, the message naming the cache folder and the command
 * that downloads it ("hf download ORG/NAME"). */
nc_status hf_cache_resolve(const char *cache, const char *repo_id, char *out, size_t cap,
                           nc_error *err);

/* Calls visit for each model repository of the cache with a snapshot for
 * refs/main (in name order): its id "ORG/NAME" and the snapshot folder. */
typedef void (*hf_cache_visit)(void *user, const char *repo_id, const char *snapshot);
nc_status hf_cache_list(const char *cache, hf_cache_visit visit, void *user, nc_error *err);

#endif
