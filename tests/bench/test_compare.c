/* The A/B harness: this binary doubles as an external candidate (`--burn N`
 * burns N rounds of nc_spin and exits; `--serve N` answers one line per
 * request after N rounds). Shown here, on a virtual clock (nc_compare_clock)
 * with simulated candidates of known speed: A = B gives an S interval that
 * contains 1; a candidate taking twice as long is detected (interval above
 * 1.3, containing 2); equal offered load counts deadline misses. On the real
 * clock: one process per decision and a persistent one complete every
 * decision; power from a replayed
 * powermetrics stream flows into R, energy and idle-subtracted figures; the
 * outputs are written; bad candidates fail with a message. No assertion
 * depends on absolute timings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "../test.h"
#include "base/json.h"
#include "base/mmap.h"
#include "bench/compare.h"
#include "bench/report.h"
#include "bench/sha256.h"

static const char *self_path;

/* CPU work per decision: ~12 ms on an idle core of this class of machine,
 * well above the few ms of starting a process. */
#define WORK 6000000ull

static nc_compare_opts quick_opts(void) {
    nc_compare_opts o;
    nc_compare_opts_default(&o);
    o.n_blocks = 5;
    o.per_block = 4;
    o.n_warmup = 1;
    o.n_resamples = 2000;
    return o;
}

static nc_status compare(const char *spec_a, const char *spec_b, const nc_compare_opts *o,
                         nc_power_sampler *power, nc_compare_result *r, nc_error *err) {
    nc_candidate *a = NULL, *b = NULL;
    nc_bench_workload w;
    NC_TRY(nc_workload_load("none", NULL, &w, err));
    nc_status st = nc_candidate_open(spec_a, 30, &a, err);
    if (st == NC_OK) st = nc_candidate_open(spec_b, 30, &b, err);
    if (st == NC_OK) st = nc_compare_run(a, b, &w, power, o, r, err);
    nc_candidate_close(a);
    nc_candidate_close(b);
    nc_workload_free(&w);
    return st;
}

/* A virtual clock, and candidates that take a set time on it (with a
 * seeded +-jitter): the statistics are then checked against known true
 * ratios, with no assertion on how fast this machine runs anything. */
typedef struct virtual_clock {
    double t;
    uint64_t rng;
} virtual_clock;

static double virtual_now(void *ctx) {
    return ((virtual_clock *)ctx)->t;
}

static void virtual_sleep_until(void *ctx, double t_abs) {
    virtual_clock *vc = ctx;
    if (t_abs > vc->t) vc->t = t_abs;
}

typedef struct sim_candidate {
    virtual_clock *clock;
    double secs, jitter;
} sim_candidate;

static nc_status sim_load(nc_candidate *c, nc_error *err) {
    (void)c, (void)err;
    return NC_OK;
}

static nc_status sim_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item, (void)err;
    sim_candidate *s = c->impl;
    virtual_clock *vc = s->clock;
    vc->rng = vc->rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(vc->rng >> 11) / 9007199254740992.0; /* [0, 1) */
    vc->t += s->secs * (1 + s->jitter * (2 * u - 1));
    return NC_OK;
}

static void sim_unload(nc_candidate *c) {
    (void)c;
}

static const nc_candidate_ops sim_ops = {sim_load, NULL, sim_run, sim_unload};

static void sim_init(nc_candidate *c, sim_candidate *s, virtual_clock *vc, double secs) {
    memset(c, 0, sizeof *c);
    s->clock = vc;
    s->secs = secs;
    s->jitter = 0.1;
    c->ops = &sim_ops;
    snprintf(c->kind, sizeof c->kind, "sim");
    snprintf(c->spec, sizeof c->spec, "sim:%g", secs);
    c->impl = s;
}

/* Runs A (a_secs per decision) against B on the virtual clock. */
static void compare_simulated(double a_secs, double b_secs, nc_compare_opts *o,
                              nc_compare_result *r) {
    virtual_clock vc = {1000.0, 42};
    nc_compare_clock clock = {virtual_now, virtual_sleep_until, &vc};
    o->clock = &clock;
    nc_candidate a, b;
    sim_candidate sa, sb;
    sim_init(&a, &sa, &vc, a_secs);
    sim_init(&b, &sb, &vc, b_secs);
    nc_bench_workload w;
    nc_error err;
    CHECK_OK(nc_workload_load("none", NULL, &w, &err), &err);
    CHECK_OK(nc_compare_run(&a, &b, &w, NULL, o, r, &err), &err);
    nc_workload_free(&w);
    o->clock = NULL;
}

static void test_self_comparison_interval_contains_one(void) {
    nc_compare_opts o = quick_opts();
    o.n_blocks = 8;
    o.per_block = 3;
    nc_compare_result r;
    compare_simulated(0.012, 0.012, &o, &r);
    printf("  A = B: S = %.3f [%.3f, %.3f], A %.2f ms, B %.2f ms\n", r.S.estimate, r.S.lower,
           r.S.upper, r.cand[0].latency.mean * 1e3, r.cand[1].latency.mean * 1e3);
    CHECK(r.cand[0].n_completed == 24 && r.cand[1].n_completed == 24);
    CHECK(r.n_blocks == 16 && r.blocks[0].who == NC_WHO_A && r.blocks[1].who == NC_WHO_B);
    CHECK(r.S.lower <= 1.0 && r.S.upper >= 1.0);
    CHECK(nc_claim_factor(&r.S) == 0);
    nc_compare_result_free(&r);
}

static void test_double_time_is_detected(void) {
    nc_compare_opts o = quick_opts();
    nc_compare_result r;
    compare_simulated(0.040, 0.020, &o, &r);
    printf("  2x: S = %.3f [%.3f, %.3f]\n", r.S.estimate, r.S.lower, r.S.upper);
    CHECKF(r.S.lower > 1.3 && r.S.lower <= 2.0 && r.S.upper >= 2.0, "S [%.3f, %.3f]", r.S.lower,
           r.S.upper);
    CHECK(fabs(r.S.estimate - 2.0) < 0.1);
    nc_compare_result_free(&r);
}

static void test_equal_offered_load_counts_misses(void) {
    nc_compare_opts o = quick_opts();
    o.per_block = 3;
    o.rate_hz = 50;       /* a request every 20 ms */
    o.deadline_s = 0.015; /* B needs 24 ms, longer than that, for every request */
    nc_compare_result r;
    compare_simulated(0.001, 0.024, &o, &r);
    int missed_a = r.cand[0].n_missed, missed_b = r.cand[1].n_missed;
    int done_b = r.cand[1].n_completed;
    double a_block = r.blocks[0].t1_s - r.blocks[0].t0_s;
    /* B's second request queues behind its first: latency counts the wait */
    double b_second = r.dec[0].latency_s;
    for (size_t i = 0; i < r.n_dec; i++)
        if (r.dec[i].who == NC_WHO_B && r.dec[i].block == 0 && r.dec[i].index == 1)
            b_second = r.dec[i].latency_s;
    int is_rate_mode = r.is_rate_mode;
    nc_compare_result_free(&r);
    CHECK(is_rate_mode);
    CHECKF(missed_b == 15 && done_b == 15, "B missed %d of %d", missed_b, done_b);
    CHECKF(missed_a == 0, "A missed %d", missed_a);
    CHECKF(b_second > 0.024, "B's second latency %.4f s", b_second);
    /* an early finisher still spans the offered interval: 3 requests at 50/s */
    CHECKF(fabs(a_block - 3.0 / 50) < 1e-9, "A block %.4f s", a_block);
}

/* Real processes on the real clock: one per decision and a persistent one
 * both complete every decision and give a finite ratio (its value depends on
 * the machine's load, so it is printed, not asserted). */
static void test_real_processes_are_measured(void) {
    nc_compare_opts o = quick_opts();
    nc_compare_result r;
    nc_error err;
    CHECK_OK(compare("cmd:sleep 0.02", "cmd:sleep 0.01", &o, NULL, &r, &err), &err);
    printf("  cmd: S = %.3f [%.3f, %.3f]\n", r.S.estimate, r.S.lower, r.S.upper);
    CHECK(r.cand[0].n_completed == 20 && r.cand[1].n_completed == 20);
    CHECK(isfinite(r.S.estimate) && r.S.estimate > 0);
    nc_compare_result_free(&r);
    CHECK_OK(compare("pipe:echo ready; while read l; do sleep 0.02; echo ok; done",
                     "pipe:echo ready; while read l; do sleep 0.01; echo ok; done", &o, NULL, &r,
                     &err),
             &err);
    printf("  pipe: S = %.3f [%.3f, %.3f]\n", r.S.estimate, r.S.lower, r.S.upper);
    CHECK(r.cand[0].n_completed == 20 && r.cand[1].n_completed == 20);
    CHECK(isfinite(r.S.estimate) && r.S.estimate > 0);
    nc_compare_result_free(&r);
}

static void test_power_flows_into_ratios(void) {
    /* a constant 2 W SoC reported every 50 ms in powermetrics' plist form */
    const char *spec =
        "powermetrics-cmd:while :; do printf '<plist><dict><key>elapsed_ns</key><integer>50000000"
        "</integer><key>combined_power</key><real>2000</real></dict></plist>\\0'; sleep 0.05; done";
    nc_power_sampler *p;
    nc_error err;
    CHECK_OK(nc_power_open(spec, NULL, 0.05, &p, &err), &err);
    nc_compare_opts o = quick_opts();
    o.idle_s = 0.1;
    o.per_block = 2;
    nc_compare_result r;
    /* candidates that leave the CPU to the replayed sampler: its samples are
     * timed by their arrival */
    nc_status st = compare("cmd:sleep 0.02", "cmd:sleep 0.01", &o, p, &r, &err);
    nc_power_close(p);
    CHECK_OK(st, &err);
    int n_idle = 0;
    for (size_t i = 0; i < r.n_blocks; i++)
        n_idle += r.blocks[i].who == NC_WHO_IDLE;
    printf("  P_A %.3f W, P_B %.3f W, idle %.3f W, R %.3f [%.3f, %.3f], E gain %.3f\n",
           r.cand[0].power_w, r.cand[1].power_w, r.idle_power_w, r.R.estimate, r.R.lower, r.R.upper,
           r.energy_gain.estimate);
    /* loose bounds: a replayed stream is timed by arrival, which a loaded
     * machine delays (exact energies are shown by the RAPL test below) */
    int ok = r.has_power && r.has_idle && n_idle == 6 && r.cand[0].power_w > 0.5 &&
             r.cand[0].power_w < 3.0 && r.R.estimate > 0.5 && r.R.estimate < 2.0 &&
             isfinite(r.energy_gain.estimate) &&
             isfinite(r.cand[0].net_energy_per_decision_j.estimate) &&
             strstr(r.power_domain, "ANE") != NULL;
    /* identity of the design notes: energy gain = S x R on the point estimates */
    double identity = fabs(r.energy_gain.estimate - r.S.estimate * r.R.estimate);
    double scale = 1e-9 * fabs(r.energy_gain.estimate) + 1e-12;
    nc_compare_result_free(&r);
    CHECK(ok);
    CHECK(identity < scale);
}

/* Candidates that each add a known number of microjoules to a RAPL counter
 * (a copy of the fixture powercap tree, started just below its wrap): the
 * harness must find exactly that energy per decision, across the wrap. */
#define RAPL_MAX "262143328850"
static void rapl_spec(char *buf, size_t cap, const char *root, int add_uj) {
    snprintf(buf, cap,
             "cmd:f=%s/intel-rapl:0/energy_uj; v=$(cat $f); v=$((v + %d)); "
             "[ $v -gt " RAPL_MAX " ] && v=$((v - " RAPL_MAX
             " - 1)); echo $v >$f.tmp && mv $f.tmp $f",
             root, add_uj);
}

static void test_rapl_energy_per_decision_is_exact(void) {
    /* per-process folder: two test runs at once must not share the counter */
    char root[128], cmd[512], counter[256];
    snprintf(root, sizeof root, "build/tmp/test_compare_powercap.%ld", (long)getpid());
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && mkdir -p build/tmp && cp -r tests/fixtures/bench/powercap %s", root,
             root);
    CHECK(system(cmd) == 0);
    snprintf(counter, sizeof counter, "%s/intel-rapl:0/energy_uj", root);
    FILE *f = fopen(counter, "w");
    CHECK(f != NULL);
    /* cold + warm-up add 15000 uJ: the first measured decision wraps it */
    fprintf(f, "%llu\n", 262143328850ull - 16000);
    fclose(f);
    char a[512], b[512];
    rapl_spec(a, sizeof a, root, 5000);
    rapl_spec(b, sizeof b, root, 2500);
    nc_power_sampler *p;
    nc_error err;
    CHECK_OK(nc_power_open("rapl", root, 0.02, &p, &err), &err);
    nc_compare_opts o = quick_opts();
    o.per_block = 3;
    o.idle_s = 0.05;
    o.rate_hz = 100;
    o.deadline_s = 1.0;
    nc_compare_result r;
    nc_status st = compare(a, b, &o, p, &r, &err);
    nc_power_close(p);
    CHECK_OK(st, &err);
    nc_interval ea = r.cand[0].energy_per_decision_j, eb = r.cand[1].energy_per_decision_j;
    nc_interval gain = r.energy_gain, net = r.cand[0].net_energy_per_decision_j;
    double idle_w = r.idle_power_w;
    int n_missing = r.n_blocks_without_energy;
    nc_compare_result_free(&r);
    printf("  E_A %.9f J [%.9f, %.9f], E_B %.9f J, gain %.6f [%.6f, %.6f], idle %.3g W\n",
           ea.estimate, ea.lower, ea.upper, eb.estimate, gain.estimate, gain.lower, gain.upper,
           idle_w);
    CHECK(n_missing == 0);
    CHECK_NEAR(ea.estimate, 0.005, 1e-12);
    CHECK_NEAR(ea.lower, 0.005, 1e-12);
    CHECK_NEAR(ea.upper, 0.005, 1e-12);
    CHECK_NEAR(eb.estimate, 0.0025, 1e-12);
    CHECK_NEAR(gain.lower, 2.0, 1e-9);
    CHECK_NEAR(gain.upper, 2.0, 1e-9);
    /* nothing is added while idle: idle-subtracted energy equals the raw one */
    CHECK_NEAR(idle_w, 0.0, 1e-12);
    CHECK_NEAR(net.estimate, 0.005, 1e-12);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

/* A MIL program from the interpreter's fixtures, run in-process: every
 * decision completes and the program is hashed into the record. */
static void test_mil_program_candidate(void) {
    nc_compare_opts o = quick_opts();
    o.per_block = 3;
    nc_compare_result r;
    nc_error err;
    CHECK_OK(compare("mil:tests/fixtures/mil/ops/softmax_axis1",
                     "mil:tests/fixtures/mil/ops/softmax_axis1/model.mil#main", &o, NULL, &r, &err),
             &err);
    int n_a = r.cand[0].n_completed, n_b = r.cand[1].n_completed;
    nc_compare_result_free(&r);
    CHECK(n_a == 15 && n_b == 15);
    nc_candidate *c;
    CHECK_OK(nc_candidate_open("mil:tests/fixtures/mil/ops/softmax_axis1#nope", 10, &c, &err),
             &err);
    CHECK(c->model_sha256[0] != '\0');
    CHECK(c->ops->load(c, &err) != NC_OK);
    CHECKF(strstr(err.msg, "nope") != NULL, "%s", err.msg);
    nc_candidate_close(c);
}

static int count_lines(const char *path) {
    char *text;
    size_t len;
    if (nc_read_file(path, &text, &len, NULL) != NC_OK) return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    free(text);
    return n;
}

static void test_outputs_are_written(void) {
    /* a per-process folder: two test runs at once must not share one */
    char dir[128], path[192], cmd[256];
    snprintf(dir, sizeof dir, "build/tmp/test_compare_out.%ld", (long)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p build/tmp && rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    nc_compare_opts o = quick_opts();
    o.per_block = 2;
    o.claim = 10;
    nc_candidate *a, *b;
    nc_error err;
    nc_bench_workload w;
    CHECK_OK(nc_workload_load("prompts", "tests/fixtures/bench/prompts.txt", &w, &err), &err);
    CHECK(w.n_items == 3);
    CHECK_OK(nc_candidate_open("spin:1000", 10, &a, &err), &err);
    CHECK_OK(nc_candidate_open("spin:2000", 10, &b, &err), &err);
    CHECK_OK(nc_candidate_set_model(b, "tests/fixtures/bench/powercap", &err), &err);
    nc_compare_result r;
    CHECK_OK(nc_compare_run(a, b, &w, NULL, &o, &r, &err), &err);
    nc_report_input in = {&r, &o, {a, b}, &w};
    char note[256];
    /* without gnuplot on PATH the plot is skipped, with a note, not an error */
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", "/nonexistent", 1);
    nc_status st = nc_report_write(&in, dir, 1, note, sizeof note, &err);
    if (old_path) setenv("PATH", old_path, 1);
    free(old_path);
    nc_compare_result_free(&r);
    nc_candidate_close(a);
    nc_candidate_close(b);
    char hash[65];
    snprintf(hash, sizeof hash, "%s", w.sha256);
    nc_workload_free(&w);
    CHECK_OK(st, &err);
    CHECKF(strstr(note, "gnuplot not found") != NULL, "%s", note);
    CHECK(count_lines((snprintf(path, sizeof path, "%s/samples.csv", dir), path)) == 1 + 2 * 5 * 2);
    CHECK(count_lines((snprintf(path, sizeof path, "%s/blocks.csv", dir), path)) == 1 + 2 * 5);
    json_t *j;
    CHECK_OK(
        nc_json_load_file((snprintf(path, sizeof path, "%s/summary.json", dir), path), &j, &err),
        &err);
    json_t *s = json_object_get(json_object_get(j, "ratios"), "S");
    json_t *cb = json_object_get(json_object_get(j, "candidates"), "B");
    int ok = json_is_number(json_object_get(s, "lower")) &&
             json_is_false(json_object_get(s, "claim_target_met")) &&
             !strcmp(json_string_value(json_object_get(json_object_get(j, "workload"), "sha256")),
                     hash) &&
             json_string_value(json_object_get(cb, "model_sha256")) &&
             json_is_null(json_object_get(json_object_get(json_object_get(j, "candidates"), "A"),
                                          "power_w"));
    json_decref(j);
    CHECK(ok);
    struct stat sb;
    CHECK(stat((snprintf(path, sizeof path, "%s/report.md", dir), path), &sb) == 0 &&
          sb.st_size > 200);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void test_hashes_match_python_hashlib(void) {
    char hex[65];
    nc_sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    json_t *j;
    nc_error err;
    CHECK_OK(nc_json_load_file("tests/fixtures/bench/hashes.json", &j, &err), &err);
    const char *path;
    json_t *v;
    int n = 0, bad = 0;
    json_object_foreach(j, path, v) {
        CHECK_OK(nc_sha256_path(path, hex, &err), &err);
        if (strcmp(hex, json_string_value(v)) != 0) {
            printf("  %s: %s vs hashlib %s\n", path, hex, json_string_value(v));
            bad++;
        }
        n++;
    }
    json_decref(j);
    CHECK(n >= 3 && bad == 0);
}

static void test_bad_candidates_fail_with_a_message(void) {
    nc_candidate *c;
    nc_error err;
    CHECK(nc_candidate_open("mil:no/such.bundle", 10, &c, &err) == NC_ERR_IO);
    CHECKF(strstr(err.msg, "no/such.bundle") != NULL, "%s", err.msg);
    CHECK(nc_candidate_open("gpu:x", 10, &c, &err) == NC_ERR_INVALID);
    CHECK(nc_candidate_open("no colon", 10, &c, &err) == NC_ERR_INVALID);
    CHECK(nc_candidate_open("spin:lots", 10, &c, &err) == NC_ERR_INVALID);
    CHECK(nc_candidate_open("cmd:", 10, &c, &err) == NC_ERR_INVALID);
    CHECK(nc_candidate_open("cpu:/nonexistent/model", 10, &c, &err) == NC_ERR_IO);
    nc_compare_opts o = quick_opts();
    nc_compare_result r;
    CHECK(compare("cmd:exit 3", "spin:1", &o, NULL, &r, &err) != NC_OK);
    CHECKF(strstr(err.msg, "exit status 3") && strstr(err.msg, "candidate A"), "%s", err.msg);
    CHECK(compare("spin:1", "pipe:exit 0", &o, NULL, &r, &err) != NC_OK);
    CHECKF(strstr(err.msg, "candidate B") != NULL, "%s", err.msg);
    char spec[1024];
    snprintf(spec, sizeof spec, "pipe:%s --serve-fail", self_path);
    CHECK(compare("spin:1", spec, &o, NULL, &r, &err) != NC_OK);
    CHECKF(strstr(err.msg, "answered: error") != NULL, "%s", err.msg);
    /* a persistent process that stops answering: timed out, then stopped */
    nc_candidate *p;
    nc_bench_item item = {"x", 1};
    CHECK_OK(nc_candidate_open("pipe:echo ready; read l; sleep 5", 0.2, &p, &err), &err);
    CHECK_OK(p->ops->load(p, &err), &err);
    CHECK_OK(p->ops->prepare(p, &item, &err), &err);
    CHECK(p->ops->run(p, &item, &err) == NC_ERR_RANGE);
    CHECK(p->ops->run(p, &item, &err) == NC_ERR_IO);
    CHECKF(strstr(err.msg, "timed out") != NULL, "%s", err.msg);
    nc_candidate_close(p);
    o.n_blocks = 4;
    CHECK(compare("spin:1", "spin:1", &o, NULL, &r, &err) == NC_ERR_INVALID);
}

/* The external-candidate roles of this binary. */
static int helper_main(int argc, char **argv) {
    if (!strcmp(argv[1], "--burn") && argc > 2) {
        nc_spin(strtoull(argv[2], NULL, 10));
        return 0;
    }
    if (!strcmp(argv[1], "--serve") || !strcmp(argv[1], "--serve-fail")) {
        int is_failing = !strcmp(argv[1], "--serve-fail");
        unsigned long long n = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
        printf("ready\n");
        fflush(stdout);
        char line[65536];
        while (fgets(line, sizeof line, stdin)) {
            nc_spin(n);
            printf(is_failing ? "error: refusing on purpose\n" : "ok\n");
            fflush(stdout);
        }
        return 0;
    }
    return 2;
}

int main(int argc, char **argv) {
    if (argc > 1) return helper_main(argc, argv);
    self_path = argv[0];
    RUN(test_self_comparison_interval_contains_one);
    RUN(test_double_time_is_detected);
    RUN(test_equal_offered_load_counts_misses);
    RUN(test_real_processes_are_measured);
    RUN(test_power_flows_into_ratios);
    RUN(test_rapl_energy_per_decision_is_exact);
    RUN(test_mil_program_candidate);
    RUN(test_outputs_are_written);
    RUN(test_hashes_match_python_hashlib);
    RUN(test_bad_candidates_fail_with_a_message);
    return nc_test_exit_code();
}
