/* Writes the raw samples, summary, Markdown report and plot of a comparison. */
#include "bench/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/mmap.h"

static const char *WHO[3] = {"A", "B", "idle"};

/* NaN and infinities are not JSON: they become null. */
static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *interval_json(const nc_interval *iv) {
    json_t *o = json_object();
    json_object_set_new(o, "estimate", num(iv->estimate));
    json_object_set_new(o, "lower", num(iv->lower));
    json_object_set_new(o, "upper", num(iv->upper));
    json_object_set_new(o, "invalid_resamples", json_integer(iv->n_invalid));
    return o;
}

static json_t *ratio_json(const nc_interval *iv, double target) {
    json_t *o = interval_json(iv);
    int n = nc_claim_factor(iv);
    json_object_set_new(o, "claim_factor", n ? json_integer(n) : json_null());
    if (target > 0)
        json_object_set_new(o, "claim_target_met",
                            json_boolean(isfinite(iv->lower) && iv->lower >= target));
    return o;
}

static json_t *candidate_json(const nc_report_input *in, int w) {
    const nc_cand_result *c = &in->r->cand[w];
    const nc_candidate *cd = in->cand[w];
    json_t *o = json_object();
    json_object_set_new(o, "spec", json_string(cd->spec));
    json_object_set_new(o, "kind", json_string(cd->kind));
    json_object_set_new(o, "model_path",
                        cd->model_path[0] ? json_string(cd->model_path) : json_null());
    json_object_set_new(o, "model_sha256",
                        cd->model_sha256[0] ? json_string(cd->model_sha256) : json_null());
    json_object_set_new(o, "load_s", num(c->load_s));
    json_object_set_new(o, "first_decision_s", num(c->first_s));
    json_object_set_new(o, "warmup_mean_s", num(c->warmup_mean_s));
    json_object_set_new(o, "completed", json_integer(c->n_completed));
    json_object_set_new(o, "failed", json_integer(c->n_failed));
    json_object_set_new(o, "deadline_misses", json_integer(c->n_missed));
    json_t *lat = json_object();
    json_object_set_new(lat, "n", json_integer((json_int_t)c->latency.n));
    json_object_set_new(lat, "mean", num(c->latency.mean));
    json_object_set_new(lat, "sd", num(c->latency.sd));
    json_object_set_new(lat, "p50", num(c->latency.p50));
    json_object_set_new(lat, "p95", num(c->latency.p95));
    json_object_set_new(lat, "min", num(c->latency.min));
    json_object_set_new(lat, "max", num(c->latency.max));
    json_object_set_new(o, "latency_s", lat);
    json_object_set_new(o, "t_per_decision_s", num(c->t_s));
    json_object_set_new(o, "busy_s", num(c->busy_s));
    json_object_set_new(o, "throughput_per_s", num(c->throughput_per_s));
    json_object_set_new(o, "power_w", num(c->power_w));
    json_object_set_new(o, "interval_energy_j", num(c->interval_energy_j));
    json_object_set_new(o, "energy_per_decision_j", interval_json(&c->energy_per_decision_j));
    json_object_set_new(o, "net_energy_per_decision_j",
                        interval_json(&c->net_energy_per_decision_j));
    return o;
}

/* Where the numbers were taken: OS, release, machine, UTC time of writing. */
static json_t *environment_json(void) {
    json_t *o = json_object();
    struct utsname u;
    if (uname(&u) == 0) {
        json_object_set_new(o, "os", json_string(u.sysname));
        json_object_set_new(o, "release", json_string(u.release));
        json_object_set_new(o, "machine", json_string(u.machine));
    }
    time_t now = time(NULL);
    struct tm tm;
    char buf[32];
    if (gmtime_r(&now, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        json_object_set_new(o, "written_utc", json_string(buf));
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    json_object_set_new(o, "online_cpus", n_cpu > 0 ? json_integer(n_cpu) : json_null());
    return o;
}

nc_status nc_report_summary_json(const nc_report_input *in, json_t **out, nc_error *err) {
    const nc_compare_result *r = in->r;
    const nc_compare_opts *o = in->o;
    json_t *j = json_object();
    if (!j) return nc_fail(err, NC_ERR_NOMEM, "summary: out of memory");
    json_object_set_new(j, "tool", json_string("nectar bench --compare " NECTAR_VERSION));
    json_object_set_new(j, "mode",
                        json_string(r->is_rate_mode ? "equal_offered_load" : "saturated"));
    json_object_set_new(j, "environment", environment_json());
    json_t *wl = json_object();
    json_object_set_new(wl, "kind", json_string(in->w->kind));
    json_object_set_new(wl, "path", in->w->path[0] ? json_string(in->w->path) : json_null());
    json_object_set_new(wl, "sha256", json_string(in->w->sha256));
    json_object_set_new(wl, "items", json_integer((json_int_t)in->w->n_items));
    json_object_set_new(j, "workload", wl);
    json_t *pr = json_object();
    json_object_set_new(pr, "blocks_per_candidate", json_integer(o->n_blocks));
    json_object_set_new(pr, "decisions_per_block", json_integer(o->per_block));
    json_object_set_new(pr, "warmup_decisions", json_integer(o->n_warmup));
    json_object_set_new(pr, "order",
                        json_string(r->has_idle ? "idle A B idle A B ... idle" : "A B A B ..."));
    json_object_set_new(pr, "idle_block_s", r->has_idle ? json_real(o->idle_s) : json_null());
    json_object_set_new(pr, "rate_hz", r->is_rate_mode ? json_real(o->rate_hz) : json_null());
    json_object_set_new(pr, "deadline_s", r->is_rate_mode ? json_real(o->deadline_s) : json_null());
    json_object_set_new(j, "protocol", pr);
    json_t *bs = json_object();
    json_object_set_new(bs, "method",
                        json_string("percentile bootstrap, resampling within each candidate"));
    json_object_set_new(bs, "prng", json_string("xoshiro256** seeded by splitmix64"));
    json_object_set_new(bs, "resamples", json_integer(o->n_resamples));
    json_object_set_new(bs, "confidence", json_real(o->confidence));
    json_object_set_new(bs, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(j, "bootstrap", bs);
    json_t *pw = json_object();
    json_object_set_new(pw, "source", json_string(r->power_kind));
    json_object_set_new(pw, "domain", json_string(r->power_domain));
    json_object_set_new(pw, "idle_power_w",
                        r->has_idle ? interval_json(&r->idle_power) : json_null());
    json_object_set_new(pw, "blocks_without_energy", json_integer(r->n_blocks_without_energy));
    json_object_set_new(j, "power", pw);
    json_t *cs = json_object();
    json_object_set_new(cs, "A", candidate_json(in, 0));
    json_object_set_new(cs, "B", candidate_json(in, 1));
    json_object_set_new(j, "candidates", cs);
    json_t *ra = json_object();
    json_object_set_new(ra, "S", ratio_json(&r->S, o->claim));
    json_object_set_new(ra, "R", ratio_json(&r->R, o->claim));
    json_object_set_new(ra, "energy_gain", ratio_json(&r->energy_gain, o->claim));
    json_object_set_new(ra, "net_energy_gain", ratio_json(&r->net_energy_gain, o->claim));
    json_object_set_new(j, "ratios", ra);
    json_object_set_new(j, "claim_target", o->claim > 0 ? json_real(o->claim) : json_null());
    *out = j;
    return NC_OK;
}

void nc_report_claim_text(const nc_interval *iv, double target, char *buf, size_t cap) {
    if (!isfinite(iv->estimate) || !isfinite(iv->lower)) {
        snprintf(buf, cap, "not measured");
        return;
    }
    int n = nc_claim_factor(iv);
    int len = snprintf(buf, cap, "%.3gx [%.3g, %.3g]", iv->estimate, iv->lower, iv->upper);
    if (len < 0 || (size_t)len >= cap) return;
    if (target > 0)
        len += snprintf(buf + len, cap - (size_t)len, "; %gx claim %s (lower bound %.3g %s %g)",
                        target, iv->lower >= target ? "supported" : "NOT supported", iv->lower,
                        iv->lower >= target ? ">=" : "<", target);
    else if (n)
        len += snprintf(buf + len, cap - (size_t)len, "; supports a %dx claim (lower bound >= %d)",
                        n, n);
    else if (iv->upper < 1)
        len += snprintf(buf + len, cap - (size_t)len,
                        "; the whole interval is below 1: favours A (B/A %.3gx [%.3g, %.3g])",
                        1.0 / iv->estimate, 1.0 / iv->upper, 1.0 / iv->lower);
    else if (iv->lower > 1)
        len += snprintf(buf + len, cap - (size_t)len,
                        "; favours B, but no Nx claim (lower bound below 2)");
    else
        len += snprintf(buf + len, cap - (size_t)len,
                        "; the interval contains 1: no difference shown");
    (void)len;
}

/* Seconds as milliseconds text, "-" for NaN. */
static const char *ms(double s, char *b, size_t n) {
    if (!isfinite(s)) return "-";
    snprintf(b, n, "%.4g", s * 1e3);
    return b;
}

static const char *g4(double v, char *b, size_t n) {
    if (!isfinite(v)) return "-";
    snprintf(b, n, "%.4g", v);
    return b;
}

/* A per-candidate row of two intervals: "| label | est [lo, hi] | est [lo, hi] |". */
static void interval_row(FILE *f, const char *label, const nc_interval *a, const nc_interval *b) {
    char e[32], lo[32], hi[32];
    fprintf(f, "| %s | %s [%s, %s] | ", label, g4(a->estimate, e, sizeof e),
            g4(a->lower, lo, sizeof lo), g4(a->upper, hi, sizeof hi));
    fprintf(f, "%s [%s, %s] |\n", g4(b->estimate, e, sizeof e), g4(b->lower, lo, sizeof lo),
            g4(b->upper, hi, sizeof hi));
}

nc_status nc_report_markdown(const nc_report_input *in, char **out, nc_error *err) {
    const nc_compare_result *r = in->r;
    const nc_compare_opts *o = in->o;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    char b1[64], b2[64], b3[64], line[256];
    fprintf(f, "# nectar bench --compare\n\n");
    fprintf(f, "- mode: %s", r->is_rate_mode ? "equal offered load" : "saturated sequential");
    if (r->is_rate_mode)
        fprintf(f, " (%g requests/s, deadline %g ms)", o->rate_hz, o->deadline_s * 1e3);
    fprintf(f, "\n- workload: %s %s, %zu item%s, sha256 `%s`\n", in->w->kind,
            in->w->path[0] ? in->w->path : "(none)", in->w->n_items, in->w->n_items == 1 ? "" : "s",
            in->w->sha256);
    for (int w = 0; w < 2; w++)
        fprintf(f, "- %s%s: `%s`; model %s%s%s\n", WHO[w], w == 0 ? " (baseline)" : " (candidate)",
                in->cand[w]->spec,
                in->cand[w]->model_path[0] ? in->cand[w]->model_path : "(not recorded)",
                in->cand[w]->model_sha256[0] ? ", sha256 " : "", in->cand[w]->model_sha256);
    fprintf(f,
            "- protocol: %d blocks per candidate, %d decisions per block, order %s, %d warm-up "
            "decisions\n",
            o->n_blocks, o->per_block,
            r->has_idle ? "idle A B ... (idle blocks of the same power domain)" : "A B A B ...",
            o->n_warmup);
    fprintf(
        f,
        "- intervals: %g%% percentile bootstrap, %d resamples within each candidate, seed %llu\n",
        o->confidence * 100, o->n_resamples, (unsigned long long)o->seed);
    fprintf(f, "- power: %s: %s\n", r->power_kind, r->power_domain);
    if (r->has_power && r->n_blocks_without_energy)
        fprintf(f,
                "- **warning**: %d of %zu blocks have no power samples covering them (did the "
                "source start late or stop? powermetrics needs root); they are left out of every "
                "power and energy figure\n",
                r->n_blocks_without_energy, r->n_blocks);
    if (o->n_blocks < 10)
        fprintf(f,
                "- note: %d blocks per candidate; the intervals resample blocks, so they are "
                "coarse (use --blocks 10 or more for tighter ones)\n",
                o->n_blocks);
    fputc('\n', f);

    fprintf(f, "## Per candidate\n\n| | A | B |\n|---|---|---|\n");
    const nc_cand_result *a = &r->cand[0], *b = &r->cand[1];
    fprintf(f, "| cold load (ms) | %s | %s |\n", ms(a->load_s, b1, sizeof b1),
            ms(b->load_s, b2, sizeof b2));
    fprintf(f, "| first decision (ms) | %s | %s |\n", ms(a->first_s, b1, sizeof b1),
            ms(b->first_s, b2, sizeof b2));
    fprintf(f, "| warm-up mean (ms) | %s | %s |\n", ms(a->warmup_mean_s, b1, sizeof b1),
            ms(b->warmup_mean_s, b2, sizeof b2));
    fprintf(f, "| completed / failed | %d / %d | %d / %d |\n", a->n_completed, a->n_failed,
            b->n_completed, b->n_failed);
    if (r->is_rate_mode) fprintf(f, "| deadline misses | %d | %d |\n", a->n_missed, b->n_missed);
    fprintf(f, "| latency mean (ms) | %s | %s |\n", ms(a->latency.mean, b1, sizeof b1),
            ms(b->latency.mean, b2, sizeof b2));
    fprintf(f, "| latency P50 (ms) | %s | %s |\n", ms(a->latency.p50, b1, sizeof b1),
            ms(b->latency.p50, b2, sizeof b2));
    fprintf(f, "| latency P95 (ms) | %s | %s |\n", ms(a->latency.p95, b1, sizeof b1),
            ms(b->latency.p95, b2, sizeof b2));
    fprintf(f, "| latency sd (ms) | %s | %s |\n", ms(a->latency.sd, b1, sizeof b1),
            ms(b->latency.sd, b2, sizeof b2));
    fprintf(f, "| throughput (decisions/s) | %s | %s |\n", g4(a->throughput_per_s, b1, sizeof b1),
            g4(b->throughput_per_s, b2, sizeof b2));
    if (r->has_power) {
        fprintf(f, "| mean power (W) | %s | %s |\n", g4(a->power_w, b1, sizeof b1),
                g4(b->power_w, b2, sizeof b2));
        fprintf(f, "| interval energy (J) | %s | %s |\n", g4(a->interval_energy_j, b1, sizeof b1),
                g4(b->interval_energy_j, b2, sizeof b2));
        interval_row(f, "energy per decision (J)", &a->energy_per_decision_j,
                     &b->energy_per_decision_j);
        if (r->has_idle)
            interval_row(f, "idle-subtracted energy per decision (J)",
                         &a->net_energy_per_decision_j, &b->net_energy_per_decision_j);
    }
    fprintf(f, "\n## Ratios (A is the baseline; above 1 favours B)\n\n");
    nc_report_claim_text(&r->S, o->claim, line, sizeof line);
    fprintf(f, "- speed gain S = t_A / t_B%s: %s\n", r->is_rate_mode ? " (response times)" : "",
            line);
    if (r->has_power) {
        nc_report_claim_text(&r->R, o->claim, line, sizeof line);
        fprintf(f, "- power reduction R = P_A / P_B: %s\n", line);
        nc_report_claim_text(&r->energy_gain, o->claim, line, sizeof line);
        fprintf(f, "- energy gain %s: %s\n",
                r->is_rate_mode ? "E_A / E_B (interval energy per completed decision)"
                                : "S x R = E_A / E_B",
                line);
        if (r->has_idle) {
            nc_report_claim_text(&r->net_energy_gain, o->claim, line, sizeof line);
            fprintf(f, "- idle-subtracted energy gain: %s (idle power %s W [%s, %s])\n", line,
                    g4(r->idle_power.estimate, b1, sizeof b1),
                    g4(r->idle_power.lower, b2, sizeof b2), g4(r->idle_power.upper, b3, sizeof b3));
            const nc_interval *na = &a->net_energy_per_decision_j,
                              *nb = &b->net_energy_per_decision_j;
            if ((isfinite(na->lower) && na->lower <= 0) || (isfinite(nb->lower) && nb->lower <= 0))
                fprintf(f,
                        "  - load minus idle is within the noise for %s: the idle-subtracted ratio "
                        "is not meaningful; the interval is reported as measured, not clamped\n",
                        (na->lower <= 0 && nb->lower <= 0) ? "both" : (na->lower <= 0 ? "A" : "B"));
        }
    } else {
        fprintf(f, "- power: not measured, so no power or energy ratio\n");
    }
    fprintf(f,
            "\nAn Nx claim is printed only when the interval's lower bound is at least N; "
            "otherwise the measured ratio is the result. Cold load and warm-up are excluded from "
            "the ratios.\n");
    fclose(f);
    if (!text) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    *out = text;
    return NC_OK;
}

/* --- files -------------------------------------------------------------------- */

static nc_status write_text(const char *dir, const char *name, const char *text, size_t len,
                            nc_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return nc_write_file_atomic(path, text, len, err);
}

/* Closes a memory stream and writes what it holds to dir/name (the stream
 * sets *text and *len only when closed). */
static nc_status flush_stream(FILE *f, char **text, size_t *len, const char *dir, const char *name,
                              nc_error *err) {
    fclose(f);
    nc_status st = *text ? write_text(dir, name, *text, *len, err)
                         : nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    free(*text);
    *text = NULL;
    return st;
}

static nc_status write_csvs(const nc_report_input *in, const char *dir, nc_error *err) {
    const nc_compare_result *r = in->r;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    fprintf(f, "candidate,block,index,item,t_start_s,latency_s,service_s,ok,deadline_missed\n");
    for (size_t i = 0; i < r->n_dec; i++) {
        const nc_decision *d = &r->dec[i];
        fprintf(f, "%s,%d,%d,%zu,%.9f,%.9f,%.9f,%d,%d\n", WHO[d->who], d->block, d->index, d->item,
                d->t_start_s, d->latency_s, d->service_s, d->is_ok, d->is_missed);
    }
    NC_TRY(flush_stream(f, &text, &len, dir, "samples.csv", err));
    f = open_memstream(&text, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    fprintf(f,
            "kind,block,t0_s,t1_s,duration_s,completed,failed,deadline_missed,energy_j,power_w\n");
    for (size_t i = 0; i < r->n_blocks; i++) {
        const nc_block *b = &r->blocks[i];
        double d = b->t1_s - b->t0_s;
        fprintf(f, "%s,%d,%.9f,%.9f,%.9f,%d,%d,%d,", WHO[b->who], b->index, b->t0_s, b->t1_s, d,
                b->n_done, b->n_failed, b->n_missed);
        if (b->has_energy)
            fprintf(f, "%.9g,%.9g\n", b->energy_j, d > 0 ? b->energy_j / d : NAN);
        else
            fprintf(f, ",\n");
    }
    NC_TRY(flush_stream(f, &text, &len, dir, "blocks.csv", err));
    f = open_memstream(&text, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    fprintf(f, "t_s,energy_j,power_w\n");
    for (size_t i = 0; i < r->trace.n; i++) {
        const nc_energy_point *p = &r->trace.pts[i];
        fprintf(f, "%.9f,%.9g,", p->t_s - r->origin_s, p->energy_j);
        double dt = i ? p->t_s - r->trace.pts[i - 1].t_s : 0;
        if (dt > 0)
            fprintf(f, "%.9g\n", (p->energy_j - r->trace.pts[i - 1].energy_j) / dt);
        else
            fprintf(f, "\n");
    }
    return flush_stream(f, &text, &len, dir, "power.csv", err);
}

/* The gnuplot script: latency CDF per candidate on top, power over time (or,
 * without power, latency over time) below. Paths are relative: gnuplot runs
 * inside the output folder. */
static nc_status write_plot_script(const nc_report_input *in, const char *dir, nc_error *err) {
    const nc_compare_result *r = in->r;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    fprintf(f,
            "# nectar bench --compare plot; run `gnuplot plot.gp` in this folder\n"
            "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1000,800 } "
            "else { set terminal png size 1000,800 }\n"
            "set output 'plot.png'\n"
            "set datafile separator ','\n"
            "set key autotitle columnhead\n"
            "set multiplot layout 2,1\n"
            "set title 'latency distribution (completed decisions)'\n"
            "set xlabel 'latency (ms)'\nset ylabel 'fraction of decisions'\nset yrange "
            "[0:1.05]\nset grid\n"
            "set datafile separator whitespace\n"
            "plot 'plot_latency_A.dat' using 1:2 with steps lw 2 title 'A', \\\n"
            "     'plot_latency_B.dat' using 1:2 with steps lw 2 title 'B'\n"
            "set datafile separator ','\n"
            "set autoscale y\n");
    if (r->has_power && r->trace.n > 1)
        fprintf(f,
                "set title 'power over time (%s)'\nset xlabel 'time (s)'\nset ylabel 'power (W)'\n"
                "plot 'power.csv' using 1:3 with fsteps lw 1 title 'power (over the step ending at "
                "each sample)', \\\n"
                "     'blocks.csv' using (strcol(1) eq 'A' ? ($3+$4)/2 : 1/0):10 with points pt 7 "
                "title 'A block mean', \\\n"
                "     'blocks.csv' using (strcol(1) eq 'B' ? ($3+$4)/2 : 1/0):10 with points pt 5 "
                "title 'B block mean', \\\n"
                "     'blocks.csv' using (strcol(1) eq 'idle' ? ($3+$4)/2 : 1/0):10 with points pt "
                "9 title 'idle block mean'\n",
                r->power_kind);
    else
        fprintf(f, "set title 'latency over time (power not measured)'\nset xlabel 'time (s)'\nset "
                   "ylabel 'latency (ms)'\n"
                   "plot 'samples.csv' using (strcol(1) eq 'A' ? $5 : 1/0):($6*1000) with points "
                   "pt 7 ps 0.5 title 'A', \\\n"
                   "     'samples.csv' using (strcol(1) eq 'B' ? $5 : 1/0):($6*1000) with points "
                   "pt 5 ps 0.5 title 'B'\n");
    fprintf(f, "unset multiplot\n");
    return flush_stream(f, &text, &len, dir, "plot.gp", err);
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* plot_latency_{A,B}.dat: sorted latency (ms) and cumulative fraction. */
static nc_status write_cdf(const nc_report_input *in, const char *dir, int who, nc_error *err) {
    const nc_compare_result *r = in->r;
    double *x = malloc((r->n_dec + 1) * sizeof *x);
    if (!x) return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < r->n_dec; i++)
        if (r->dec[i].who == who && r->dec[i].is_ok) x[n++] = r->dec[i].latency_s * 1e3;
    qsort(x, n, sizeof *x, cmp_double);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        free(x);
        return nc_fail(err, NC_ERR_NOMEM, "report: out of memory");
    }
    fprintf(f, "# latency_ms fraction_at_or_below (candidate %s)\n", WHO[who]);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.6f %.6f\n", x[i], (double)(i + 1) / (double)n);
    free(x);
    char name[64];
    snprintf(name, sizeof name, "plot_latency_%s.dat", WHO[who]);
    return flush_stream(f, &text, &len, dir, name, err);
}

/* Full path of an executable named `name` on PATH, or 0. */
static int find_on_path(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        size_t k = strcspn(path, ":");
        snprintf(out, cap, "%.*s/%s", (int)k, path, name);
        if (k && access(out, X_OK) == 0) return 1;
        path += k + (path[k] == ':');
    }
    return 0;
}

static void run_gnuplot(const char *dir, char *note, size_t cap) {
    char exe[4096];
    if (!find_on_path("gnuplot", exe, sizeof exe)) {
        snprintf(note, cap,
                 "plot skipped: gnuplot not found (plot.gp is written; install gnuplot-nox)");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(note, cap, "plot skipped: fork failed");
        return;
    }
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        execl(exe, "gnuplot", "plot.gp", (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) break;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        snprintf(note, cap, "plot.png");
    else
        snprintf(note, cap, "plot failed: gnuplot exited with an error (see plot.gp)");
}

nc_status nc_report_write(const nc_report_input *in, const char *dir, int want_plot,
                          char *plot_note, size_t note_cap, nc_error *err) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return nc_fail(err, NC_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_IO, "%s: not a folder", dir);
    NC_TRY(write_csvs(in, dir, err));
    json_t *j;
    NC_TRY(nc_report_summary_json(in, &j, err));
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "summary: out of memory");
    nc_status st = write_text(dir, "summary.json", s, strlen(s), err);
    free(s);
    NC_TRY(st);
    char *md;
    NC_TRY(nc_report_markdown(in, &md, err));
    st = write_text(dir, "report.md", md, strlen(md), err);
    free(md);
    NC_TRY(st);
    if (!want_plot) {
        snprintf(plot_note, note_cap, "plot not requested");
        return NC_OK;
    }
    NC_TRY(write_cdf(in, dir, NC_WHO_A, err));
    NC_TRY(write_cdf(in, dir, NC_WHO_B, err));
    NC_TRY(write_plot_script(in, dir, err));
    run_gnuplot(dir, plot_note, note_cap);
    return NC_OK;
}
