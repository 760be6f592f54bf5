/* Bundling: turns a .mil file found anywhere (with the weight files its
 * BLOBFILEs name, relative to the file's folder) into a fresh model folder
 * laid out as Apple's compiler expects: DIR/model.mil and DIR/weights/NAME.bin
 * (the first file as weight.bin), with every BLOBFILE path rewritten to
 * @model_path/weights/<name>. The written bundle is parsed again and every
 * blob reference validated before it is declared done. */
#ifndef NC_MIL_BUNDLE_H
#define NC_MIL_BUNDLE_H

#include "mil/ir.h"

#define MIL_BUNDLE_MAX_FILES 16

typedef struct mil_bundle_report {
    int n_files;                           /* weight files copied */
    char from[MIL_BUNDLE_MAX_FILES][1024]; /* their resolved source paths */
    char to[MIL_BUNDLE_MAX_FILES][64];     /* their names under weights/ */
    int n_blob_refs;                       /* BLOBFILE references checked */
} mil_bundle_report;

/* out_dir must not exist yet (a fresh folder); on failure it is removed. */
nc_status mil_bundle(const char *mil_path, const char *out_dir, mil_bundle_report *report,
                     nc_error *err);

/* Every BLOBFILE reference of prog read and validated against its type;
 * *n_refs receives how many there were. */
nc_status mil_program_check_blobs(const mil_program *prog, int *n_refs, nc_error *err);

#endif
