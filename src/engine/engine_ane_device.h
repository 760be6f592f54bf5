/* The Neural Engine device an ANE engine runs on, as engine_options names
 * it: the real one (src/ane, macOS only) or the fake one backed by the MIL
 * interpreter (every OS), told what to refuse ("fake:reject=gather,...",
 * ane_fake_rules.h). One place for the choice, shared by the decoder and
 * encoder ANE engines, the command line and the API. */
#ifndef NC_ENGINE_ENGINE_ANE_DEVICE_H
#define NC_ENGINE_ENGINE_ANE_DEVICE_H

#include <stdio.h>

#include "ane_host/ane_device.h"
#include "engine/engine.h"

typedef struct engine_ane_dev {
    ane_device dev;
    int is_open, is_fake;
} engine_ane_dev;

/* A device name as --ane-device, NECTAR_ANE_DEVICE and the API's
 * ane_device= give it: "real", "fake" or "fake:SETTING[:SETTING...]";
 * fills o->ane_device and o->ane_fake. A bad name or setting fails in one
 * line naming it; `what` prefixes the message. */
nc_status engine_ane_device_parse(const char *text, const char *what, engine_options *o,
                                  nc_error *err);
/* The fake device's settings and rules, for `--ane-device help`. */
void engine_ane_device_help(FILE *f);

/* Opens o's device; a real one off macOS fails in one line
 * (engine_ane_real_available). */
nc_status engine_ane_device_open(const engine_options *o, engine_ane_dev *d, nc_error *err);
/* Safe on a device that did not open. */
void engine_ane_device_close(engine_ane_dev *d);

#endif
