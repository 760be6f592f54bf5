/* Inside the engine layer: each backend's open functions (engine.c's
 * table: one for every decoder family, one for the encoder). An open function
 * fills the engine engine_open allocated (ops, impl and the shape fields;
 * kind and family are set before it runs);
 * on failure it may leave impl set: engine_open then calls ops->close. */
#ifndef NC_ENGINE_ENGINES_H
#define NC_ENGINE_ENGINES_H

#include "engine/engine.h"

typedef nc_status (*engine_open_fn)(const char *dir, const engine_options *opt, engine *e,
                                    nc_error *err);

/* Every decoder family on the CPU: the family row's decoder (engine_cpu.c). */
nc_status engine_open_decoder_cpu(const char *dir, const engine_options *opt, engine *e,
                                  nc_error *err);
/* Every decoder family's bundle (nectar compile): in the MIL interpreter
 * (engine_bundle_mil.c), on an ANE device (engine_bundle_ane.c). */
nc_status engine_open_bundle_mil(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err);
nc_status engine_open_bundle_ane(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err);
nc_status engine_open_modernbert_cpu(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_modernbert_mil(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_modernbert_ane(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_script(const char *dir, const engine_options *opt, engine *e, nc_error *err);

/* Copies up to ENGINE_MAX_EOS distinct ids. */
void engine_set_eos(engine *e, const int32_t *ids, int n);

#endif
