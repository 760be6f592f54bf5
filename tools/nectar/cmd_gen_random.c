/* `nectar gen-random --like NAME OUT`: a folder with random weights at a
 * preset's shape (src/models/presets.c: Qwen3, Qwen3.5, Llama and
 * ModernBERT-family rows),
 * written by src/models/model_random.h, plus the tokenizer files copied from
 * --tokenizer DIR; --type q8|q4 writes a decoder's matrices straight into
 * `nectar quantize`'s blocks (the same bytes, no float copy on disk);
 * --dry-run only says what it would write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "cli_opts.h"
#include "cli_outdir.h"
#include "commands.h"
#include "data_dir.h"
#include "io/hf_weights.h"
#include "models/family.h"
#include "models/model_random.h"
#include "text/tokenizer.h"

/* What each family takes from a tokenizer folder. */
static const struct {
    const char *const files[4];
    int n, required;
} tok_files[] = {
    [MODEL_FAMILY_QWEN3] = {{"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"},
                            4,
                            0},
    [MODEL_FAMILY_MODERNBERT] = {{"tokenizer.json"}, 1, 1},
    [MODEL_FAMILY_QWEN35] = {{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"},
                             3,
                             0},
    /* a random Llama folder gets Qwen3's tokenizer (docs/llama.md) */
    [MODEL_FAMILY_LLAMA] = {{"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"},
                            4,
                            0},
    /* and a random Gemma 3 folder too (docs/gemma3.md) */
    [MODEL_FAMILY_GEMMA3] =
        {{"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"}, 4, 0},
};

static int copy_tokenizer(const char *tok_dir, const char *out, model_family f) {
    if (!nc_is_dir(tok_dir)) return cli_failf("%s: tokenizer folder not found", tok_dir);
    for (int i = 0; i < tok_files[f].n; i++) {
        char src[4096], dst[4096];
        nc_error err = {0};
        hf_path_join(src, sizeof src, tok_dir, tok_files[f].files[i]);
        hf_path_join(dst, sizeof dst, out, tok_files[f].files[i]);
        if (!tok_files[f].required && !nc_file_exists(src)) continue;
        if (nc_copy_file(src, dst, &err) != NC_OK) return cli_fail(&err);
    }
    return 0;
}

/* A borrowed tokenizer (Qwen3's in a Llama folder) may have ids past the
 * shape's vocabulary: say so once, as the engine will refuse them. */
static void warn_tokenizer_size(const char *out, const model_preset *p) {
    tok_tokenizer *tok = NULL;
    nc_error err = {0};
    if (tok_load(out, &tok, &err) != NC_OK) return;
    int n = tok_vocab_size(tok);
    if (n > p->vocab)
        fprintf(stderr,
                "note: the tokenizer's ids reach %d, past the %s vocabulary of %d: text that "
                "tokenizes to them is refused (docs/llama.md)\n",
                n - 1, p->name, p->vocab);
    tok_free(tok);
}

int cmd_gen_random(int argc, char **argv) {
    const char *out = NULL, *tok_dir = NULL;
    int like = 0, dtype = 0, dry_run = 0, type = -1, vocab = 0;
    int64_t seed = 1;
    model_random_options o = {0};
    static const st_dtype dtypes[] = {ST_BF16, ST_F16, ST_F32};
    static const char *const dtype_names[] = {"bf16", "f16", "f32"};
    static const cpu_wtype types[] = {CPU_W_Q8, CPU_W_Q4};
    static const char *const type_names[] = {"q8", "q4"};
    char names[512], list[512];
    model_preset_names(-1, "|", names, sizeof names);
    model_preset_names(-1, ", ", list, sizeof list);
    const cli_opt opts[] = {
        CLI_OPT(NULL, "--like", CLI_CHOICE, "NAME", list, &like, .choices = names, .required = 1),
        CLI_OPT(NULL, "--dtype", CLI_CHOICE, "bf16|f16|f32", "weight type (default bf16)", &dtype,
                .choices = "bf16|f16|f32"),
        CLI_OPT(NULL, "--type", CLI_CHOICE, "q8|q4",
                "write the matrices in nectar quantize's blocks: the\n"
                "bytes `nectar quantize` makes of the --dtype folder\n"
                "(text generators only)",
                &type, .choices = "q8|q4"),
        CLI_OPT(NULL, "--vocab", CLI_INT, "N",
                "the vocabulary size instead of the shape's (a small\n"
                "shape with a large LM head, for tests)",
                &vocab, .min = 1, .max = 1 << 24),
        CLI_OPT(NULL, "--seed", CLI_INT64, "S", "random seed (default 1)", &seed, .min = 0,
                .max = INT64_MAX),
        CLI_OPT(NULL, "--tokenizer", CLI_STRING, "DIR",
                "copy the tokenizer files from DIR (Qwen3 and Llama\n"
                "default: the real Qwen3 tokenizer nectar ships, in\n"
                "PREFIX/share/nectar)",
                &tok_dir),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &o.n_threads,
                .min = 1, .max = 1024),
        CLI_OPT(NULL, "--dry-run", CLI_FLAG, NULL, "print what would be written; write nothing",
                &dry_run),
        CLI_ENDROW};
    const cli_command cmd = {.name = "gen-random",
                             .usage = "--like NAME OUT [options]",
                             .about = "Writes a Hugging Face folder with random weights at a real "
                                      "model's shape.\n",
                             .opts = {opts},
                             .pos = &out,
                             .pos_name = "OUT folder",
                             .min_pos = 1,
                             .max_pos = 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    nc_error err = {0};
    model_preset shape = *model_preset_at(like); /* the choices are the rows in order */
    if (vocab) {
        int top = shape.bos > shape.eos ? shape.bos : shape.eos;
        if (shape.eos_extra > top) top = shape.eos_extra;
        if (shape.pad > top) top = shape.pad;
        if (vocab <= top)
            return cli_failf("--vocab %d: %s's special ids reach %d", vocab, shape.name, top);
        shape.vocab = vocab;
    }
    const model_preset *p = &shape;
    o.dtype = dtypes[dtype];
    o.seed = (uint64_t)seed;
    o.dry_run = dry_run;
    o.quant = type >= 0 ? types[type] : CPU_W_N;
    char data[4200];
    /* the family's default tokenizer (models/family.h) for a real model's
     * vocabulary size; a toy decoder shape ("tiny", 512 ids) gets a small
     * byte-level one with the same chat tokens, so every random folder runs */
    const model_family_row *f = model_family_of_presets(p->family);
    if (type >= 0 && (!f || f->is_encoder))
        return cli_failf("--type %s: %s is an encoder shape; only text generators load q8/q4",
                         type_names[type], p->name);
    if (!tok_dir && f && f->random_tokenizer) {
        const char *name =
            f->is_encoder || p->vocab >= 32000 ? f->random_tokenizer : "small-tokenizer";
        tok_dir = nectar_data_dir(name, data, sizeof data);
        if (!tok_dir) return cli_failf("share/nectar/%s: tokenizer folder not found", name);
    }
    if (tok_dir && !nc_is_dir(tok_dir)) return cli_failf("%s: tokenizer folder not found", tok_dir);
    char tmp[4200] = ""; /* written there, renamed to OUT at the end (cli_outdir.h) */
    if (!dry_run && cli_outdir_begin(NULL, out, tmp, sizeof tmp, &err) != NC_OK)
        return cli_fail(&err);
    double t0 = nc_now_s();
    model_random_report r;
    if (model_random_write(p, dry_run ? out : tmp, &o, &r, &err) != NC_OK) {
        cli_outdir_abort(tmp);
        return cli_fail(&err);
    }
    if (dry_run) {
        printf("would write %s: %s shape, %s, %d tensors in %d file%s, %zu bytes\n", out, p->name,
               type >= 0 ? type_names[type] : dtype_names[dtype], r.n_tensors, r.n_files,
               r.n_files == 1 ? "" : "s", r.bytes);
        if (tok_dir) printf("would copy the tokenizer from %s\n", tok_dir);
        return 0;
    }
    if ((tok_dir && (rc = copy_tokenizer(tok_dir, tmp, p->family))) ||
        (cli_outdir_commit(tmp, out, &err) != NC_OK && (rc = cli_fail(&err)))) {
        cli_outdir_abort(tmp);
        return rc;
    }
    if (tok_dir) warn_tokenizer_size(out, p);
    fprintf(stderr, "wrote %s: %s shape, %s, %d tensors, %.2f GB in %.1f s%s\n", out, p->name,
            type >= 0 ? type_names[type] : dtype_names[dtype], r.n_tensors, (double)r.bytes / 1e9, nc_now_s() - t0,
            tok_dir ? "" : " (no tokenizer copied)");
    return 0;
}
