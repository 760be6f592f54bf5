/* A byte-at-a-time matcher for "prefix, one JSON value of a schema graph
 * (json_schema.h), suffix" (the root object may instead take Qwen3.5's XML
 * call form: xml_root), or "prefix, then anything" when there is no
 * graph (a forced start, as of a Qwen3.5 tool call, whose XML body is not
 * JSON): the automaton behind constrained sampling.
 * Its state is a small stack of frames, copied by value, so the vocabulary
 * mask (token_mask.h) can try every token from the same state. Output it
 * accepts is compact JSON (one optional space after ':' and ','), with
 * object properties in schema order. */
#ifndef NC_GEN_JSON_MATCH_H
#define NC_GEN_JSON_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gen/json_schema.h"

#define JM_MAX_DEPTH 48

typedef struct jm_frame {
    uint8_t kind, phase;
    uint16_t a, b, c; /* per kind: property window, literal candidate, counts */
    uint16_t d;       /* strings: characters so far */
    int32_t node;
} jm_frame;

#define JM_STAGE_FREE 4

typedef struct jm_state {
    uint16_t stage; /* 0: prefix, 1: value, 2: suffix, 3: done, JM_STAGE_FREE: past the
                     * prefix with no graph: any byte */
    uint16_t pos;   /* into the prefix or suffix */
    int n;          /* frames */
    jm_frame f[JM_MAX_DEPTH];
} jm_state;

typedef struct jm_grammar {
    const js_graph *g;           /* borrowed; NULL: anything after the prefix */
    const char *prefix, *suffix; /* literal bytes around the value ("" for none) */
    size_t prefix_len, suffix_len;
    /* The root object in Qwen3.5's XML call form instead of JSON: each
     * property "<parameter=KEY>\nVALUE\n</parameter>\n", then
     * "</function>"; a string value is raw text (it cannot hold
     * "</parameter>"), an enum of strings unquoted (the graph's literals
     * must be stored so: gen/out_constraint.c), any other value JSON. Keys
     * must be plain names (no escapes, '<' or '>'). */
    int xml_root;
} jm_grammar;

void jm_start(const jm_grammar *gr, jm_state *s);

/* Feeds one byte; returns 1 and advances s when the byte can continue the
 * output, else 0 (s is then unspecified: feed copies). */
int jm_feed(const jm_grammar *gr, jm_state *s, unsigned char b);

/* 1 when the output may end here (the value and the suffix are complete). */
int jm_can_end(const jm_grammar *gr, const jm_state *s);

/* Copies the live part of a state. */
static inline void jm_copy(jm_state *dst, const jm_state *src) {
    dst->stage = src->stage;
    dst->pos = src->pos;
    dst->n = src->n;
    for (int i = 0; i < src->n; i++)
        dst->f[i] = src->f[i];
}

#endif
