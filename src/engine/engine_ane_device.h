/* The Neural Engine device an ANE engine runs on, as engine_options names
 * it: the real one (src/ane, macOS only) or the fake one backed by the MIL
 * interpreter (every OS). One place for the choice, shared by the Qwen3
 * and encoder ANE engines. */
#ifndef NC_ENGINE_ENGINE_ANE_DEVICE_H
#define NC_ENGINE_ENGINE_ANE_DEVICE_H

#include "ane_host/ane_device.h"
#include "engine/engine.h"

typedef struct engine_ane_dev {
    ane_device dev;
    int is_open, is_fake;
} engine_ane_dev;

/* Opens the device; a real one off macOS fails in one line
 * (engine_ane_real_available). */
nc_status engine_ane_device_open(engine_ane_device which, engine_ane_dev *d, nc_error *err);
/* Safe on a device that did not open. */
void engine_ane_device_close(engine_ane_dev *d);

#endif
