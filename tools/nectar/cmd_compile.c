/* `nectar compile`: lowers a Qwen3 checkpoint folder to an ANE bundle (MIL
 * programs + weight.bin per program + manifest.json); see docs/lowering.md.
 * Prints one summary line: time, size, programs, kernels per token, and
 * the fp16 conversion's saturation count. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_forms.h"
#include "cli_opts.h"
#include "cli_outdir.h"
#include "cli_quantized.h"
#include "cmd_compile_palettize.h"
#include "cmd_encoder.h"
#include "commands.h"
#include "lower/modernbert_compile.h"
#include "lower/qwen3_compile.h"
#include "models/family.h"

int cmd_compile(int argc, char **argv) {
    /* encoder folders have their own lowering (cmd_compile_encoder.c) */
    const char *model = cmd_encoder_model_arg(argc, argv);
    const model_family_row *f = NULL;
    nc_error ferr = {0};
    if (model && model_family_of_dir(model, &f, &ferr) == NC_OK && f->is_encoder)
        return cmd_compile_encoder(argc, argv);
    lower_compile_options o;
    memset(&o, 0, sizeof o);
    o.progress = -1;
    cmd_palettize_args pa;
    cmd_palettize_args_init(&pa);
    const char *profile = NULL;
#if defined(__APPLE__)
    const char *device = "real";
#else
    const char *device = "fake";
#endif
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR", "Hugging Face Qwen3 folder", &o.model_dir,
                .required = 1),
        CLI_OPT("-o", "--out", CLI_STRING, "BUNDLE",
                "bundle folder to write (an older bundle is replaced)", &o.out_dir, .required = 1),
        CLI_OPT(NULL, "--buckets", CLI_INT_LIST, "A,B,..",
                "prompt sequence buckets, multiples of 32 (default 32,64,128)", o.seqs, .min = 32,
                .max = 1 << 20, .count = &o.n_seqs, .cap = LOWER_MAX_BUCKETS),
        CLI_OPT("-c", "--ctx", CLI_INT, "N",
                "KV cache length, a multiple of 32 (default min(max pos, 512))", &o.ctx, .min = 32,
                .max = 1 << 20),
        CLI_OPT(NULL, "--kernels-per-layer", CLI_INT, "4|3|2|1",
                "kernels per layer and bucket: 4 qkv,kv,attn,mlp (default); 3 qkv,kvattn,mlp\n"
                "(kv merged into attn); 2 qkva,mlp; 1 layer (compiles for Qwen3-0.6B: 28\n"
                "with --program-split layer; 112/84/56/28 with kernel)",
                &o.kernels_per_layer, .min = 1, .max = 4),
        CLI_OPT(NULL, "--program-split", CLI_CHOICE, "layer|kernel|function",
                "programs per layer (docs/lowering.md, \"Lowering forms\"; compiles for\n"
                "Qwen3-0.6B's 28 layers, 3 buckets): layer, every kernel of every bucket in\n"
                "one (default; 28); kernel, one per kernel, buckets as its functions (112);\n"
                "function, one per kernel and bucket (336: above the ~119 compiles per\n"
                "process public projects report). A device that refuses a program runs it\n"
                "on the CPU, so a finer split confines a refusal to fewer kernels",
                &o.forms.program_split, .choices = "layer|kernel|function"),
        CLI_OPT(NULL, "--head-rows", CLI_INT, "N",
                "rows per LM-head chunk (default 16384: Anemll and ironmill keep convs at or\n"
                "below it; Qwen3's 151,936 rows: 10 chunks)",
                &o.forms.head_rows, .min = 32, .max = LOWER_MAX_HEAD_ROWS),
        CLI_OPT(NULL, "--head-split", CLI_CHOICE, "per-chunk|one",
                "per-chunk: a program per LM-head chunk, one output each (default; 10\n"
                "compiles for Qwen3); one: one program with an output per chunk (1)",
                &o.forms.head_split, .choices = "per-chunk|one"),
        CLI_OPT(NULL, "--kv-update", CLI_CHOICE, "onehot|gather|host",
                "how kv_S spreads the new rows over the cache: onehot, a matmul by a\n"
                "constant placement matrix (default: no gather, not elementwise-only);\n"
                "gather, uint16 constant indices (the seed write-up's form); 0 compiles;\n"
                "host, no update kernel: the host writes k_new/v_new into the cache between\n"
                "qkv and attn (3 kernels per layer: 84 compiles with --program-split kernel)",
                &o.forms.kv_update, .choices = "onehot|gather|host"),
        CLI_OPT(NULL, "--rope", CLI_CHOICE, "conv|matmul",
                "RoPE's rotate-half: conv, a 1x1 conv of one group per head (default: qkv\n"
                "holds convs only, nothing broadcasts); matmul, by a matrix broadcast over\n"
                "the heads; 0 compiles",
                &o.forms.rope, .choices = "conv|matmul"),
        CLI_OPT(NULL, "--attention", CLI_CHOICE, "broadcast|grouped",
                "GQA attention: broadcast (default), q [KV,G,hd,S] against the cache\n"
                "[KV,1,hd,ctx]; grouped (Qwen3), q's channels ordered (kv head, dim,\n"
                "group) so both matmuls have equal batch dims [1, KV] (q_proj rows and\n"
                "o_proj columns permuted when compiled); 0 compiles",
                &o.forms.attention, .choices = "broadcast|grouped"),
        CLI_OPT(NULL, "--exp", CLI_CHOICE, "sigmoid|op",
                "Qwen3.5's linear layers exponentiate only x <= 0: sigmoid, as\n"
                "sigmoid(x) / sigmoid(-x) (default: sources disagree on the exp op);\n"
                "op, the exp op (0 compiles either way)",
                &o.forms.exp, .choices = "sigmoid|op"),
        CLI_OPT(NULL, "--matmul-pad", CLI_CHOICE, "32|none",
                "Qwen3.5's linear key heads padded with zero channels to a multiple of 32,\n"
                "so every matmul contracts over a multiple of 32 (default; a no-op for\n"
                "dk = 128); none, as they are; 0 compiles",
                &o.forms.matmul_pad, .choices = "32|none"),
        CLI_OPT(NULL, "--max-program-bytes", CLI_INT, "N",
                "a cap on one program's weight bytes: a layer whose programs exceed it is\n"
                "split finer (layer, then kernel, then function); default none. For\n"
                "Qwen3-0.6B (~34 MB per layer, its mlp kernel 18.9 MB) 20000000 gives 112\n"
                "layer compiles (+ 10 head: 122, above the ~119 per process)",
                &o.forms.max_program_bytes, .min = 1, .max = INT32_MAX),
        CLI_OPT(NULL, "--bucket-form", CLI_CHOICE, "per-bucket|enumerated",
                "per-bucket: a function per kernel and sequence bucket (default; 12 per\n"
                "layer); enumerated: a function per kernel whose inputs are an\n"
                "EnumeratedShapes set of the buckets (3 per layer; takes --kv-update host,\n"
                "Qwen3 and Llama; how a device selects one of the shapes is not known yet);\n"
                "0 compiles",
                &o.forms.bucket_form, .choices = "per-bucket|enumerated"),
        CLI_OPT(NULL, "--lm-head", CLI_CHOICE, "ane|cpu",
                "where the final norm + LM head run (default ane)", &o.lm_head_on_cpu,
                .choices = "ane|cpu"),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "conversion threads (default: all cores)",
                &o.n_threads, .min = 1, .max = 1024),
        CLI_OPT(NULL, "--progress", CLI_FLAG, NULL,
                "always draw the progress bar (default: when a tty)", &o.progress),
        CLI_OPT(NULL, "--q35-prefill", CLI_CHOICE, "chunked|unrolled",
                "Qwen3.5 linear layers' prefill: the chunked delta rule (default) or the\n"
                "recurrent form unrolled over the chunk (docs/qwen35.md)",
                &o.q35_prefill, .choices = "chunked|unrolled"),
        CLI_OPT(NULL, "--ane-profile", CLI_STRING, "FILE",
                "a probe profile (NECTAR_ANE_PROFILE; docs/ane-bridge.md): each lowering form\n"
                "it records as refused on --ane-device is replaced by the next one no device\n"
                "refused (forms named on the command line are kept)",
                &profile),
        CLI_OPT(NULL, "--ane-device", CLI_STRING, "DEVICE",
                "the device of --ane-profile, as the ane backend names it: real (default on\n"
                "macOS) or fake[:SETTING...] (default elsewhere: fake)",
                &device),
        CMD_PALETTIZE_OPTS(&pa),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "compile",
        .usage = "-m DIR -o BUNDLE [options]",
        .about =
            "Lowers a decoder folder (Qwen3, Qwen3.5, Llama, Gemma 3) to an ANE bundle: MIL\n"
            "programs for the layers (4, 3, 2 or 1 kernels per sequence bucket; one program\n"
            "per layer, kernel or function) and for the LM head (one per chunk, or one), fp16\n"
            "weights in weights/weight.bin, manifest.json. Written atomically. The disputed\n"
            "constructs are choices, each with its compile count for Qwen3-0.6B (28 layers, 3\n"
            "buckets); the defaults cost 28 + 10 = 38 compiles, under the ~119 per process\n"
            "public projects report (docs/lowering.md, \"Lowering forms\"). An encoder folder\n"
            "(model_type modernbert) has its own options: nectar compile -m ENCODER_DIR\n"
            "--help.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if ((rc = cmd_palettize_options(&cmd, &pa, &o.palettize))) return rc;
    nc_error err = {0};
    if (profile) {
        int given[LOWER_N_FORM_KEYS], changed;
        cli_forms_given(argc, argv, given);
        lower_all_forms a = {o.forms, o.kernels_per_layer, {0}};
        /* what the rules between forms need of the model: suggestions
         * compile then lowers */
        if (lower_forms_model_of_dir(o.model_dir, o.lm_head_on_cpu, &a.model, &err) ||
            cli_forms_from_profile(profile, device, given, &a, &changed, &err))
            return cli_fail(&err);
        o.forms = a.forms;
        o.kernels_per_layer = a.kernels_per_layer;
    }
    /* q8/q4 blocks have no fp16 form the bundle could take; other failures
     * to read the weights are the compiler's to report */
    int n_quant = 0;
    if (cli_count_quantized(o.model_dir, &n_quant, &err) == NC_OK && n_quant)
        return cli_failf("%s: quantized folders cannot be compiled (%d matrices are q8/q4 "
                         "blocks); compile the original folder",
                         o.model_dir, n_quant);
    err = (nc_error){0};
    lower_compile_report r;
    cli_outdir_sweep(o.out_dir); /* what a killed compile left */
    if (lower_qwen3_compile(&o, &r, &err) != NC_OK) return cli_fail(&err);
    fprintf(stderr, "compiled %s -> %s in %.2f s: %d programs, %d functions, %.1f MB, ctx %d, "
           "%d kernels per token; fp16 weights: %zu values, %zu saturated to +/-65504, "
           "%zu non-finite\n",
           o.model_dir, o.out_dir, r.seconds, r.n_programs, r.n_functions, r.bundle_bytes / 1e6,
           r.ctx, r.kernels_per_token, r.fp16.n_values, r.fp16.n_saturated, r.fp16.n_nonfinite);
    cmd_palettize_print(&o.palettize, &r.palettize);
    return 0;
}
