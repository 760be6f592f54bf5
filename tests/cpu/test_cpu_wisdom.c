/* The wisdom file of cpu_tune (cpu_wisdom.h): a first run measures and
 * writes one line per slot under this CPU's key; a second run reads them
 * back and measures nothing; a kernel name this build does not know is
 * measured again; other CPUs' lines survive a rewrite; every kind of
 * corrupted file (bad header, missing fields, a rate that is not a number,
 * an overlong line, binary bytes, a truncated line) gives one line naming
 * file:line, is measured again and rewritten as a file that parses; an
 * unwritable path is reported and the choice still holds; the engine's
 * choice (cpu_wisdom_keep) kept, marked and read back. Also the default
 * path from XDG_CACHE_HOME / HOME, and "off" measuring nothing. Measuring
 * uses CPU_TUNE_QUICK: the choices are noise here, the file is the test. */
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_wisdom.h"

static char dir[256], path[300];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/nectar-test-wisdom-%ld", (long)getpid());
    snprintf(path, sizeof path, "%s/sub/wisdom", dir); /* parents are created */
    unlink(path);
}

static void write_file(const char *text, size_t len) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
}

static char *read_all(void) {
    static char buf[8192];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

/* Whether some slot has more than one candidate here (else nothing is
 * ever measured or written). */
static int has_choices(void) {
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    for (int s = 0; s < CPU_SLOT_N; s++)
        if (cpu_tune_candidates((cpu_slot)s, names, CPU_WISDOM_MAX_CANDIDATES) > 1) return 1;
    return 0;
}

/* A slot with a choice here, and its name in the file: decoding bf16 where
 * the table has kernels for it, else Q4 (x16 or the table's tile). */
static cpu_slot slot_with_choices(const char **name) {
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    int bf16 = cpu_tune_candidates(CPU_SLOT_DECODE_BF16, names, CPU_WISDOM_MAX_CANDIDATES) > 1;
    *name = bf16 ? "decode-bf16-accurate" : "decode-q4";
    return bf16 ? CPU_SLOT_DECODE_BF16 : CPU_SLOT_DECODE_Q4;
}

static void test_measure_then_read_back(void) {
    setup();
    if (!has_choices()) SKIP("one candidate per slot on this CPU: nothing to measure");
    cpu_tuning t;
    nc_error err;
    CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &t, &err), &err);
    CHECKF(!t.note[0], "%s", t.note);
    int measured = 0;
    for (int s = 0; s < CPU_SLOT_N; s++)
        measured += !strcmp(t.slot[s].why, "measured now");
    CHECK(measured >= 1);
    char *text = read_all();
    CHECK(!strncmp(text, "# nectar kernel wisdom 7\n", 25));
    const char *slot;
    slot_with_choices(&slot);
    CHECK(strstr(text, t.cpu) && strstr(text, slot));
    cpu_tuning again;
    CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &again, &err), &err);
    for (int s = 0; s < CPU_SLOT_N; s++) {
        if (strcmp(t.slot[s].why, "measured now")) continue;
        CHECK(!strcmp(again.slot[s].why, "from the wisdom file"));
        CHECK(!strcmp(again.slot[s].kernel, t.slot[s].kernel));
    }
}

/* Another CPU's line is kept; this CPU's line naming an unknown kernel is
 * measured again and replaced. */
static void test_unknown_kernel_remeasured_other_cpus_kept(void) {
    setup();
    if (!has_choices()) SKIP("one candidate per slot on this CPU");
    char key[192], text[1024];
    const char *slot;
    cpu_slot s = slot_with_choices(&slot);
    cpu_identity(key, sizeof key);
    int n = snprintf(text, sizeof text,
                     "# nectar kernel wisdom 7\nOther CPU 1\tdecode-bf16-accurate\tdp9\t1.5\n"
                     "%s\t%s\tkernel-from-the-future\t99\n",
                     key, slot);
    write_file(text, (size_t)n);
    cpu_tuning t;
    nc_error err;
    CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &t, &err), &err);
    CHECKF(!t.note[0], "%s", t.note);
    CHECK(!strcmp(t.slot[s].why, "measured now"));
    char *after = read_all();
    CHECK(strstr(after, "Other CPU 1\tdecode-bf16-accurate\tdp9\t1.5\n"));
    CHECK(!strstr(after, "kernel-from-the-future"));
}

static void test_corrupted_files_are_reported_and_replaced(void) {
    static const struct {
        const char *text;
        size_t len; /* 0: strlen */
        const char *where;
    } bad[] = {
        {"# some other format\n", 0, ":1:"},
        {"# nectar kernel wisdom 7\ncpu\tdecode-bf16-accurate\tfp32-widen\n", 0, ":2:"},
        {"# nectar kernel wisdom 7\ncpu\tdecode-bf16-accurate\tfp32-widen\tfast\n", 0, ":2:"},
        {"# nectar kernel wisdom 7\ncpu\tdecode-bf16-accurate\tfp32-widen\tnan\n", 0, ":2:"},
        {"# nectar kernel wisdom 7\n\ncpu\ta\tb\t1\textra\n", 0, ":3:"},
        {"# nectar kernel wisdom 7\ncpu\ta\tb\t1\tengine\tmore\n", 0, ":2:"},
        {"# nectar kernel wisdom 7\ncpu\tslot\t\t1\n", 0, ":2:"},
        {"\x7f\x45LF\x02\x01\x01\0\0\0garbage", 16, ":1:"},
        {"# nectar kernel wisdom 7\ncpu\tdecode-bf16-acc", 0, ":2:"}, /* cut off */
    };
    char longline[2048];
    memcpy(longline, "# nectar kernel wisdom 7\n", 25);
    memset(longline + 25, 'x', sizeof longline - 27);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = 0;
    int cases = 0;
    for (size_t i = 0; i <= sizeof bad / sizeof *bad; i++, cases++) {
        setup();
        const char *text = i < sizeof bad / sizeof *bad ? bad[i].text : longline;
        size_t len = i < sizeof bad / sizeof *bad && bad[i].len ? bad[i].len : strlen(text);
        const char *where = i < sizeof bad / sizeof *bad ? bad[i].where : ":2:";
        write_file(text, len);
        cpu_tuning t;
        nc_error err;
        CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &t, &err), &err);
        char want[320];
        snprintf(want, sizeof want, "wisdom %s%s", path, where);
        CHECKF(strstr(t.note, want) && strstr(t.note, "measuring again") && !strchr(t.note, '\n'),
               "case %zu: note '%s'", i, t.note);
        if (has_choices()) { /* rewritten, and the rewrite parses */
            cpu_tuning again;
            CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &again, &err), &err);
            CHECKF(!again.note[0], "case %zu after the rewrite: %s", i, again.note);
        }
    }
    printf("  %d corrupted files\n", cases);
}

static void test_unwritable_path_keeps_the_choice(void) {
    if (!has_choices()) SKIP("one candidate per slot on this CPU");
    cpu_tuning t;
    nc_error err;
    /* a path under a regular file: neither readable nor writable */
    setup();
    write_file("x", 1);
    char under[400];
    snprintf(under, sizeof under, "%s/wisdom", path);
    CHECK_OK(cpu_tune(under, CPU_TUNE_QUICK, 1, &t, &err), &err);
    CHECKF(strstr(t.note, "cannot write"), "note '%s'", t.note);
    CHECK(t.slot[CPU_SLOT_DECODE_BF16].kernel[0]);
}

static void test_off_and_no_wisdom_measure_nothing(void) {
    cpu_tuning t;
    nc_error err;
    CHECK_OK(cpu_select_bf16("off", &err), &err);
    CHECK_OK(cpu_tune(NULL, 1, 1, &t, &err), &err);
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_BF16].why, "NECTAR_BF16=off"));
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_BF16].kernel, "fp32-widen"));
    CHECK(!strcmp(t.slot[CPU_SLOT_PROMPT_BF16].kernel, "fp32-gemm"));
    /* no wisdom: the tables' own Q8/Q4 tiles; Q4 rows interleaved at load
     * where the table decodes them so (q4_interleave.h) */
    CHECK_OK(cpu_tune(NULL, 0, 1, &t, &err), &err);
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q8].kernel, "tile"));
    int x16 = cpu_kernels_get()->qmatmul[2] != NULL; /* the table decodes Q4X16 */
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q4].kernel, x16 ? "x16" : "tile"));
    if (x16) { /* the choice decides the layout of the next models */
        CHECK_OK(cpu_tune_force(CPU_SLOT_DECODE_Q4, "tile", &err), &err);
        CHECK_OK(cpu_tune(NULL, 0, 1, &t, &err), &err);
        /* models loaded earlier keep their kernel: only new loads change */
        CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q4].kernel, "tile") &&
              !cpu_q4_interleave_wanted(cpu_kernels_get()) && cpu_kernels_get()->qmatmul[2]);
        CHECK_OK(cpu_tune_force(CPU_SLOT_DECODE_Q4, "x16", &err), &err);
        CHECK_OK(cpu_tune(NULL, 0, 1, &t, &err), &err);
        CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q4].kernel, "x16") &&
              cpu_q4_interleave_wanted(cpu_kernels_get()));
        cpu_tune_unforce();
    }
    CHECK_OK(cpu_select_bf16("accurate", &err), &err);
    CHECK_OK(cpu_tune(NULL, 0, 1, &t, &err), &err);
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_BF16].kernel, "fp32-widen"));
    CHECK(t.slot[CPU_SLOT_DECODE_BF16].rate == 0);
    CHECK(cpu_select_bf16("half", &err) == NC_ERR_INVALID);
    /* a refused kernel leaves the contract and its forced kernels as they were */
    CHECK_OK(cpu_select_bf16("off,decode=fp32-widen", &err), &err);
    CHECK(cpu_select_bf16("accurate,decode=nonsense", &err) == NC_ERR_INVALID &&
          strstr(err.msg, "nonsense"));
    CHECK(cpu_bf16_mode() == CPU_BF16_MODE_OFF);
    CHECK(cpu_select_bf16("half", &err) == NC_ERR_INVALID);
    CHECK(cpu_bf16_mode() == CPU_BF16_MODE_OFF);
    CHECK_OK(cpu_tune(NULL, 0, 1, &t, &err), &err);
    CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_BF16].why, "NECTAR_BF16=off"));
    CHECK_OK(cpu_select_bf16("accurate", &err), &err);
}

/* The Q8/Q4 decode slots are named the same under every bf16 contract,
 * measured and kept in the file beside the bf16 ones where this CPU
 * offers a choice (the AVX-512 table: the tile and the row kernels). */
static void test_q_slots_measured_and_kept(void) {
    setup();
    nc_error err;
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    int n8 = cpu_tune_candidates(CPU_SLOT_DECODE_Q8, names, CPU_WISDOM_MAX_CANDIDATES);
    CHECK(n8 >= 1 && !strcmp(names[0], "tile"));
    if (n8 < 2) SKIP("one Q8/Q4 decode kernel on this CPU");
    /* Q4: the interleaved layout first, where the table has it */
    int n4 = cpu_tune_candidates(CPU_SLOT_DECODE_Q4, names, CPU_WISDOM_MAX_CANDIDATES);
    CHECK(n4 == n8 + (cpu_kernels_get()->qmatmul[2] != NULL));
    CHECK(!strcmp(names[0], n4 > n8 ? "x16" : "tile"));
    for (int mode = 0; mode < 2; mode++) {
        CHECK_OK(cpu_select_bf16(mode ? "fast" : "off", &err), &err);
        cpu_tuning t;
        CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &t, &err), &err);
        CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q8].slot, "decode-q8"));
        CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q4].slot, "decode-q4"));
        CHECK(!strcmp(t.slot[CPU_SLOT_DECODE_Q8].why,
                      mode ? "from the wisdom file" : "measured now"));
        CHECK(!mode || t.slot[CPU_SLOT_DECODE_Q4].n_candidates == 0);
        CHECK(!mode || t.slot[CPU_SLOT_DECODE_Q8].rate > 0);
    }
    char *text = read_all();
    CHECK(strstr(text, "\tdecode-q8\t") && strstr(text, "\tdecode-q4\t"));
    CHECK_OK(cpu_select_bf16("accurate", &err), &err);
}

/* NECTAR_WISDOM's value to a path: a path, "off", or unset (the default
 * from XDG_CACHE_HOME, else HOME, else none). */
static void test_wisdom_path_from_the_setting(void) {
    char b[64];
    const char *p = NULL;
    nc_error err;
    CHECK_OK(cpu_wisdom_path("/w/file", "/x", "/h", b, sizeof b, &p, &err), &err);
    CHECK(p && !strcmp(p, "/w/file"));
    CHECK_OK(cpu_wisdom_path("off", "/x", "/h", b, sizeof b, &p, &err), &err);
    CHECK(p == NULL && !strcmp(b, "off"));
    CHECK_OK(cpu_wisdom_path(NULL, "/x", "/h", b, sizeof b, &p, &err), &err);
    CHECK(p && !strcmp(p, "/x/nectar/wisdom"));
    CHECK_OK(cpu_wisdom_path("", "", "/h", b, sizeof b, &p, &err), &err);
    CHECK(p && !strcmp(p, "/h/.cache/nectar/wisdom"));
    CHECK_OK(cpu_wisdom_path(NULL, NULL, NULL, b, sizeof b, &p, &err), &err);
    CHECK(p == NULL && !strcmp(b, "off"));
}

/* A path that does not fit the buffer is an error naming the variable it
 * came from, not a silent "off": 63 characters fit in 64 bytes, 64 do not
 * (the old code gave NULL, i.e. no wisdom, for the 64). */
static void test_wisdom_path_too_long_is_an_error(void) {
    char b[64], name[80];
    const char *p = NULL;
    nc_error err = {0};
    memset(name, 'w', sizeof name);
    name[0] = '/';
    name[63] = 0;
    CHECK_OK(cpu_wisdom_path(name, NULL, NULL, b, sizeof b, &p, &err), &err);
    CHECK(p && strlen(p) == 63);
    name[63] = 'w';
    name[64] = 0;
    CHECK(cpu_wisdom_path(name, NULL, NULL, b, sizeof b, &p, &err) == NC_ERR_INVALID);
    CHECKF(p == NULL && !strncmp(err.msg, "NECTAR_WISDOM: ", 15) && strstr(err.msg, " 64 ") &&
               !strchr(err.msg, '\n'),
           "'%s'", err.msg);
    name[40] = 0; /* 40 + "/nectar/wisdom" = 54 fits; + "/.cache/nectar/wisdom" = 61 fits */
    CHECK_OK(cpu_wisdom_path(NULL, name, NULL, b, sizeof b, &p, &err), &err);
    name[40] = 'w';
    name[50] = 0;
    CHECK(cpu_wisdom_path("", name, "/h", b, sizeof b, &p, &err) == NC_ERR_INVALID);
    CHECKF(p == NULL && !strncmp(err.msg, "XDG_CACHE_HOME: ", 16), "'%s'", err.msg);
    CHECK(cpu_wisdom_path(NULL, NULL, name, b, sizeof b, &p, &err) == NC_ERR_INVALID);
    CHECKF(p == NULL && !strncmp(err.msg, "HOME: ", 6), "'%s'", err.msg);
}

/* The engine's choice (`nectar bench --tune`): the shortlist starts with the
 * slot's default and holds distinct candidates, the others by the probe's
 * rate, fastest first; cpu_wisdom_keep replaces this CPU's line for the
 * slot with one marked "engine" and keeps other CPUs' lines; cpu_tune reads
 * it back as timed in the engine; a fifth field other than "engine" is a
 * corrupted file (above); forcing a slot and unforcing it. */
static void test_engine_choice_kept_and_read_back(void) {
    setup();
    const char *cand[CPU_WISDOM_MAX_CANDIDATES], *slot;
    cpu_slot s = slot_with_choices(&slot);
    int nc = cpu_tune_candidates(s, cand, CPU_WISDOM_MAX_CANDIDATES);
    if (nc < 2) SKIP("one candidate per slot on this CPU");
    const char *names[3];
    double rates[3];
    int n = 0;
    nc_error err;
    CHECK_OK(cpu_tune_shortlist(s, NULL, 1, CPU_TUNE_QUICK, 3, names, rates, &n, &err), &err);
    CHECKF(n == (nc < 3 ? nc : 3), "%d of %d", n, nc);
    CHECK(!strcmp(names[0], cand[0]));
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int j = 0; j < nc; j++)
            known += !strcmp(names[i], cand[j]);
        CHECKF(known == 1, "%s", names[i]);
        for (int j = 0; j < i; j++)
            CHECKF(strcmp(names[i], names[j]), "%s twice", names[i]);
        CHECK(rates[i] > 0);
    }
    if (n == 3) CHECKF(rates[1] >= rates[2], "%g < %g", rates[1], rates[2]);

    char key[192], text[1024], note[320], want[400];
    cpu_identity(key, sizeof key);
    int len = snprintf(text, sizeof text,
                       "# nectar kernel wisdom 7\nOther CPU 1\t%s\tdp9\t1.5\n%s\t%s\t%s\t3\n", slot,
                       key, slot, cand[0]);
    write_file(text, (size_t)len);
    CHECKF(cpu_wisdom_keep(path, s, names[1], 12.5, note, sizeof note), "%s", note);
    char *after = read_all();
    snprintf(want, sizeof want, "%s\t%s\t%s\t12.5\tengine\n", key, slot, names[1]);
    CHECKF(strstr(after, want), "%s", after);
    snprintf(want, sizeof want, "Other CPU 1\t%s\tdp9\t1.5\n", slot);
    CHECKF(strstr(after, want), "%s", after);
    snprintf(want, sizeof want, "%s\t%s\t%s\t3\n", key, slot, cand[0]);
    CHECKF(!strstr(after, want), "%s", after);

    cpu_tuning t;
    CHECK_OK(cpu_tune(path, CPU_TUNE_QUICK, 1, &t, &err), &err);
    CHECKF(!t.note[0], "%s", t.note);
    CHECKF(!strcmp(t.slot[s].why, "from the wisdom file (timed in the engine)"), "%s",
           t.slot[s].why);
    CHECK(!strcmp(t.slot[s].kernel, names[1]) && t.slot[s].rate == 12.5);

    CHECK(cpu_tune_forced(s) == NULL);
    CHECK_OK(cpu_tune_force(s, names[0], &err), &err);
    CHECK(cpu_tune_forced(s) && !strcmp(cpu_tune_forced(s), names[0]));
    CHECK_OK(cpu_tune_force(s, NULL, &err), &err);
    CHECK(cpu_tune_forced(s) == NULL);
}

/* The shortlist takes a report's rates where it holds every candidate's
 * (bench --tune on a fresh wisdom file: the probe ran at start): the
 * default first, then the others by those rates, fastest first, exactly;
 * a report that misses a candidate is not used. */
static void test_shortlist_reuses_the_start_rates(void) {
    const char *cand[CPU_WISDOM_MAX_CANDIDATES], *slot;
    cpu_slot s = slot_with_choices(&slot);
    int nc = cpu_tune_candidates(s, cand, CPU_WISDOM_MAX_CANDIDATES);
    if (nc < 2) SKIP("one candidate per slot on this CPU");
    int want = nc < 3 ? nc : 3;
    cpu_slot_report r;
    memset(&r, 0, sizeof r);
    r.n_candidates = nc;
    /* the last candidate fastest, then the one before it; rates no memory
     * reaches (a PB/s), so a measured one cannot pass for them */
    for (int i = 0; i < nc; i++) {
        snprintf(r.cand_name[i], sizeof r.cand_name[i], "%s", cand[i]);
        r.cand_rate[i] = 1e6 + i;
    }
    const char *names[3];
    double rates[3];
    int n = 0;
    nc_error err;
    CHECK_OK(cpu_tune_shortlist(s, &r, 1, CPU_TUNE_QUICK, 3, names, rates, &n, &err), &err);
    CHECKF(n == want, "%d of %d", n, want);
    CHECKF(!strcmp(names[0], cand[0]) && rates[0] == 1e6, "%s %g", names[0], rates[0]);
    for (int k = 1; k < n; k++) /* then the last candidate, the one before it */
        CHECKF(!strcmp(names[k], cand[nc - k]) && rates[k] == 1e6 + nc - k, "%d: %s %g", k,
               names[k], rates[k]);
    r.n_candidates = nc - 1; /* not every candidate's: measured instead */
    CHECK_OK(cpu_tune_shortlist(s, &r, 1, CPU_TUNE_QUICK, 3, names, rates, &n, &err), &err);
    CHECK(n == want && !strcmp(names[0], cand[0]));
    for (int i = 0; i < n; i++)
        CHECKF(rates[i] > 0 && rates[i] < 1e5, "%s %g: the report's rate", names[i], rates[i]);
}

/* No slot's list reaches CPU_WISDOM_MAX_CANDIDATES under any contract: the
 * lists stop there, so one that reached it may have lost kernels. */
static void test_no_candidate_list_is_cut(void) {
    const char *modes[] = {"accurate", "fast", "off"}, *names[CPU_WISDOM_MAX_CANDIDATES];
    nc_error err;
    for (int m = 0; m < 3; m++) {
        CHECK_OK(cpu_select_bf16(modes[m], &err), &err);
        for (int s = 0; s < CPU_SLOT_N; s++) {
            int n = cpu_tune_candidates((cpu_slot)s, names, CPU_WISDOM_MAX_CANDIDATES);
            CHECKF(n >= 1 && n < CPU_WISDOM_MAX_CANDIDATES, "%s slot %d: %d candidates", modes[m],
                   s, n);
        }
    }
    CHECK_OK(cpu_select_bf16("accurate", &err), &err);
}

/* cpu_tune_once: the first call decides for the process; a later call
 * with a wisdom file neither measures nor writes it. */
static void test_tune_once_decides_once(void) {
    setup();
    const cpu_tuning *a, *b;
    nc_error err;
    CHECK_OK(cpu_tune_once(NULL, 1, &a, &err), &err);
    CHECK(!strcmp(a->file, "off"));
    CHECK_OK(cpu_tune_once(path, 1, &b, &err), &err);
    CHECK(a == b && !strcmp(b->file, "off"));
    CHECK(access(path, F_OK) != 0);
}

int main(void) {
    RUN(test_measure_then_read_back);
    RUN(test_unknown_kernel_remeasured_other_cpus_kept);
    RUN(test_corrupted_files_are_reported_and_replaced);
    RUN(test_unwritable_path_keeps_the_choice);
    RUN(test_off_and_no_wisdom_measure_nothing);
    RUN(test_q_slots_measured_and_kept);
    RUN(test_wisdom_path_from_the_setting);
    RUN(test_wisdom_path_too_long_is_an_error);
    RUN(test_engine_choice_kept_and_read_back);
    RUN(test_shortlist_reuses_the_start_rates);
    RUN(test_no_candidate_list_is_cut);
    RUN(test_tune_once_decides_once);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
    return nc_test_exit_code();
}
