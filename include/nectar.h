/* nectar: transformers on the Apple Neural Engine, in C.
 *
 * The public C API, the only header a program that uses libnectar needs:
 *
 *     cc app.c $(pkg-config --cflags --libs nectar)
 *
 * Conventions (every call below follows them):
 *   - Handles (nc_model, nc_sequence, nc_tokenizer, nc_sampling) are opaque:
 *     made by a *_open / *_new call, released by the matching *_free, which
 *     accepts NULL. No struct layout is part of the API except nc_error.
 *   - Every call that can fail returns an nc_status (NC_OK == 0) and fills
 *     the caller's nc_error (which may be NULL) with a one-line message that
 *     names the file, tensor, field, option or line at fault. Nothing in the
 *     library prints, exits or aborts.
 *   - Memory the library returns (token arrays, strings) is released with
 *     nc_free().
 *   - Options are "key=value" strings in a NULL-terminated array (or NULL for
 *     the defaults), so new options never change a signature; an unknown key
 *     or a bad value is NC_ERR_INVALID naming it.
 *   - Threads: a model is read-only once open and may be shared; one
 *     sequence is used by one thread at a time. A tokenizer may be shared.
 *     Encoder calls (nc_embed, nc_fill_mask, nc_classify) on one model must
 *     not overlap.
 *
 * A greedy continuation, in full (examples/generate.c):
 *
 *     nc_error err;
 *     nc_model *m;
 *     nc_sequence *seq;
 *     nc_sampling *s = nc_sampling_new();
 *     if (nc_model_open("Qwen3-0.6B", "cpu", NULL, &m, &err) ||
 *         nc_sequence_new(m, 0, &seq, &err) ||
 *         nc_sampling_set(s, "temperature", 0, &err) ||
 *         nc_generate(seq, "The capital of France is", 32, s, print_piece, NULL, NULL, &err))
 *         fprintf(stderr, "%s\n", err.msg);
 */
#ifndef NECTAR_H
#define NECTAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NC_API marks the public symbols: the library is built with
 * -fvisibility=hidden, so nothing else is exported from libnectar.so. */
#if defined(_WIN32)
#define NC_API
#elif defined(__GNUC__) || defined(__clang__)
#define NC_API __attribute__((visibility("default")))
#else
#define NC_API
#endif

/* ---- Version ------------------------------------------------------------ */

#define NECTAR_VERSION_MAJOR 0
#define NECTAR_VERSION_MINOR 3
#define NECTAR_VERSION_PATCH 1
#define NECTAR_VERSION "0.3.1"
/* major * 10000 + minor * 100 + patch: compare with >= */
#define NECTAR_VERSION_NUMBER                                                                      \
    (NECTAR_VERSION_MAJOR * 10000 + NECTAR_VERSION_MINOR * 100 + NECTAR_VERSION_PATCH)

/* The version of the library actually linked ("0.3.1"), and its number; a
 * program built against this header can compare them with the macros. */
NC_API const char *nc_version(void);
NC_API int nc_version_number(void);

/* ---- Errors ------------------------------------------------------------- */

typedef enum nc_status {
    NC_OK = 0,
    NC_ERR_IO,          /* a file could not be opened, read, written or mapped */
    NC_ERR_FORMAT,      /* input is malformed: bad header, JSON, MIL text, ... */
    NC_ERR_NOMEM,       /* an allocation failed */
    NC_ERR_INVALID,     /* a caller passed an invalid argument or option */
    NC_ERR_UNSUPPORTED, /* well-formed but not supported (dtype, architecture, op) */
    NC_ERR_RANGE,       /* a value or size is outside what is allowed (context, index) */
    NC_ERR_NOT_FOUND,   /* a named thing is missing: tensor, file, function, field */
    NC_ERR_INTERNAL     /* a broken invariant inside nectar: a bug */
} nc_status;

/* The error record every fallible call fills. `msg` is one line, no newline. */
typedef struct nc_error {
    nc_status code;
    char msg[512];
} nc_error;

/* A short name for a status code ("io", "format", ...). */
NC_API const char *nc_status_name(nc_status s);

/* Releases memory returned by the library (ids, text). NULL is fine. */
NC_API void nc_free(void *p);

/* ---- Tokenizer ---------------------------------------------------------- */

typedef struct nc_tokenizer nc_tokenizer;

/* path: a model folder holding tokenizer.json, or that file itself.
 * Byte-level BPE as Hugging Face `tokenizers` runs it (Qwen2/Qwen3, GPT-2
 * style, ModernBERT); the ids equal HF's byte for byte. */
NC_API nc_status nc_tokenizer_open(const char *path, nc_tokenizer **out, nc_error *err);
NC_API void nc_tokenizer_free(nc_tokenizer *t);

/* Max id + 1, added tokens included (151669 for Qwen3). */
NC_API int32_t nc_tokenizer_vocab_size(const nc_tokenizer *t);

/* UTF-8 text (len bytes; NUL is an ordinary character) -> ids in *ids
 * (nc_free it; NULL when *n_ids is 0). Special tokens written in the text
 * are recognised. add_special: also add the tokenizer's post-processor
 * tokens ([CLS] ... [SEP] for encoders), as HF's add_special_tokens=True.
 * Text that is not valid UTF-8 is NC_ERR_INVALID naming the byte offset. */
NC_API nc_status nc_tokenize(const nc_tokenizer *t, const char *text, size_t len, int add_special,
                             int32_t **ids, size_t *n_ids, nc_error *err);

/* ids -> NUL-terminated UTF-8 in *text (nc_free it); *len (may be NULL)
 * excludes the NUL. skip_special drops special tokens. Invalid byte
 * sequences become U+FFFD and unknown ids are skipped, as HF's decode. */
NC_API nc_status nc_detokenize(const nc_tokenizer *t, const int32_t *ids, size_t n_ids,
                               int skip_special, char **text, size_t *len, nc_error *err);

/* The id of a token by its text ("<|im_end|>", "[MASK]", "Ġthe"); -1 when
 * the vocabulary has none. */
NC_API int32_t nc_token_id(const nc_tokenizer *t, const char *token);

/* ---- Chat template ------------------------------------------------------ */

/* One message. role: "system", "user", "assistant" or "tool".
 * reasoning_content may be NULL (an assistant's <think> block is then
 * taken from content). */
typedef struct nc_chat_message {
    const char *role;
    const char *content;
    const char *reasoning_content;
} nc_chat_message;

#define NC_CHAT_ADD_GENERATION_PROMPT 1u /* end with the assistant's header */
#define NC_CHAT_NO_THINKING 2u           /* Qwen3's enable_thinking=False */

typedef struct nc_model nc_model;

/* Renders a conversation with the chat template of model's family (Qwen3,
 * Qwen3.5, Llama 3; NULL: Qwen3's): the same bytes as transformers'
 * apply_chat_template(messages, tokenize=False) with that family's official
 * template. *out is NUL-terminated (nc_free it). An encoder has no template
 * (NC_ERR_UNSUPPORTED). Since 0.2.0 (0.1 took no model and rendered Qwen3's
 * template for every model). */
NC_API nc_status nc_chat_apply_template(const nc_model *model, const nc_chat_message *msgs,
                                        size_t n_msgs, unsigned flags, char **out, nc_error *err);

/* ---- Models ------------------------------------------------------------- */

typedef struct nc_model nc_model;

typedef enum nc_model_kind {
    NC_MODEL_DECODER = 1, /* Qwen3: sequences, nc_generate */
    NC_MODEL_ENCODER = 2  /* ModernBERT family: nc_embed, nc_fill_mask, nc_classify */
} nc_model_kind;

/* Opens a Hugging Face model folder (config.json, tokenizer.json,
 * *.safetensors) or a bundle made by nc_compile, on a backend:
 *   "cpu" (NULL: the default)  a folder, run by the CPU engine;
 *   "mil"                      a bundle, run by the fp16 MIL interpreter
 *                              (the ANE's arithmetic, on any machine);
 *   "ane"                      a bundle on the Neural Engine (macOS),
 *                              or with "ane_device=fake" on a stand-in device
 *                              that runs the programs in the interpreter.
 * Options: "threads=N" (0: all cores, the default), "ctx=N" (decoder
 * folder: the context of new sequences, default 4096; a bundle's is fixed
 * when compiled), "kv=f16|f32" (decoder KV cache precision, default f32),
 * "ane_device=real|fake", "ane_cpu=kernels|interp" (what runs a layer the
 * device refuses: the CPU engine's kernels, the default, or the MIL
 * interpreter). The model type comes from config.json
 * (qwen3: a decoder; modernbert: an encoder).
 * A path that does not exist and reads "ORG/NAME" or "ORG/NAME@REV" is a
 * Hugging Face model id, opened from the hub cache as transformers finds it
 * offline (models--ORG--NAME/snapshots/<refs/main>): the cache folder is
 * option "hf_cache=DIR", else the one huggingface_hub computes from
 * HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME or HOME. Nothing is downloaded: a
 * model not cached is NC_ERR_NOT_FOUND naming the `hf download` command.
 * Speculative decoding
 * (decoder on "cpu"): "draft=DIR" a smaller model of the same tokenizer
 * proposes tokens that the model checks in one step (greedy output
 * unchanged; sampled output distributed as the model's own),
 * "draft_max=N" (default 6), "draft_min=N", "draft_p_min=P",
 * "draft_backend=cpu|mil|ane" (a bundle draft; ane_device applies). */
NC_API nc_status nc_model_open(const char *path, const char *backend, const char *const *options,
                               nc_model **out, nc_error *err);

/* The precision contract for bf16 weights on the CPU, for the whole
 * process (the command line's NECTAR_BF16): "accurate" (NULL or "" too,
 * the default: fp32 activations, each product within 2^-17 of the exact
 * one), "fast" (activations rounded to bf16, as llama.cpp's bf16 path and
 * PyTorch's bf16 autocast do; vdpbf16ps or bfmmla where the CPU has them,
 * about 1.7x the accurate contract's speed for encoders on AVX512-BF16),
 * or "off" (fp32 kernels only); optionally followed by ",decode=KERNEL"
 * and ",prompt=KERNEL" to force a kernel. Call it before opening models
 * and not while one runs: the kernels are the process's, and an encoder
 * keeps the panels it packed when it was opened. A contract that is none
 * of these is NC_ERR_INVALID, and leaves the contract as it was. */
NC_API nc_status nc_set_bf16_contract(const char *contract, nc_error *err);
NC_API void nc_model_free(nc_model *m);

/* Whether this build on this machine can run backend with these options,
 * before loading anything: NC_OK, or why not ("ane" with ane_device=real
 * off macOS is NC_ERR_UNSUPPORTED). Bad names or options: NC_ERR_INVALID. */
NC_API nc_status nc_backend_available(const char *backend, const char *const *options,
                                      nc_error *err);

NC_API nc_model_kind nc_model_get_kind(const nc_model *m);
/* The model's tokenizer (owned by the model; valid while it lives). */
NC_API const nc_tokenizer *nc_model_tokenizer(const nc_model *m);
/* Length of a logits row (decoder), of an embedding (encoder). */
NC_API int nc_model_vocab_size(const nc_model *m);
NC_API int nc_model_embedding_size(const nc_model *m);
/* The number of transformer layers. */
NC_API int nc_model_num_layers(const nc_model *m);
/* Encoder classifiers: the number of labels and the name of label i (NULL
 * out of range; 0 labels for other models). */
NC_API int nc_model_num_labels(const nc_model *m);
NC_API const char *nc_model_label(const nc_model *m, int i);
/* Where the model's kernels run, one line: on the ane backend, per group of
 * layers, how many kernels the device took (and in which form of the
 * compile ladder), which ran on the CPU and the device's refusal, and the
 * bundle's lowering forms ("ane (fake device): layers 0-4: 60/60 kernels on
 * the ANE; head: 1/1 ..."); on cpu and mil, where every kernel runs. Owned
 * by the model; NULL for a NULL model. */
NC_API const char *nc_model_placement(const nc_model *m);

/* Decoders: called after each layer with the hidden state of the rows (tokens)
 * it just processed, prompt and generated alike, in order: rows[n_rows *
 * width] floats of layer `layer` (0-based). For comparing backends layer by
 * layer (`nectar run --dump-layers`). NULL removes it. NC_ERR_UNSUPPORTED
 * for an encoder or a backend that cannot report its layers. */
typedef void (*nc_layer_callback)(void *user, int layer, const float *rows, int n_rows, int width);
NC_API nc_status nc_model_set_layer_callback(nc_model *m, nc_layer_callback cb, void *user,
                                             nc_error *err);

/* ---- Sampling parameters ------------------------------------------------ */

typedef struct nc_sampling nc_sampling;

/* Defaults: greedy (temperature 0), no top-k/top-p/min-p limit, repeat
 * penalty 1, seed 0, no stop strings. NULL when out of memory. */
NC_API nc_sampling *nc_sampling_new(void);
NC_API void nc_sampling_free(nc_sampling *s);

/* Sets one parameter by name: "temperature" (in [0, 100]; 0 is greedy),
 * "top_k" (a whole number, 0: off), "top_p" and "min_p" (in [0, 1]),
 * "repeat_penalty" (in (0, 100]; divides
 * positive and multiplies negative logits of tokens seen), "presence_penalty"
 * and "frequency_penalty" (in [-100, 100]; OpenAI's: minus once, minus count
 * times, per token seen), "seed" (an integer up to 2^53), and one that is not
 * sampling but belongs to the request: "truncate" (1: a prompt longer than
 * the sequence's context loses its oldest tokens instead of being an
 * error). NC_ERR_INVALID for an unknown name or a value out of range. */
NC_API nc_status nc_sampling_set(nc_sampling *s, const char *name, double value, nc_error *err);

/* The value of a parameter nc_sampling_set names (truncate: 0 or 1; seed:
 * rounded to a double); NaN for an unknown name or a NULL s. */
NC_API double nc_sampling_get(const nc_sampling *s, const char *name);

/* Any 64-bit seed: the same seed, parameters and prompt give the same text. */
NC_API void nc_sampling_set_seed(nc_sampling *s, uint64_t seed);

/* The decoder folder's own defaults: every parameter its
 * generation_config.json gives (temperature, top_k, top_p, min_p,
 * repetition_penalty; do_sample false means greedy) replaces the one in s;
 * the others stay. A folder without the file changes nothing; a malformed
 * one is NC_ERR_FORMAT naming the file and field. Set a caller's own
 * choices after this call. */
NC_API nc_status nc_sampling_from_model(nc_sampling *s, const nc_model *m, nc_error *err);

/* Adds a stop string: generation ends before it and does not emit it. */
NC_API nc_status nc_sampling_add_stop(nc_sampling *s, const char *stop, nc_error *err);

/* ---- Sequences and generation (decoders) -------------------------------- */

typedef struct nc_sequence nc_sequence;

/* A sequence: one KV cache of ctx tokens (0: the model's "ctx" option,
 * or the bundle's context).
 * Several sequences can share one model. Consecutive nc_generate calls on a
 * sequence reuse the prefix they share (a chat's earlier turns). */
NC_API nc_status nc_sequence_new(nc_model *m, int ctx, nc_sequence **out, nc_error *err);
NC_API void nc_sequence_free(nc_sequence *s);
/* Empties the cache: the next call recomputes its whole prompt. */
NC_API void nc_sequence_reset(nc_sequence *s);
/* The capacity of its cache in tokens. */
NC_API int nc_sequence_context(const nc_sequence *s);

/* Called for each generated token with the text that became final (it may
 * be empty: an incomplete UTF-8 character or a possible stop-string start is
 * held back), and once more at the end with token -1 for held-back text.
 * Return non-zero to cancel: generation ends with NC_FINISH_CANCEL. */
typedef int (*nc_token_callback)(void *user, int32_t token, const char *text, size_t len);

typedef enum nc_finish {
    NC_FINISH_EOS = 0, /* the model's end-of-sequence token (not emitted) */
    NC_FINISH_STOP,    /* a stop string */
    NC_FINISH_LENGTH,  /* max_tokens reached */
    NC_FINISH_CONTEXT, /* the sequence's cache is full */
    NC_FINISH_CANCEL   /* the callback returned non-zero */
} nc_finish;

/* "eos", "stop", "length", "context", "cancel". */
NC_API const char *nc_finish_name(nc_finish f);

/* Figures of the last successful nc_generate on a sequence (0 before one). */
typedef enum nc_stat {
    NC_STAT_PROMPT_TOKENS,   /* prompt tokens used (after truncation) */
    NC_STAT_PROMPT_CACHED,   /* of those, reused from the cache (not recomputed) */
    NC_STAT_PROMPT_DROPPED,  /* prompt tokens dropped by "truncate" */
    NC_STAT_GENERATED,       /* tokens sampled, an end-of-sequence one included */
    NC_STAT_PROMPT_SECONDS,  /* from the call to the first sampled token */
    NC_STAT_GENERATE_SECONDS, /* from the first sampled token to the end */
    NC_STAT_DRAFTED,          /* speculative decoding: tokens the draft proposed */
    NC_STAT_DRAFT_ACCEPTED,   /* of those, the ones kept */
    NC_STAT_DRAFT_STEPS       /* verification steps of the model */
} nc_stat;
NC_API double nc_sequence_stat(const nc_sequence *s, nc_stat what);

/* Generates up to max_tokens (< 0: until the context is full) after the
 * prompt (UTF-8, tokenized as is: apply the chat template first for chat),
 * streaming each token to cb (may be NULL). sampling NULL: greedy. finish
 * (may be NULL) says why it ended. Errors (empty prompt, prompt longer than
 * the context) come before any callback. */
NC_API nc_status nc_generate(nc_sequence *s, const char *prompt, int max_tokens,
                             const nc_sampling *sampling, nc_token_callback cb, void *user,
                             nc_finish *finish, nc_error *err);

/* The same from token ids. */
NC_API nc_status nc_generate_tokens(nc_sequence *s, const int32_t *prompt, size_t n_prompt,
                                    int max_tokens, const nc_sampling *sampling,
                                    nc_token_callback cb, void *user, nc_finish *finish,
                                    nc_error *err);

/* ---- Tools, structured output and logprobs (decoders) ------------------- */

/* The parts of an OpenAI chat request beyond its messages and sampling, as
 * `nectar serve` reads and runs them (the same code): tools, tool_choice
 * and response_format. One request serves one generation at a time. */
typedef struct nc_chat_request nc_chat_request;

/* request_json: a JSON object with optional "tools", "tool_choice" and
 * "response_format" in OpenAI's shape (other fields are ignored), checked
 * as the server checks them: a bad field is NC_ERR_INVALID naming it
 * ("'tools[0].function.name' must be ..."), and so is a schema the
 * sampler cannot enforce. A forced tool call (tool_choice "required" or a
 * function) and response_format json_object / json_schema constrain the
 * tokens sampled (nc_sequence_constrain). */
NC_API nc_status nc_chat_request_new(const nc_model *m, const char *request_json,
                                     nc_chat_request **out, nc_error *err);
NC_API void nc_chat_request_free(nc_chat_request *r);

/* 1 when its output is constrained (then render with thinking off, as the
 * server does: nc_chat_request_render does); 1 when tool calls are parsed
 * from its output (tools given and tool_choice not "none"). */
NC_API int nc_chat_request_is_constrained(const nc_chat_request *r);
NC_API int nc_chat_request_uses_tools(const nc_chat_request *r);

/* nc_chat_apply_template with the request's tools in the system prompt
 * and, per message, the calls an assistant made: tool_calls (may be NULL)
 * holds for each message NULL or the JSON text of its OpenAI "tool_calls"
 * array ([{"function": {"name", "arguments"}}], arguments a JSON string or
 * an object). */
NC_API nc_status nc_chat_request_render(const nc_chat_request *r, const nc_chat_message *msgs,
                                        size_t n_msgs, const char *const *tool_calls,
                                        unsigned flags, char **out, nc_error *err);

/* Tool calls in generated content (after any think block): text[0..len)
 * is all the content so far; what is new since the last call comes back:
 * *content the text to show (NUL-terminated; the call tags never appear)
 * and *calls a JSON array of OpenAI tool_calls entries {"id", "type":
 * "function", "function": {"name", "arguments": JSON text}} ("[]" when
 * none); nc_free both. Text that may start a call is held back until
 * is_final (the output is complete). nc_chat_request_restart starts over. */
NC_API nc_status nc_chat_request_scan(nc_chat_request *r, const char *text, size_t len,
                                      int is_final, char **content, char **calls, nc_error *err);

/* Back to the start (the scan and the constraint), for another generation. */
NC_API void nc_chat_request_restart(nc_chat_request *r);

/* The nc_generate calls on s that follow sample under r's constraint
 * (restarted at each call; none when r asks for nothing constrained); r
 * must outlive them. NULL removes it. */
NC_API nc_status nc_sequence_constrain(nc_sequence *s, nc_chat_request *r, nc_error *err);

/* Reasoning apart, as `nectar chat` and `nectar serve` split
 * reasoning_content (the same code): with cb set, the nc_generate calls on
 * s that follow hand the text between the model family's <think> and
 * </think> tokens (recognised by token id, shown to neither callback) to
 * cb, and the rest to nc_generate's callback, each piece with the token
 * whose text it is, cb's call first; non-zero from cb cancels. Reasoning
 * loses its leading and trailing blanks, the answer the blanks right after
 * </think>; <think> opens reasoning only before any answer. starts_inside:
 * the prompt ends with the opening tag (Qwen3.5's generation prompt with
 * thinking on), so the output starts as reasoning. A family without think
 * tokens (Llama 3, Gemma 3) never splits. NULL cb: no split (the default);
 * the tags are then text like any other. */
NC_API nc_status nc_sequence_split_reasoning(nc_sequence *s, nc_token_callback cb, void *user,
                                             int starts_inside, nc_error *err);

/* Log-probabilities of generated tokens, as OpenAI's "logprobs": after
 * nc_sequence_set_logprobs(s, k) with k in 0..20 (-1: off, the default),
 * the nc_generate calls on s record, for each token they generate (an
 * end-of-sequence one excluded), log p of the chosen token and the k most
 * likely ones, from the logits row it was drawn from (the model's, before
 * temperature and the other filters; a constrained row's refused tokens
 * have none). */
typedef struct nc_logprob {
    int32_t token;
    float logprob;
} nc_logprob;
NC_API nc_status nc_sequence_set_logprobs(nc_sequence *s, int k, nc_error *err);

/* Token i (0-based) of the current or last nc_generate on s: the chosen
 * one into *chosen, up to max_top alternatives (most likely first) into
 * top. Returns the number of alternatives written, or -1 when there is no
 * token i or logprobs are off. May be called from the token callback, for
 * the token it delivers and those before. */
NC_API int nc_sequence_logprob(const nc_sequence *s, size_t i, nc_logprob *chosen, nc_logprob *top,
                               int max_top);

/* A token's bytes as the vocabulary holds them (not NUL-terminated; a
 * piece of a UTF-8 character for byte-level tokens): OpenAI's logprobs
 * "bytes". NULL for an unknown id. */
NC_API const char *nc_token_bytes(const nc_tokenizer *t, int32_t id, size_t *len);

/* ---- Encoders ----------------------------------------------------------- */

/* The pooled embedding of text (the model's pooling: CLS or mean over real
 * tokens, before any head; a sentence-transformers folder's pooling and
 * normalization) into out[n_out], n_out == nc_model_embedding_size(m). The
 * text gets the tokenizer's special tokens. nc_embed_batch with n = 1. */
NC_API nc_status nc_embed(nc_model *m, const char *text, float *out, size_t n_out, nc_error *err);

/* What nc_embed_batch and nc_embed_tokens do besides the folder's settings
 * (zero-initialise it; NULL means all zero). */
typedef struct nc_embed_options {
    int normalize;           /* 1: scale every vector to unit L2 norm (a folder whose
                                sentence-transformers modules end with Normalize always is) */
    int batch_size;          /* texts per padded forward pass (0: 32) */
    const char *prompt_name; /* text: the folder's prompt of this name goes before each text
                                (config_sentence_transformers.json, "query"); NULL: its
                                default_prompt_name, if any */
    const char *prompt;      /* text: this goes before each text instead (overrides the name) */
} nc_embed_options;

/* Embeddings of n texts into out[n * D], D = nc_model_embedding_size(m),
 * n_out == n * D: one padded forward pass per batch of texts (sorted by
 * length first), as sentence-transformers' encode. A sentence-transformers
 * folder's settings apply (modules.json: 1_Pooling's mode (cls, mean, max,
 * lasttoken, mean_sqrt_len_tokens, weightedmean), 2_Normalize, the sequence
 * limit (longer texts are truncated), prompts); otherwise the config's
 * pooling, and a text longer than the model's positions is an error.
 * *n_tokens (may be NULL) gets the number of tokens run. */
NC_API nc_status nc_embed_batch(nc_model *m, const char *const *texts, size_t n,
                                const nc_embed_options *opt, float *out, size_t n_out,
                                size_t *n_tokens, nc_error *err);

/* The same from token ids without special tokens (as nc_tokenize with
 * add_special 0): each row gets the tokenizer's special tokens ([CLS] ...
 * [SEP]) and is truncated as a text would be; prompts do not apply. */
NC_API nc_status nc_embed_tokens(nc_model *m, const int32_t *const *ids, const size_t *n_ids,
                                 size_t n, const nc_embed_options *opt, float *out, size_t n_out,
                                 size_t *n_tokens, nc_error *err);

/* Sequence classifiers over text pairs (cross-encoders, rerankers): the
 * logits of "[CLS] first [SEP] second [SEP]" for each pair into
 * logits[n * L], L = nc_model_num_labels(m), in padded batches as above.
 * *n_tokens (may be NULL) gets the tokens run. */
NC_API nc_status nc_classify_pairs(nc_model *m, const char *const *first,
                                   const char *const *second, size_t n, float *logits,
                                   size_t n_logits, size_t *n_tokens, nc_error *err);

/* Masked-LM models: for each mask token ([MASK] or <mask>) in text, in
 * order, the k most likely tokens and their probabilities:
 * ids[i * k + j], probs[i * k + j] for mask i < max_masks. *n_masks is the
 * number of masks in the text (it may exceed max_masks; the rest are not
 * written). NC_ERR_INVALID when the text has no mask token. */
NC_API nc_status nc_fill_mask(nc_model *m, const char *text, int k, int32_t *ids, float *probs,
                              int max_masks, int *n_masks, nc_error *err);

/* Sequence classifiers: the probability of every label (softmax of the
 * logits) into probs[n_probs], n_probs == nc_model_num_labels(m). */
NC_API nc_status nc_classify(nc_model *m, const char *text, float *probs, size_t n_probs,
                             nc_error *err);

/* ---- Decision models (docs/decision.md) --------------------------------- */

/* An encoder plus a decision head: type embeddings, H head layers, a marker
 * scorer, raw and calibrated marker probabilities, an action head. */
typedef struct nc_decision_model nc_decision_model;

/* path: a decision folder (backend "cpu" or NULL) or a bundle compiled from
 * one (nectar compile; backend "mil": its NE region in the MIL interpreter's
 * fp16 mode, "ane": on the device option ane_device names). Options:
 * "threads=N", "ane_device=real|fake[:SETTINGS]". */
NC_API nc_status nc_decision_open(const char *path, const char *backend,
                                  const char *const *options, nc_decision_model **out,
                                  nc_error *err);
NC_API void nc_decision_free(nc_decision_model *d);
/* K (markers) and A (actions); the label of action i, or NULL when the
 * model names none. */
NC_API int nc_decision_num_markers(const nc_decision_model *d);
NC_API int nc_decision_num_actions(const nc_decision_model *d);
NC_API const char *nc_decision_action_label(const nc_decision_model *d, int i);

/* n texts (each tokenized with the special tokens, each holding the K
 * markers), run as one padded batch: marker_probs[n * K] (softmax of the
 * marker logits), calibrated[n * K] (softmax of logits / T) and
 * action_probs[n * A]; any output may be NULL. NC_ERR_INVALID names the
 * text and marker when a marker is missing. */
NC_API nc_status nc_decide(nc_decision_model *d, const char *const *texts, size_t n,
                           float *marker_probs, float *calibrated, float *action_probs,
                           nc_error *err);

/* The same from token ids as given (special tokens included): row i is
 * ids[i][0 .. n_ids[i]); markers NULL (found by the marker token ids) or
 * [n * K] positions. */
NC_API nc_status nc_decide_tokens(nc_decision_model *d, const int32_t *const *ids,
                                  const size_t *n_ids, const int32_t *markers, size_t n,
                                  float *marker_probs, float *calibrated, float *action_probs,
                                  nc_error *err);

/* ---- Compiling for the Neural Engine ------------------------------------ */

/* Lowers the model folder at model_dir (Qwen3 or ModernBERT family) to an
 * ANE bundle at out_dir: MIL programs, fp16 weights, manifest.json; written
 * atomically (an older bundle there is replaced). Options: "threads=N";
 * decoders also "ctx=N" (a multiple of 32), "buckets=32,64,128",
 * "lm_head=ane|cpu"; encoders "seqs=64,96,128" and "batches=1,3" (one function
 * per batch x length). The
 * bundle runs with nc_model_open(out_dir, "mil") here and "ane" on a Mac. */
NC_API nc_status nc_compile(const char *model_dir, const char *out_dir, const char *const *options,
                            nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
