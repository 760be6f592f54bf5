/* The real Neural Engine behind the ane_device interface
 * (src/ane_host/ane_device.h), through Apple's private
 * AppleNeuralEngine.framework: the file path of the reference (§6.2) --
 * _ANEModel modelAtURL:key: on the bundle's program folder, _ANEClient
 * compile / load / evaluate / unload, _ANERequest with IOSurface-backed
 * _ANEIOSurfaceObject buffers bound by symbol index, and completion
 * handlers for asynchronous submission.
 *
 * macOS on Apple silicon only; compiled only on Darwin. WRITTEN TO THE
 * DOCUMENTED FACTS AND NEVER RUN ON A DEVICE BY THIS PROJECT: see
 * docs/ane-bridge.md for what is verified and what is not. */
#ifndef NC_ANE_ANE_APPLE_H
#define NC_ANE_ANE_APPLE_H

#include "ane_host/ane_device.h"

#define ANE_FRAMEWORK_PATH                                                                         \
    "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine"

typedef struct ane_apple_options {
    unsigned qos; /* 0: 21, QOS_CLASS_DEFAULT, what every public project passes */
    /* The surface policy the host follows (ane_device.surfaces); NULL:
     * ANE_SURFACE_POLICY_DEFAULT (uniform sizes per request, 48 KB minimum:
     * Orion's constraints #2, #4, #12), until a probe of the chip says
     * otherwise. Every surface is also rounded up to its min_bytes here. */
    const ane_surface_policy *surfaces;
    /* Without `surfaces`: the probe profile that chooses the policy and the
     * preferred run mode (ane_probe_choose); NULL: <per-user cache>/
     * nectar-ane/profile.json when `nectar ane probe` saved one there. */
    const char *profile;
    int max_in_flight; /* 0: ANE_MAX_IN_FLIGHT */
    /* Where program folders are copied for the daemon (NULL: the per-user
     * cache dir, ane_stage_default_root). */
    const char *cache_root;
} ane_apple_options;

/* Loads the framework, checks every selector's type encoding, connects to
 * the ANE daemon (_ANEClient sharedConnection). opt may be NULL. */
nc_status ane_apple_open(const ane_apple_options *opt, ane_device *out, nc_error *err);
void ane_apple_close(ane_device *dev);

#endif
