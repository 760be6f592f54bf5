/* Inside the engine layer: each kind's open function (one row each in
 * engine.c's table) and what the bundle engines share. An open function
 * fills the engine engine_open allocated (ops, impl and the shape fields;
 * kind and family are set before it runs);
 * on failure it may leave impl set: engine_open then calls ops->close. */
#ifndef NC_ENGINE_ENGINES_H
#define NC_ENGINE_ENGINES_H

#include "engine/engine.h"
#include "bundle/manifest.h"
#include "models/qwen3.h"

typedef nc_status (*engine_open_fn)(const char *dir, const engine_options *opt, engine *e,
                                    nc_error *err);

/* Every decoder family on the CPU: the family row's decoder (engine_cpu.c). */
nc_status engine_open_decoder_cpu(const char *dir, const engine_options *opt, engine *e,
                                  nc_error *err);
nc_status engine_open_qwen35_mil(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err);
nc_status engine_open_qwen3_mil(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err);
nc_status engine_open_qwen3_ane(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err);
nc_status engine_open_qwen35_ane(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err);
nc_status engine_open_modernbert_cpu(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_modernbert_mil(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_modernbert_ane(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err);
nc_status engine_open_script(const char *dir, const engine_options *opt, engine *e, nc_error *err);

/* The shape fields of a Qwen3 bundle engine from its manifest; fails when
 * opt->ctx asks for another context than the bundle was compiled for. */
nc_status engine_bundle_fill(engine *e, const char *dir, const lower_manifest *man,
                             const engine_options *opt, nc_error *err);

/* Copies up to ENGINE_MAX_EOS distinct ids. */
void engine_set_eos(engine *e, const int32_t *ids, int n);

#endif
