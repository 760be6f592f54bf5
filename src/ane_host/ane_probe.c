/* The probe ladder (ane_probe.h): a table of cases, each a small program
 * built with the MIL builder, and one executor that checks, opens, binds by
 * name, allocates under the case's surface policy, runs in the case's mode,
 * compares with the fp32 interpreter and times. Buffers are shared by name
 * across a case's functions, so a chain of kernels passes its activations
 * through surfaces as the runner does. */
#include "ane_host/ane_probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_bind.h"
#include "ane_host/ane_plan.h"
#include "ane_host/ane_stage.h"
#include "ane_host/ane_wait.h"
#include "base/half.h"
#include "base/timer.h"
#include "bundle/manifest.h"
#include "mil/builder.h"
#include "mil/check.h"
#include "mil/interp.h"
#include "mil/print.h"

enum { PM_SYNC, PM_ASYNC, PM_EVENTS };

typedef struct pctx {
    mil_builder *b;
    int small;
    unsigned seed;
    double flops, wbytes; /* per run of all functions (speed probes) */
} pctx;

typedef void (*build_fn)(pctx *c);

typedef struct probe_case {
    const char *id, *question;
    build_fn build;
    int mode;
    ane_surface_policy pol;
} probe_case;

/* --- building blocks ------------------------------------------------------ */

static float rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static mil_var *in4(pctx *c, const char *name, int64_t d1, int64_t d2, int64_t d3) {
    int64_t dims[4] = {1, d1, d2, d3};
    const mil_type *t = mil_type_tensor(mil_builder_program(c->b), MIL_DT_FP16, 4, dims);
    return t ? mil_build_input(c->b, name, t) : NULL;
}

/* A 1x1 conv with small random weights (the ANE's linear layer; also the
 * "anchor" that keeps a program from being elementwise-only). */
static mil_var *conv(pctx *c, const char *name, mil_var *x, int64_t cout, int64_t cin) {
    if (!x) return NULL;
    float *w = malloc((size_t)(cout * cin) * sizeof *w);
    if (!w) return NULL;
    float scale = 1.0f / sqrtf((float)cin);
    for (int64_t i = 0; i < cout * cin; i++)
        w[i] = rnd(&c->seed) * scale;
    mil_var *y = mil_build_conv1x1(c->b, name, x, cout, cin, w, NULL);
    free(w);
    return y;
}

static void fn(pctx *c, const char *name) {
    mil_build_function(c->b, name, "ios18");
}

static void done1(pctx *c, mil_var *y) {
    if (y) mil_build_done(c->b, &y, 1);
}

/* --- the cases ------------------------------------------------------------ */

static void gather_of(pctx *c, mil_dtype dt) {
    fn(c, "main");
    mil_var *x = in4(c, "x", 64, 1, 32);
    int64_t n = 32;
    uint16_t u[32];
    int32_t i32[32];
    for (int j = 0; j < 32; j++) {
        u[j] = (uint16_t)((j * 7) % 32);
        i32[j] = (j * 7) % 32;
    }
    mil_var *ix = mil_build_const_tensor(c->b, "idx", dt, 1, &n,
                                         dt == MIL_DT_INT32 ? (void *)i32 : (void *)u);
    mil_var *g = x && ix ? mil_build_gather(c->b, "g", x, ix, 3) : NULL;
    done1(c, conv(c, "y", g, 64, 64));
}
static void b_gather_u16(pctx *c) {
    gather_of(c, MIL_DT_UINT16);
}
static void b_gather_i16(pctx *c) {
    gather_of(c, MIL_DT_INT16); /* the same bits as uint16 for values < 32768 */
}
static void b_gather_i32(pctx *c) {
    gather_of(c, MIL_DT_INT32);
}

/* Two inputs of different sizes (16 KB and 4 KB rows... 4x apart). */
static void b_two_sizes(pctx *c) {
    fn(c, "main");
    mil_var *a = in4(c, "a", 64, 1, 32), *bb = in4(c, "b", 256, 1, 32);
    int32_t ax[1] = {1};
    mil_var *r = bb ? mil_build_reduce(c->b, "reduce_sum", "r", bb, 1, ax, 1) : NULL;
    mil_var *s = a && r ? mil_build_add(c->b, "s", a, r) : NULL;
    done1(c, conv(c, "y", s, 64, 64));
}

/* 32 x 32 fp16 = 2 KB surfaces: below the reported 48 KB minimum. */
static void b_small(pctx *c) {
    fn(c, "main");
    done1(c, conv(c, "y", in4(c, "x", 32, 1, 32), 32, 32));
}

static void width(pctx *c, int w) {
    fn(c, "main");
    done1(c, conv(c, "y", in4(c, "x", 64, 1, w), 64, 64));
}
static void b_width16(pctx *c) {
    width(c, 16);
}
static void b_width32(pctx *c) {
    width(c, 32);
}
static void b_width64(pctx *c) {
    width(c, 64);
}

static void softmax_of(pctx *c, int len) {
    fn(c, "main");
    mil_var *h = conv(c, "h", in4(c, "x", 64, 1, len), 64, 64);
    done1(c, h ? mil_build_softmax(c->b, "y", h, -1) : NULL);
}
static void b_softmax96(pctx *c) {
    softmax_of(c, 96);
}
static void b_softmax64(pctx *c) {
    softmax_of(c, 64);
}

static void b_silu(pctx *c) {
    fn(c, "main");
    mil_var *h = conv(c, "h", in4(c, "x", 64, 1, 32), 64, 64);
    done1(c, h ? mil_build_unary(c->b, "silu", "y", h) : NULL);
}

static void b_sigmoid_mul(pctx *c) {
    fn(c, "main");
    mil_var *h = conv(c, "h", in4(c, "x", 64, 1, 32), 64, 64);
    mil_var *s = h ? mil_build_unary(c->b, "sigmoid", "s", h) : NULL;
    done1(c, s ? mil_build_mul(c->b, "y", s, h) : NULL);
}

/* The kv_sS pattern alone: gather (uint16), greater, select; no conv. */
static void b_elementwise(pctx *c) {
    fn(c, "main");
    mil_var *kc = in4(c, "cache", 64, 1, 128), *kn = in4(c, "fresh", 64, 1, 32);
    mil_var *wr = in4(c, "write", 1, 1, 128);
    uint16_t idx[128];
    for (int j = 0; j < 128; j++)
        idx[j] = (uint16_t)(j % 32);
    int64_t n = 128;
    mil_var *iv = mil_build_const_tensor(c->b, "idx", MIL_DT_UINT16, 1, &n, idx);
    mil_var *m = wr ? mil_build_binary(c->b, "greater", "m", wr,
                                       mil_build_const_scalar(c->b, "half", MIL_DT_FP16, 0.5))
                    : NULL;
    mil_var *sp = m && iv && kn ? mil_build_gather(c->b, "spread", kn, iv, 3) : NULL;
    done1(c, sp && kc ? mil_build_select(c->b, "y", m, sp, kc) : NULL);
}

static void b_multi(pctx *c) {
    fn(c, "f_relu");
    mil_var *h = conv(c, "h1", in4(c, "x", 64, 1, 32), 64, 64);
    done1(c, h ? mil_build_unary(c->b, "relu", "y1", h) : NULL);
    fn(c, "f_sigmoid");
    h = conv(c, "h2", in4(c, "x", 64, 1, 32), 64, 64);
    done1(c, h ? mil_build_unary(c->b, "sigmoid", "y2", h) : NULL);
}

#define CH 256 /* channels of the chain cases */

/* Four kernels, one function each, activations through surfaces. */
static void b_chain4(pctx *c) {
    static const char *names[4][3] = {
        {"k0", "x", "h1"}, {"k1", "h1", "h2"}, {"k2", "h2", "h3"}, {"k3", "h3", "y"}};
    for (int k = 0; k < 4; k++) {
        fn(c, names[k][0]);
        mil_var *x = in4(c, names[k][1], CH, 1, 32);
        done1(c, conv(c, names[k][2], x, CH, CH));
    }
}

/* The same four stages fused into one function. */
static void b_fused(pctx *c) {
    fn(c, "fused");
    mil_var *x = in4(c, "x", CH, 1, 32);
    mil_var *h1 = conv(c, "h1", x, CH, CH), *h2 = conv(c, "h2", h1, CH, CH);
    mil_var *h3 = conv(c, "h3", h2, CH, CH);
    done1(c, conv(c, "y", h3, CH, CH));
}

static void b_gemm(pctx *c) {
    int64_t C = c->small ? 256 : 1024, S = c->small ? 64 : 512;
    fn(c, "main");
    done1(c, conv(c, "y", in4(c, "x", C, 1, S), C, C));
    c->flops = 2.0 * (double)C * (double)C * (double)S;
    c->wbytes = 2.0 * (double)C * (double)C;
}

static void b_matvec(pctx *c) {
    int64_t K = c->small ? 512 : 4096;
    fn(c, "main");
    done1(c, conv(c, "y", in4(c, "x", K, 1, 32), K, K));
    c->flops = 2.0 * (double)K * (double)K * 32.0;
    c->wbytes = 2.0 * (double)K * (double)K;
}

/* A 1x1 conv whose weights are 4-bit indices into a 16-entry fp16 table
 * (constexpr_lut_to_dense, iOS18 form: lut [1, 1, 1, 1, 16, 1]); Apple's
 * route to smaller weights on the ANE (palettization). */
static void b_palettized(pctx *c) {
    enum { C = 64 };
    fn(c, "main");
    mil_var *x = in4(c, "x", C, 1, 32);
    uint8_t idx[C * C];
    uint16_t lut[16];
    for (int i = 0; i < C * C; i++)
        idx[i] = (uint8_t)((unsigned)(rnd(&c->seed) * 8.0f + 8.0f) & 15u);
    for (int k = 0; k < 16; k++)
        lut[k] = nc_f32_to_fp16(((float)k - 7.5f) / 64.0f);
    int64_t idims[4] = {C, C, 1, 1}, ldims[6] = {1, 1, 1, 1, 16, 1};
    mil_var *iv = mil_build_const_tensor(c->b, "w_idx", MIL_DT_UINT4, 4, idims, idx);
    mil_var *lv = mil_build_const_tensor(c->b, "w_lut", MIL_DT_FP16, 6, ldims, lut);
    mil_build_arg args[2] = {{"indices", iv, NULL, NULL, 0}, {"lut", lv, NULL, NULL, 0}};
    mil_var *w = iv && lv ? mil_build_op(c->b, "constexpr_lut_to_dense", "w", args, 2) : NULL;
    done1(c, x && w ? mil_build_conv(c->b, "y", x, w, NULL, 1) : NULL);
}

/* The form `nectar compile --palettize 6|8` writes (docs/palettization.md):
 * uint6 or uint8 indices into one 2^bits-entry fp16 table per 16 output
 * channels, lut [4, 1, 1, 1, 2^bits, 1]. The tables here are fixed ramps,
 * not k-means centres: the device judges the construct, not the values. */
static void palettized_grouped(pctx *c, int bits) {
    enum { C = 64, G = C / 16 };
    const int np = 1 << bits;
    fn(c, "main");
    mil_var *x = in4(c, "x", C, 1, 32);
    uint8_t idx[C * C];
    uint16_t lut[G * 256];
    for (int i = 0; i < C * C; i++)
        idx[i] = (uint8_t)((unsigned)((rnd(&c->seed) + 1.0f) * (float)np / 2.0f) & (unsigned)(np - 1));
    for (int g = 0; g < G; g++)
        for (int k = 0; k < np; k++)
            lut[g * np + k] =
                nc_f32_to_fp16(((float)k - (float)(np - 1) / 2.0f) / (4.0f * (float)np * (float)(g + 1)));
    int64_t idims[4] = {C, C, 1, 1}, ldims[6] = {G, 1, 1, 1, np, 1};
    mil_var *iv = mil_build_const_tensor(c->b, "w_indices", lower_palette_index_dtype(bits), 4,
                                         idims, idx);
    mil_var *lv = mil_build_const_tensor(c->b, "w_lut", MIL_DT_FP16, 6, ldims, lut);
    mil_build_arg args[2] = {{"indices", iv, NULL, NULL, 0}, {"lut", lv, NULL, NULL, 0}};
    mil_var *wv = iv && lv ? mil_build_op(c->b, "constexpr_lut_to_dense", "w", args, 2) : NULL;
    done1(c, x && wv ? mil_build_conv(c->b, "y", x, wv, NULL, 1) : NULL);
}

static void b_palettized6(pctx *c) {
    palettized_grouped(c, 6);
}

static void b_palettized8(pctx *c) {
    palettized_grouped(c, 8);
}

#define MIXED                                                                                      \
    { 0, 0 }
#define UNIFORM                                                                                    \
    { 1, 0 }

static const probe_case cases[] = {
    {"gather_uint16", "gather with constant uint16 indices", b_gather_u16, PM_SYNC, MIXED},
    {"gather_int16", "gather with constant int16 indices", b_gather_i16, PM_SYNC, MIXED},
    {"gather_int32", "gather with constant int32 indices (the article: refused)", b_gather_i32,
     PM_SYNC, MIXED},
    {"surfaces_mixed", "two inputs of different allocation sizes in one request", b_two_sizes,
     PM_SYNC, MIXED},
    {"surfaces_uniform", "the same with every surface at one allocation size", b_two_sizes, PM_SYNC,
     UNIFORM},
    {"surface_small", "2 KB surfaces (below the reported 48 KB minimum)", b_small, PM_SYNC, MIXED},
    {"surface_min48k",
     "the same with every surface at least 48 KB",
     b_small,
     PM_SYNC,
     {0, ANE_REPORTED_MIN_SURFACE_BYTES}},
    {"width16", "last axis 16 (half a 64-byte row)", b_width16, PM_SYNC, MIXED},
    {"width32", "last axis 32", b_width32, PM_SYNC, MIXED},
    {"width64", "last axis 64", b_width64, PM_SYNC, MIXED},
    {"softmax96", "softmax over 96 (not a power of two)", b_softmax96, PM_SYNC, MIXED},
    {"softmax64", "softmax over 64", b_softmax64, PM_SYNC, MIXED},
    {"silu", "the silu op", b_silu, PM_SYNC, MIXED},
    {"sigmoid_mul", "silu written as sigmoid(x) * x", b_sigmoid_mul, PM_SYNC, MIXED},
    {"elementwise_only", "gather + greater + select with no conv (kv_sS alone)", b_elementwise,
     PM_SYNC, MIXED},
    {"multi_function", "one program, two functions, each its own procedure", b_multi, PM_SYNC,
     MIXED},
    {"chain4_sync", "four kernels in one program, evaluated one by one", b_chain4, PM_SYNC, MIXED},
    {"chain4_async", "the same submitted with completion handlers, 2 in flight", b_chain4, PM_ASYNC,
     MIXED},
    {"chain4_events", "the same chained on a shared event", b_chain4, PM_EVENTS, MIXED},
    {"fused4", "the four stages fused into one kernel", b_fused, PM_SYNC, MIXED},
    {"palettized", "1x1 conv with 4-bit palettized weights (constexpr_lut_to_dense)", b_palettized,
     PM_SYNC, MIXED},
    {"palettized6_grouped",
     "1x1 conv with the compile's 6-bit weights: a 64-entry table per 16 output channels",
     b_palettized6, PM_SYNC, MIXED},
    {"palettized8_grouped",
     "1x1 conv with the compile's 8-bit weights: a 256-entry table per 16 output channels",
     b_palettized8, PM_SYNC, MIXED},
    {"gemm_tops", "1x1-conv GEMM: tera-ops per second", b_gemm, PM_SYNC, MIXED},
    {"matvec_bandwidth", "large-weight matvec: weight bytes per second", b_matvec, PM_SYNC, MIXED},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

int ane_probe_case_count(void) {
    return N_CASES;
}

/* --- running one case ------------------------------------------------------ */

typedef struct pbuf {
    char name[ANE_NAME_MAX];
    int64_t n;    /* logical values */
    float *host;  /* device values (inputs written, outputs read) */
    float *ref;   /* interpreter fp32 values */
    ane_layout l; /* from the binding */
    ane_surface *s;
    int written; /* an output of some function */
} pbuf;

typedef struct prun {
    const ane_device *dev;
    const probe_case *pc;
    ane_probe_result *res;
    mil_program *prog;
    lower_program_info *info;
    ane_model *model;
    ane_attrs attrs;
    int has_attrs;
    ane_binding *binds;
    pbuf *bufs;
    int n_bufs;
    ane_request **reqs;
    ane_event *ev;
    unsigned long long ev_value;
    ane_wait wait;
} prun;

static int buf_index(prun *p, const char *name) {
    for (int i = 0; i < p->n_bufs; i++)
        if (strcmp(p->bufs[i].name, name) == 0) return i;
    return -1;
}

/* Buffers by name over every function's I/O; inputs of the first use get
 * deterministic values; the fp32 interpreter gives the reference. */
static nc_status prepare_buffers(prun *p, unsigned seed, nc_error *err) {
    int cap = 0;
    for (int f = 0; f < p->info->n_fns; f++)
        cap += p->info->fns[f].n_in + p->info->fns[f].n_out;
    p->bufs = calloc((size_t)cap + 1, sizeof *p->bufs);
    if (!p->bufs) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int f = 0; f < p->info->n_fns; f++) {
        const lower_fn_info *fi = &p->info->fns[f];
        for (int j = 0; j < fi->n_in + fi->n_out; j++) {
            const lower_io *io = j < fi->n_in ? &fi->in[j] : &fi->out[j - fi->n_in];
            int i = buf_index(p, io->name);
            if (i < 0) {
                i = p->n_bufs++;
                pbuf *b = &p->bufs[i];
                snprintf(b->name, sizeof b->name, "%s", io->name);
                b->n = 1;
                for (int k = 0; k < io->rank; k++)
                    b->n *= io->shape[k];
                b->host = calloc((size_t)b->n, sizeof(float));
                b->ref = calloc((size_t)b->n, sizeof(float));
                if (!b->host || !b->ref) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
                for (int64_t k = 0; j < fi->n_in && k < b->n; k++)
                    b->host[k] = b->ref[k] = rnd(&seed);
            }
            if (j >= fi->n_in) p->bufs[i].written = 1;
        }
    }
    /* the reference: each function in order, fp32 */
    for (int f = 0; f < p->info->n_fns; f++) {
        const lower_fn_info *fi = &p->info->fns[f];
        mil_interp *it = NULL;
        NC_TRY(mil_interp_new(p->prog, fi->name, MIL_INTERP_FP32, &it, err));
        nc_status st = NC_OK;
        for (int j = 0; j < fi->n_in && !st; j++)
            st = mil_interp_set_input(it, fi->in[j].name, MIL_DT_FP32, fi->in[j].rank,
                                      fi->in[j].shape, p->bufs[buf_index(p, fi->in[j].name)].ref,
                                      err);
        if (!st) st = mil_interp_run(it, err);
        for (int j = 0; j < fi->n_out && !st; j++) {
            pbuf *b = &p->bufs[buf_index(p, fi->out[j].name)];
            st = mil_interp_copy_out(it, fi->out[j].name, MIL_DT_FP32, b->ref, (size_t)b->n, err);
        }
        mil_interp_free(it);
        NC_TRY(st);
    }
    return NC_OK;
}

/* A one-step-per-function plan of the case, for ane_plan_surface_sizes. */
static nc_status surface_sizes(prun *p, ane_surface_sizes *sz, nc_error *err) {
    ane_plan pl = {0};
    pl.bufs = calloc((size_t)p->n_bufs + 1, sizeof *pl.bufs);
    pl.steps = calloc((size_t)p->info->n_fns + 1, sizeof *pl.steps);
    nc_status st = pl.bufs && pl.steps ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int f = 0; !st && f < p->info->n_fns; f++) {
        const lower_fn_info *fi = &p->info->fns[f];
        ane_plan_step *s = &pl.steps[pl.n_steps++];
        s->kind = ANE_STEP_KERNEL;
        snprintf(s->fn, sizeof s->fn, "%s", fi->name);
        s->n_in = fi->n_in;
        s->n_out = fi->n_out;
        for (int j = 0; j < fi->n_in + fi->n_out; j++) {
            const lower_io *io = j < fi->n_in ? &fi->in[j] : &fi->out[j - fi->n_in];
            ane_plan_io *pio = j < fi->n_in ? &s->in[j] : &s->out[j - fi->n_in];
            snprintf(pio->name, sizeof pio->name, "%s", io->name);
            pio->buf = buf_index(p, io->name);
            ane_plan_buf *b = &pl.bufs[pio->buf];
            snprintf(b->name, sizeof b->name, "%s", io->name);
            b->rank = io->rank;
            memcpy(b->shape, io->shape, sizeof b->shape);
            snprintf(b->dtype, sizeof b->dtype, "%s", io->dtype);
        }
    }
    pl.n_bufs = p->n_bufs;
    const ane_plan *one = &pl;
    if (!st) st = ane_plan_surface_sizes(&one, 1, &p->pc->pol, sz, err);
    free(pl.bufs);
    free(pl.steps);
    return st;
}

static nc_status fill(prun *p, pbuf *b, int write, nc_error *err) {
    const ane_device_ops *ops = p->dev->ops;
    void *base = ops->surface_lock(b->s, !write, err);
    if (!base) return err ? err->code : NC_ERR_IO;
    if (write)
        ane_pad_f32(&b->l, b->host, base);
    else
        ane_unpad_f32(&b->l, base, b->host);
    ops->surface_unlock(b->s, !write);
    return NC_OK;
}

/* One pass over the case's functions in its mode. */
static nc_status run_once(prun *p, nc_error *err) {
    const ane_device_ops *ops = p->dev->ops;
    int n = p->info->n_fns, max = p->dev->max_in_flight > 0 ? p->dev->max_in_flight : 2;
    if (p->pc->mode == PM_SYNC) {
        for (int f = 0; f < n; f++)
            if (ops->evaluate(p->reqs[f], err))
                return nc_fail_prefix(err, "%s", p->info->fns[f].name);
        return NC_OK;
    }
    ane_wait_init(&p->wait);
    nc_status st = NC_OK;
    for (int f = 0; f < n && !st; f++) {
        st = ane_wait_below(&p->wait, max, 60, err);
        if (st) break;
        ane_wait_add(&p->wait, 1);
        nc_status s2 = p->pc->mode == PM_EVENTS
                           ? ops->submit_event(p->reqs[f], p->ev, p->ev_value, p->ev_value + 1,
                                               ane_wait_done, &p->wait, err)
                           : ops->submit(p->reqs[f], ane_wait_done, &p->wait, err);
        if (s2) {
            ane_wait_done(&p->wait, NC_OK, NULL);
            st = nc_fail_prefix(err, "%s", p->info->fns[f].name);
        } else if (p->pc->mode == PM_EVENTS) {
            p->ev_value++;
        }
    }
    nc_error e2 = {0};
    nc_status st2 = ane_wait_all(&p->wait, 60, &e2);
    if (!st && st2) {
        if (err) *err = e2;
        st = st2;
    }
    return st;
}

static void set_status(ane_probe_result *r, const char *status, const nc_error *e) {
    snprintf(r->status, sizeof r->status, "%s", status);
    if (e) snprintf(r->error, sizeof r->error, "%s", e->msg);
}

/* Opens, binds, allocates, runs, compares and times; every failure is
 * written into the result (the probe goes on with the next case). */
static void run_case(prun *p, int repeats) {
    const ane_device_ops *ops = p->dev->ops;
    ane_probe_result *r = p->res;
    nc_error err = {0};
    const lower_program_info *pi = p->info;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", p->prog->model_dir ? p->prog->model_dir : ".");
    double t0 = nc_now_s();
    if (ops->model_open(p->dev->impl, dir, &p->model, &err)) {
        p->model = NULL;
        return set_status(r, "compile failed", &err);
    }
    r->load_ms = (nc_now_s() - t0) * 1e3;
    const char *json;
    size_t len;
    if (ops->model_attrs(p->model, &json, &len, &err) ||
        ane_attrs_parse(json, len, "modelAttributes", &p->attrs, &err))
        return set_status(r, "attrs failed", &err);
    p->has_attrs = 1;
    p->binds = calloc((size_t)pi->n_fns + 1, sizeof *p->binds);
    p->reqs = calloc((size_t)pi->n_fns + 1, sizeof *p->reqs);
    if (!p->binds || !p->reqs) return set_status(r, "out of memory", NULL);
    for (int f = 0; f < pi->n_fns; f++)
        if (ane_bind_function(&p->attrs, &pi->fns[f], &p->binds[f], &err))
            return set_status(r, "bind failed", &err);
    ane_surface_sizes sz;
    if (surface_sizes(p, &sz, &err)) return set_status(r, "sizes failed", &err);
    nc_status st = NC_OK;
    for (int f = 0; f < pi->n_fns && !st; f++) {
        const ane_binding *b = &p->binds[f];
        ane_surface *in[LOWER_MAX_IO], *out[LOWER_MAX_IO];
        int ii[LOWER_MAX_IO], oi[LOWER_MAX_IO];
        for (int j = 0; j < b->n_in + b->n_out && !st; j++) {
            const ane_bound_io *io = j < b->n_in ? &b->in[j] : &b->out[j - b->n_in];
            pbuf *pb = &p->bufs[buf_index(p, io->name)];
            if (!pb->s) {
                pb->l = io->layout;
                st = ops->surface_new(p->dev->impl, ane_surface_size(&sz, pb->name, pb->l.bytes),
                                      &pb->s, &err);
                if (!st && !pb->written) st = fill(p, pb, 1, &err);
            }
            if (j < b->n_in) {
                in[j] = pb->s;
                ii[j] = io->symbol;
            } else {
                out[j - b->n_in] = pb->s;
                oi[j - b->n_in] = io->symbol;
            }
        }
        if (!st)
            st = ops->request_new(p->model, b->proc_id, b->n_in, in, ii, b->n_out, out, oi,
                                  &p->reqs[f], &err);
    }
    ane_surface_sizes_free(&sz);
    if (st) return set_status(r, "setup failed", &err);
    if (p->pc->mode == PM_EVENTS) {
        if (!ops->event_new) return set_status(r, "no events", NULL);
        if (ops->event_new(p->dev->impl, &p->ev, &err)) return set_status(r, "no events", &err);
    }
    if (run_once(p, &err)) return set_status(r, "eval failed", &err);
    for (int i = 0; i < p->n_bufs; i++) {
        pbuf *b = &p->bufs[i];
        if (!b->written) continue;
        if (fill(p, b, 0, &err)) return set_status(r, "read failed", &err);
        for (int64_t k = 0; k < b->n; k++) {
            double d = fabs((double)b->host[k] - b->ref[k]), a = fabs((double)b->ref[k]);
            if (!(d <= r->max_err)) r->max_err = d; /* NaN counts as the worst */
            if (a > r->ref_max) r->ref_max = a;
        }
    }
    t0 = nc_now_s();
    for (int k = 0; k < repeats; k++)
        if (run_once(p, &err)) return set_status(r, "eval failed", &err);
    r->eval_us = (nc_now_s() - t0) * 1e6 / ((double)repeats * pi->n_fns);
    /* fp16 compute against fp32: a few per cent of the largest value */
    int ok = r->max_err <= 0.02 * (r->ref_max > 1 ? r->ref_max : 1);
    set_status(r, ok ? "ok" : "wrong", NULL);
    if (!ok)
        snprintf(r->error, sizeof r->error, "max |device - interpreter| %.4g, largest |value| %.4g",
                 r->max_err, r->ref_max);
}

static void prun_free(prun *p) {
    const ane_device_ops *ops = p->dev->ops;
    for (int f = 0; p->reqs && p->info && f < p->info->n_fns; f++)
        if (p->reqs[f]) ops->request_free(p->reqs[f]);
    free(p->reqs);
    if (p->ev) ops->event_free(p->ev);
    for (int i = 0; i < p->n_bufs; i++) {
        if (p->bufs[i].s) ops->surface_free(p->bufs[i].s);
        free(p->bufs[i].host);
        free(p->bufs[i].ref);
    }
    free(p->bufs);
    free(p->binds);
    if (p->has_attrs) ane_attrs_free(&p->attrs);
    if (p->model) ops->model_close(p->model);
    free(p->info);
    mil_program_free(p->prog);
}

static const char *policy_name(const ane_surface_policy *p, char *buf, size_t cap) {
    if (p->min_bytes)
        snprintf(buf, cap, "%s, min %zu", p->uniform ? "uniform" : "mixed", p->min_bytes);
    else
        snprintf(buf, cap, "%s", p->uniform ? "uniform" : "mixed");
    return buf;
}

static const char *const mode_names[3] = {"sync", "async", "async+events"};

nc_status ane_probe_run(const ane_device *dev, const ane_probe_options *o, ane_probe_result **out,
                        int *n, nc_error *err) {
    NC_TRY(ane_make_dirs(o->work_dir, err));
    ane_probe_result *res = calloc(N_CASES, sizeof *res);
    if (!res) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    int repeats = o->repeats > 0 ? o->repeats : 5;
    for (int k = 0; k < N_CASES; k++) {
        const probe_case *pc = &cases[k];
        ane_probe_result *r = &res[k];
        snprintf(r->id, sizeof r->id, "%s", pc->id);
        snprintf(r->question, sizeof r->question, "%s", pc->question);
        snprintf(r->mode, sizeof r->mode, "%s", mode_names[pc->mode]);
        policy_name(&pc->pol, r->surfaces, sizeof r->surfaces);
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", o->work_dir, pc->id);
        prun p = {0};
        p.dev = dev;
        p.pc = pc;
        p.res = r;
        pctx c = {0};
        c.small = o->small;
        c.seed = 12345u + (unsigned)k;
        nc_error e = {0};
        nc_status st = ane_make_dirs(dir, &e);
        if (!st) st = mil_builder_new(&c.b, dir, &e);
        if (!st) {
            pc->build(&c);
            st = mil_builder_finish(c.b, &p.prog, &e);
        }
        char path[4300];
        snprintf(path, sizeof path, "%s/model.mil", dir);
        if (!st) st = mil_print_file(p.prog, path, &e);
        if (!st) st = mil_program_set_model_dir(p.prog, dir, &e);
        p.info = st ? NULL : calloc(1, sizeof *p.info);
        if (!st && !p.info) st = nc_fail(&e, NC_ERR_NOMEM, "out of memory");
        if (!st) st = lower_describe_program(p.prog, "model.mil", 0, p.info, &e);
        if (st) {
            set_status(r, "build failed", &e);
            prun_free(&p);
            continue;
        }
        mil_check_options co = {1, NULL, NULL};
        mil_diagnostics d = {0};
        if (mil_check_program(p.prog, &co, &d, &e) == NC_OK && d.n_errors == 0) {
            snprintf(r->checker, sizeof r->checker, "accepted");
        } else {
            const mil_diag *first = NULL;
            for (int i = 0; i < d.n && !first; i++)
                if (d.items[i].severity == MIL_SEV_ERROR) first = &d.items[i];
            snprintf(r->checker, sizeof r->checker, "rejected [%s]: %s",
                     first ? first->rule : "check", first ? first->msg : e.msg);
        }
        int rejected = d.n_errors > 0;
        mil_diagnostics_free(&d);
        if (rejected && o->is_fake) {
            set_status(r, "rejected", NULL); /* the interpreter would run anything */
        } else {
            st = prepare_buffers(&p, 777u + (unsigned)k, &e);
            if (st)
                set_status(r, "reference failed", &e);
            else
                run_case(&p, repeats);
            if (r->eval_us > 0 && c.flops > 0) {
                r->tops = c.flops / (r->eval_us * 1e-6) / 1e12;
                r->gbps = c.wbytes / (r->eval_us * 1e-6) / 1e9;
            }
        }
        prun_free(&p);
    }
    *out = res;
    *n = N_CASES;
    return NC_OK;
}

void ane_probe_choose(const mil_ane_profile *p, ane_surface_policy *pol, ane_run_mode *mode) {
    ane_surface_policy d = ANE_SURFACE_POLICY_DEFAULT;
    *pol = d;
    if (mil_ane_profile_verdict(p, "surfaces_mixed") == MIL_PROBE_OK) pol->uniform = 0;
    if (mil_ane_profile_verdict(p, "surface_small") == MIL_PROBE_OK) pol->min_bytes = 0;
    static const char *const ids[3] = {"chain4_sync", "chain4_async", "chain4_events"};
    static const ane_run_mode modes[3] = {ANE_RUN_SYNC, ANE_RUN_ASYNC, ANE_RUN_ASYNC_EVENTS};
    double best = 0;
    *mode = ANE_RUN_SYNC;
    for (int i = 0; i < 3; i++) {
        double us = mil_ane_profile_eval_us(p, ids[i]);
        if (mil_ane_profile_verdict(p, ids[i]) != MIL_PROBE_OK || us <= 0) continue;
        if (best == 0 || us < best) {
            best = us;
            *mode = modes[i];
        }
    }
}

void ane_probe_print(const ane_probe_result *r, int n, FILE *f) {
    fprintf(f, "%-18s %-13s %-22s %-14s %9s %10s %9s  %s\n", "case", "mode", "surfaces", "status",
            "load ms", "us/request", "max err", "checker / error");
    for (int i = 0; i < n; i++) {
        const ane_probe_result *x = &r[i];
        char extra[64] = "";
        if (x->tops > 0) snprintf(extra, sizeof extra, " (%.3g TOPS, %.3g GB/s)", x->tops, x->gbps);
        fprintf(f, "%-18s %-13s %-22s %-14s %9.2f %10.1f %9.2g  %s%s%s%s\n", x->id, x->mode,
                x->surfaces, x->status, x->load_ms, x->eval_us, x->max_err,
                strncmp(x->checker, "rejected", 8) == 0 ? x->checker : "", x->error[0] ? " " : "",
                x->error, extra);
    }
}
