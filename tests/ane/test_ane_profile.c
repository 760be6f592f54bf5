/* Probe profiles (src/mil/ane_profile.c) and what the host chooses from
 * them (ane_probe_choose): statuses map to verdicts ("rejected" on the fake
 * device is unknown, any failure is failed), the surface policy keeps the
 * default unless the probe showed it unnecessary, the run mode is the
 * fastest chain that passed, and malformed profiles fail naming the file. */
#include <string.h>

#include "../test.h"
#include "ane_host/ane_probe.h"
#include "mil/ane_profile.h"

static const char *doc(const char *mixed, const char *small, double sync_us, double async_us,
                       const char *events, double events_us) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"device\": \"real\", \"chip\": \"Apple M4\", \"os\": \"macOS 15.5\", \"cases\": ["
             "{\"id\": \"surfaces_mixed\", \"status\": \"%s\", \"eval_us\": 10},"
             "{\"id\": \"surface_small\", \"status\": \"%s\", \"eval_us\": 10},"
             "{\"id\": \"chain4_sync\", \"status\": \"ok\", \"eval_us\": %g},"
             "{\"id\": \"chain4_async\", \"status\": \"ok\", \"eval_us\": %g},"
             "{\"id\": \"chain4_events\", \"status\": \"%s\", \"eval_us\": %g},"
             "{\"id\": \"gather_int32\", \"status\": \"rejected\", \"eval_us\": 0}]}",
             mixed, small, sync_us, async_us, events, events_us);
    return buf;
}

static void test_verdicts_and_choices(void) {
    nc_error err = {0};
    mil_ane_profile p;
    const char *t = doc("eval failed", "ok", 120, 60, "ok", 40);
    CHECK_OK(mil_ane_profile_parse(t, strlen(t), "p.json", &p, &err), &err);
    CHECK(!strcmp(p.chip, "Apple M4") && p.n == 6);
    CHECK(mil_ane_profile_verdict(&p, "surfaces_mixed") == MIL_PROBE_FAILED);
    CHECK(mil_ane_profile_verdict(&p, "surface_small") == MIL_PROBE_OK);
    CHECK(mil_ane_profile_verdict(&p, "gather_int32") == MIL_PROBE_UNKNOWN);
    CHECK(mil_ane_profile_verdict(&p, "no_such_case") == MIL_PROBE_UNKNOWN);
    CHECK(mil_ane_profile_verdict(NULL, "surface_small") == MIL_PROBE_UNKNOWN);
    ane_surface_policy pol;
    ane_run_mode mode;
    ane_probe_choose(&p, &pol, &mode);
    CHECK(pol.uniform == 1 && pol.min_bytes == 0 && mode == ANE_RUN_ASYNC_EVENTS);
    /* mixed sizes worked, small surfaces did not, events failed: async */
    t = doc("ok", "wrong", 120, 60, "eval failed", 10);
    CHECK_OK(mil_ane_profile_parse(t, strlen(t), "p.json", &p, &err), &err);
    ane_probe_choose(&p, &pol, &mode);
    CHECK(pol.uniform == 0 && pol.min_bytes == ANE_REPORTED_MIN_SURFACE_BYTES);
    CHECK(mode == ANE_RUN_ASYNC);
    /* no profile: the defaults */
    ane_probe_choose(NULL, &pol, &mode);
    ane_surface_policy def = ANE_SURFACE_POLICY_DEFAULT;
    CHECK(pol.uniform == def.uniform && pol.min_bytes == def.min_bytes && mode == ANE_RUN_SYNC);
}

static void test_malformed_profiles_fail_naming_the_file(void) {
    static const char *bad[3] = {"[]", "{\"cases\": [{\"id\": \"x\"}]}", "{\"cases\": 3"};
    for (int i = 0; i < 3; i++) {
        nc_error err = {0};
        mil_ane_profile p;
        CHECK(mil_ane_profile_parse(bad[i], strlen(bad[i]), "chip.json", &p, &err) != NC_OK);
        CHECKF(strstr(err.msg, "chip.json") && !strchr(err.msg, '\n'), "%s", err.msg);
    }
}

int main(void) {
    RUN(test_verdicts_and_choices);
    RUN(test_malformed_profiles_fail_naming_the_file);
    return nc_test_exit_code();
}
