/* A private temporary folder for the fuzz targets that go through nectar's
 * own file openers (a model folder, a weight file next to a program): the
 * input is written there as the file the opener expects, so the run takes
 * the same path as a real folder. Header-only, since each target is linked
 * alone (libFuzzer) or with driver.c (make test). The folder and what is in
 * it are removed at exit. */
#ifndef NC_TESTS_FUZZ_FILES_H
#define NC_TESTS_FUZZ_FILES_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[64];

static inline void fuzz_dir_cleanup(void) {
    DIR *d = opendir(fuzz_dir_path);
    if (d) {
        struct dirent *e;
        char path[sizeof fuzz_dir_path + 256];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", fuzz_dir_path, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(fuzz_dir_path);
}

/* The folder, made on first use (a failure aborts: the target cannot run). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s", "/tmp/nectar-fuzz.XXXXXX");
        if (!mkdtemp(fuzz_dir_path)) abort();
        atexit(fuzz_dir_cleanup);
    }
    return fuzz_dir_path;
}

/* "<folder>/name" into buf (cap >= 128). */
static inline const char *fuzz_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", fuzz_dir(), name);
    return buf;
}

/* Writes n bytes as <folder>/name; aborts when the write fails. The old
 * file is removed first: rewriting a file in place (truncate, write) makes
 * ext4 flush it to disk on close, some milliseconds per input. */
static inline void fuzz_write_file(const char *name, const void *p, size_t n) {
    char path[256];
    unlink(fuzz_path(path, sizeof path, name));
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    if (fclose(f) != 0 || w != n) abort();
}

/* Removes <folder>/name if present. */
static inline void fuzz_remove_file(const char *name) {
    char path[256];
    unlink(fuzz_path(path, sizeof path, name));
}

#endif
