/* The ANE engines' device (engine_ane_device.h). */
#include "engine/engine_ane_device.h"

#include <string.h>

#include "ane_host/ane_fake.h"
#include "ane_host/ane_ladder.h"
#if defined(__APPLE__)
#include "ane/ane_apple.h"
#endif

nc_status engine_ane_real_available(nc_error *err) {
#if defined(__APPLE__)
    (void)err;
    return NC_OK;
#else
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "--ane-device real: the Neural Engine needs macOS on Apple silicon and this "
                   "build has no ANE bridge (--ane-device fake runs the same request path on the "
                   "MIL interpreter)");
#endif
}

nc_status engine_ane_device_parse(const char *text, const char *what, engine_options *o,
                                  nc_error *err) {
    o->ane_fake[0] = '\0';
    if (!strcmp(text, "real")) {
        o->ane_device = ENGINE_ANE_REAL;
        return NC_OK;
    }
    if (strncmp(text, "fake", 4) || (text[4] && text[4] != ':'))
        return nc_fail(err, NC_ERR_INVALID,
                       "%s: '%s' is not an ANE device (real, fake or fake:SETTING[:...]; "
                       "--ane-device help lists the settings)",
                       what, text);
    const char *settings = text[4] ? text + 5 : "";
    if (strlen(settings) >= sizeof o->ane_fake)
        return nc_fail(err, NC_ERR_RANGE,
                       "%s: the fake device's settings are longer than %zu bytes", what,
                       sizeof o->ane_fake - 1);
    ane_fake_behaviour b;
    if (ane_fake_behaviour_parse(settings, &b, err)) return nc_fail_prefix(err, "%s", what);
    o->ane_device = ENGINE_ANE_FAKE;
    snprintf(o->ane_fake, sizeof o->ane_fake, "%s", settings);
    return NC_OK;
}

void engine_ane_device_help(FILE *f) {
    fprintf(f, "--ane-device real (macOS) | fake | fake:SETTING[:SETTING...]\n");
    ane_fake_behaviour_help(f);
}

nc_status engine_ane_device_open(const engine_options *o, engine_ane_dev *d, nc_error *err) {
    if (o->ane_device == ENGINE_ANE_FAKE) {
        ane_fake_options fo = {ANE_SURFACE_POLICY_DEFAULT, ANE_MAX_IN_FLIGHT, 0, {0}};
        NC_TRY(ane_fake_behaviour_parse(o->ane_fake, &fo.behave, err));
        NC_TRY(ane_fake_new_with(&fo, &d->dev, err));
        d->is_fake = d->is_open = 1;
        /* a fake told other things to refuse is another device in the profile */
        snprintf(d->dev.ladder_device, sizeof d->dev.ladder_device, "fake%s%s",
                 o->ane_fake[0] ? ":" : "", o->ane_fake);
        return ane_ladder_profile_path(1, d->dev.ladder_profile, sizeof d->dev.ladder_profile,
                                       err);
    }
    NC_TRY(engine_ane_real_available(err));
#if defined(__APPLE__)
    NC_TRY(ane_apple_open(NULL, &d->dev, err));
    d->is_open = 1;
    snprintf(d->dev.ladder_device, sizeof d->dev.ladder_device, "real");
    NC_TRY(ane_ladder_profile_path(0, d->dev.ladder_profile, sizeof d->dev.ladder_profile, err));
#endif
    return NC_OK;
}

void engine_ane_device_close(engine_ane_dev *d) {
    if (!d->is_open) return;
    if (d->is_fake) ane_fake_free(&d->dev);
#if defined(__APPLE__)
    if (!d->is_fake) ane_apple_close(&d->dev);
#endif
    d->is_open = 0;
}
