/* The ANE engines' device (engine_ane_device.h). */
#include "engine/engine_ane_device.h"

#include "ane_host/ane_fake.h"
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

nc_status engine_ane_device_open(engine_ane_device which, engine_ane_dev *d, nc_error *err) {
    if (which == ENGINE_ANE_FAKE) {
        NC_TRY(ane_fake_new(&d->dev, err));
        d->is_fake = d->is_open = 1;
        return NC_OK;
    }
    NC_TRY(engine_ane_real_available(err));
#if defined(__APPLE__)
    NC_TRY(ane_apple_open(NULL, &d->dev, err));
    d->is_open = 1;
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
