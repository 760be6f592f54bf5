/* What `nectar ane probe` and `nectar ane doctor` share (cmd_ane.c). */
#ifndef NC_TOOLS_CMD_ANE_H
#define NC_TOOLS_CMD_ANE_H

#include <jansson.h>
#include <stddef.h>

#include "ane_host/ane_probe.h"

/* The chip and the OS, in words. */
void ane_machine(char *chip, size_t cc, char *os, size_t oc);
/* Runs the probe on device "fake" or "real" (off macOS: one-line refusal). */
nc_status ane_run_probe(const char *device, const char *work, int small, int repeats,
                        ane_probe_result **res, int *n, nc_error *err);
/* The probe's JSON: version, device, chip, OS, date and the cases. */
json_t *ane_probe_json(const ane_probe_result *r, int n, const char *device);
/* Copies the compile ladder's members of the profile at prof into doc. */
void ane_keep_ladder(json_t *doc, const char *prof);
/* Writes root (indented) to path atomically; 0, or the CLI's failure code. */
int ane_write_json(json_t *root, const char *path);

int cmd_ane_doctor(int argc, char **argv);

#endif
