/* Inside the public API: what an nc_sampling holds (the sampler parameters
 * of src/gen, the stop strings, the truncation policy), read by nc_generate. */
#ifndef NC_API_SAMPLING_H
#define NC_API_SAMPLING_H

#include "gen/sampler.h"
#include "nectar.h"

#define API_MAX_STOPS 16

struct nc_sampling {
    gen_sampler_params params;
    char *stops[API_MAX_STOPS];
    int n_stops;
    int truncate; /* a prompt longer than the context loses its oldest tokens */
};

#endif
