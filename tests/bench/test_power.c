/* Power sources against recorded real-format samples
 * (tests/fixtures/bench/): powermetrics text with ANE power, powermetrics
 * plist (NUL-separated documents, energy in mJ), a RAPL counter trace
 * across a wrap-around and a powercap tree laid out as in /sys. Expected
 * values are worked out by hand from the numbers in the fixtures. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../test.h"
#include "base/mmap.h"
#include "bench/power.h"

#define FIX "tests/fixtures/bench/"

typedef struct collected {
    nc_pm_sample s[16];
    int n;
} collected;

static void collect(const nc_pm_sample *s, void *ctx) {
    collected *c = ctx;
    if (c->n < 16) c->s[c->n++] = *s;
}

/* Feeds a file in pieces of `step` bytes (1 = byte by byte). */
static nc_status parse_file(const char *path, size_t step, collected *c, nc_error *err) {
    char *text;
    size_t len;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_pm_stream st = {0};
    nc_status s = NC_OK;
    c->n = 0;
    for (size_t i = 0; i < len && s == NC_OK; i += step)
        s = nc_pm_feed(&st, text + i, len - i < step ? len - i : step, (double)i, collect, c, err);
    if (s == NC_OK) s = nc_pm_finish(&st, collect, c, err);
    nc_pm_stream_free(&st);
    free(text);
    return s;
}

static void test_powermetrics_text_with_ane_power(void) {
    collected c;
    nc_error err;
    CHECK_OK(parse_file(FIX "powermetrics_m1_ane.txt", 1 << 20, &c, &err), &err);
    CHECK(c.n == 4);
    /* sample 2: CPU 2210 mW, GPU 61 mW (not the GPU section's repeat), ANE 1875 mW */
    CHECK_NEAR(c.s[1].elapsed_s, 1.00187, 1e-12);
    CHECK_NEAR(c.s[1].cpu_w, 2.210, 1e-12);
    CHECK_NEAR(c.s[1].gpu_w, 0.061, 1e-12);
    CHECK_NEAR(c.s[1].ane_w, 1.875, 1e-12);
    CHECK_NEAR(nc_pm_total_w(&c.s[1]), 4.146, 1e-12);
    CHECK_NEAR(c.s[0].ane_w, 0.0, 0);
    CHECK_NEAR(c.s[3].elapsed_s, 1.00096, 1e-12);
    /* byte-by-byte arrival gives the same samples */
    collected d;
    CHECK_OK(parse_file(FIX "powermetrics_m1_ane.txt", 1, &d, &err), &err);
    CHECK(d.n == 4);
    for (int i = 0; i < 4; i++)
        CHECK(d.s[i].combined_w == c.s[i].combined_w);
}

static void test_powermetrics_plist(void) {
    collected c;
    nc_error err;
    CHECK_OK(parse_file(FIX "powermetrics_m3max.plist", 97, &c, &err), &err);
    CHECK(c.n == 3);
    CHECK_NEAR(c.s[0].elapsed_s, 0.500123, 1e-12);
    CHECK_NEAR(nc_pm_total_w(&c.s[0]), 1.3642, 1e-12);
    /* ANE: 905 mJ over 0.499877 s */
    CHECK_NEAR(c.s[1].ane_w, 0.905 / 0.499877, 1e-12);
    /* no combined_power in the third: (1080 + 29 + 940) mJ over 0.5 s */
    CHECK(isnan(c.s[2].combined_w));
    CHECK_NEAR(nc_pm_total_w(&c.s[2]), 2.049 / 0.5, 1e-12);
}

static void test_powermetrics_rejects_junk(void) {
    nc_pm_sample s;
    nc_error err;
    const char *bad[] = {"", "CPU Power: lots mW\n",
                         "*** Sampled system activity (x) (ms elapsed) ***\n",
                         "<plist><key>cpu_power</key><string>1</string></plist>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(nc_pm_parse_sample(bad[i], strlen(bad[i]), &s, &err) == NC_ERR_FORMAT, "input %zu",
               i);
    const char ok[] = "ANE Power: 12.5 W\n";
    CHECK_OK(nc_pm_parse_sample(ok, sizeof ok - 1, &s, &err), &err);
    CHECK(s.ane_w == 12.5 && isnan(s.elapsed_s));
}

static void test_rapl_counter_wraps(void) {
    char *text;
    size_t len;
    nc_error err;
    CHECK_OK(nc_read_file(FIX "rapl_wrap_trace.txt", &text, &len, &err), &err);
    const uint64_t max_range = 262143328850ull;
    uint64_t prev = 0, total = 0;
    double t_first = -1, t_last = 0;
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *sp = strchr(line, ' ');
        CHECK(sp != NULL);
        uint64_t cur;
        CHECK_OK(nc_rapl_parse_uj(sp + 1, "trace", &cur, &err), &err);
        double t = atof(line);
        if (n++)
            total += nc_rapl_delta_uj(prev, cur, max_range);
        else
            t_first = t;
        prev = cur;
        t_last = t;
    }
    free(text);
    /* 2 J every 0.5 s, the wrap included: 8 J over 2 s = 4 W */
    CHECK(n == 5);
    CHECK(total == 8000000);
    CHECK_NEAR((double)total * 1e-6 / (t_last - t_first), 4.0, 1e-12);
    CHECK(nc_rapl_delta_uj(10, 25, 100) == 15);
    CHECK(nc_rapl_delta_uj(95, 4, 100) == 10); /* 95..100 is 5, then 0..4 is 5 */
    uint64_t v;
    CHECK(nc_rapl_parse_uj("-5\n", "x", &v, &err) == NC_ERR_FORMAT);
    CHECK(nc_rapl_parse_uj("12abc\n", "x", &v, &err) == NC_ERR_FORMAT);
    CHECK(nc_rapl_parse_uj("", "x", &v, &err) == NC_ERR_FORMAT);
    CHECK_OK(nc_rapl_parse_uj("123\n", "x", &v, &err), &err);
    CHECK(v == 123);
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* A copy of the fixture powercap tree whose counters the test can move. */
static int make_powercap_copy(const char *root) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p build/tmp && cp -r " FIX "powercap %s", root,
             root);
    return system(cmd) == 0;
}

static void test_rapl_sampler_on_powercap_tree(void) {
    /* a per-process folder: two test runs at once must not share one */
    char root[128];
    snprintf(root, sizeof root, "build/tmp/test_power_powercap.%ld", (long)getpid());
    CHECK(make_powercap_copy(root));
    nc_power_sampler *s;
    nc_error err;
    CHECK_OK(nc_power_open("rapl", root, 0.05, &s, &err), &err);
    /* top-level zones only, psys left out (it contains the package) */
    CHECKF(strstr(s->domain, "package-0") && !strstr(s->domain, "psys") &&
               !strstr(s->domain, "core"),
           "domain: %s", s->domain);
    nc_power_mark(s);
    double t0 = s->trace.pts[0].t_s;
    char path[256];
    snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", root);
    CHECK(write_text(path, "500000\n")); /* wrapped past 262143328850 */
    nc_power_mark(s);
    double t1 = s->trace.pts[s->trace.n - 1].t_s;
    double joules;
    CHECK_OK(nc_power_energy(s, t0, t1, &joules, &err), &err);
    CHECK_NEAR(joules, (262143328850.0 - 262142000000.0 + 500000 + 1) * 1e-6, 1e-9);
    /* the background thread runs and stops cleanly */
    CHECK_OK(nc_power_start(s, &err), &err);
    CHECK_OK(nc_power_stop(s, t1, &err), &err);
    nc_power_close(s);
    CHECK_OK(nc_power_open("rapl:dram,core", root, 0.05, &s, &err), &err);
    CHECKF(strstr(s->domain, "core") && strstr(s->domain, "dram"), "domain: %s", s->domain);
    nc_power_close(s);
    CHECK(nc_power_open("rapl:gpu", root, 0.05, &s, &err) == NC_ERR_NOT_FOUND);
    CHECK(nc_power_open("rapl", "build/tmp/no-such-powercap", 0.05, &s, &err) == NC_ERR_IO);
    CHECK(nc_power_open("joulemeter", NULL, 0.05, &s, &err) == NC_ERR_INVALID);
    char cmd[192];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

static void test_powermetrics_sampler_replays_a_recording(void) {
    nc_power_sampler *s;
    nc_error err;
    CHECK_OK(
        nc_power_open("powermetrics-cmd:cat " FIX "powermetrics_m1_ane.txt", NULL, 1.0, &s, &err),
        &err);
    CHECK(strstr(s->domain, "CPU + GPU + ANE") != NULL);
    CHECK_OK(nc_power_start(s, &err), &err);
    CHECK_OK(nc_power_stop(s, 0, &err), &err);
    nc_energy_trace tr;
    CHECK_OK(nc_power_copy_trace(s, &tr, &err), &err);
    nc_power_close(s);
    CHECK(tr.n == 5);
    double want = 1.290 * 1.00452 + 4.146 * 1.00187 + 4.187 * 1.00203 + 1.228 * 1.00096;
    CHECK_NEAR(tr.pts[tr.n - 1].energy_j, want, 1e-9);
    nc_energy_trace_free(&tr);
}

static void test_energy_trace_interpolates(void) {
    nc_energy_trace tr = {0};
    nc_error err;
    CHECK_OK(nc_energy_trace_add(&tr, 0.0, 0.0, &err), &err);
    CHECK_OK(nc_energy_trace_add(&tr, 1.0, 3.0, &err), &err); /* 3 W */
    CHECK_OK(nc_energy_trace_add(&tr, 3.0, 4.0, &err), &err); /* 0.5 W */
    double j;
    CHECK_OK(nc_energy_trace_between(&tr, 0.5, 2.0, &j, &err), &err);
    CHECK_NEAR(j, 1.5 + 0.5, 1e-12);
    CHECK(nc_energy_trace_between(&tr, 0.5, 3.5, &j, &err) == NC_ERR_RANGE);
    CHECK(nc_energy_trace_add(&tr, 2.0, 5.0, &err) != NC_OK);
    nc_energy_trace_free(&tr);
}

int main(void) {
    RUN(test_powermetrics_text_with_ane_power);
    RUN(test_powermetrics_plist);
    RUN(test_powermetrics_rejects_junk);
    RUN(test_rapl_counter_wraps);
    RUN(test_rapl_sampler_on_powercap_tree);
    RUN(test_powermetrics_sampler_replays_a_recording);
    RUN(test_energy_trace_interpolates);
    return nc_test_exit_code();
}
