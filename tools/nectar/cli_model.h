/* What `-m` names: a folder (or bundle) here, or a hub model id
 * "ORG/NAME[@REV]" found in the Hugging Face cache as huggingface_hub lays
 * it out (src/io/hf_cache.h). cli_parse calls cli_model_path for every
 * --model value, so every command takes both. Nothing is downloaded: a name
 * not cached is one error line with the `hf download` command. The cache
 * folder comes from $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME,
 * $XDG_CACHE_HOME and $HOME, as huggingface_hub reads them. */
#ifndef NECTAR_CLI_MODEL_H
#define NECTAR_CLI_MODEL_H

/* The path to open for arg (arg itself when it exists here or is no model
 * id; the snapshot folder when it is cached); NULL after printing the
 * error line for cmd. The string lives until the program ends. */
const char *cli_model_path(const char *cmd, const char *arg);

/* The model id a path returned by cli_model_path was resolved from; NULL
 * for a plain folder. */
const char *cli_model_name(const char *path);

/* The cache folder as huggingface_hub computes it from the environment. */
void cli_model_cache_dir(char *out, unsigned long cap);

#endif
