/* The JSON matcher (see json_match.h). Each frame is one open construct:
 * a value not yet begun, an object, an array, a key, a string, a number or
 * a literal. A frame that can only tell it has ended by seeing the next
 * byte (a number, a literal that prefixes another: 1 and 10) pops and lets
 * its parent take that byte. Strings accept valid UTF-8 only and no lone
 * surrogate escapes, so every accepted output decodes and parses. */
#include "gen/json_match.h"

#include <string.h>

enum { FK_VALUE, FK_OBJ, FK_OBJANY, FK_KEY, FK_ARR, FK_STR, FK_NUM, FK_LIT, FK_RAW };
enum { O_OPEN, O_FIRST, O_COLON, O_SP, O_VAL, O_AFTER, O_COMMA, O_KEYQ };
/* the root object in XML call form (xml_root): after '<', inside
 * "<parameter=", the newline after the key's '>', inside "\n</parameter>"
 * after a JSON value, the newline after it, inside "</function>" */
enum { X_LT = O_KEYQ + 1, X_PARAM, X_NL, X_VEND, X_NL2, X_CLOSE };

#define XML_PARAM "<parameter="
#define XML_VEND "\n</parameter>"
#define XML_TAG "</parameter>"
#define XML_CLOSE "</function>"
enum { A_OPEN, A_FIRST, A_AFTER, A_SP, A_VAL };
enum { S_CHAR, S_ESC, S_HEX, S_CONT };
enum { N_START, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
enum { R_REJECT, R_ACCEPT, R_REFEED };

/* Bounds that keep every number readable by any JSON parser: integer
 * parts fit int64 (jansson refuses larger), and two exponent digits keep
 * every value a finite double (at most 1e18 * 1e99). */
#define JM_MAX_NUMBER_BYTES 32
#define JM_MAX_INT_DIGITS 18
#define JM_MAX_EXP_DIGITS 2

/* true/false/null for values of any type (node -1 in a literal frame). */
static const js_lit builtin[3] = {{"false", 5}, {"null", 4}, {"true", 4}};

static const js_lit *lit_list(const jm_grammar *gr, int node, int *n) {
    if (node < 0) {
        *n = 3;
        return builtin;
    }
    const js_node *nd = &gr->g->nodes[node];
    *n = nd->n;
    return gr->g->lits + nd->first;
}

static int is_digit(unsigned char b) {
    return b >= '0' && b <= '9';
}

static int is_hex(unsigned char b) {
    return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

static int push(jm_state *s, uint8_t kind, uint8_t phase, int32_t node) {
    if (s->n == JM_MAX_DEPTH) return 0;
    s->f[s->n++] = (jm_frame){kind, phase, 0, 0, 0, 0, node};
    return 1;
}

/* Could a value of node begin with b? (Unions pick by this.) */
static int can_start(const jm_grammar *gr, int node, unsigned char b, int depth) {
    if (node < 0)
        return b == '{' || b == '[' || b == '"' || b == '-' || is_digit(b) || b == 't' ||
               b == 'f' || b == 'n';
    const js_node *nd = &gr->g->nodes[node];
    switch (nd->kind) {
    case JS_ANY:
        return can_start(gr, -1, b, depth);
    case JS_OBJ_ANY:
    case JS_OBJECT:
        return b == '{';
    case JS_ARRAY:
        return b == '[';
    case JS_STRING:
        return b == '"';
    case JS_NUMBER:
    case JS_INTEGER:
        return b == '-' || is_digit(b);
    case JS_LITERALS:
        for (int i = 0; i < nd->n; i++)
            if ((unsigned char)gr->g->lits[nd->first + i].text[0] == b) return 1;
        return 0;
    case JS_UNION:
        if (depth > 64) return 0;
        for (int i = 0; i < nd->n; i++)
            if (can_start(gr, gr->g->alts[nd->first + i], b, depth + 1)) return 1;
        return 0;
    }
    return 0;
}

/* A value frame turns into the frame of what b begins. */
static int step_value(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    int node = f->node;
    js_kind kind = node < 0 ? JS_ANY : gr->g->nodes[node].kind;
    if (kind == JS_UNION) {
        const js_node *nd = &gr->g->nodes[node];
        for (int i = 0; i < nd->n; i++)
            if (can_start(gr, gr->g->alts[nd->first + i], b, 0)) {
                f->node = gr->g->alts[nd->first + i];
                return R_REFEED;
            }
        return R_REJECT;
    }
    if (kind == JS_ANY) {
        if (b == '{')
            kind = JS_OBJ_ANY;
        else if (b == '[')
            kind = JS_ARRAY, node = -1;
        else if (b == '"')
            kind = JS_STRING;
        else if (b == '-' || is_digit(b))
            kind = JS_NUMBER;
        else if (b == 't' || b == 'f' || b == 'n')
            kind = JS_LITERALS, node = -1;
        else
            return R_REJECT;
    }
    switch (kind) {
    case JS_OBJ_ANY:
        *f = (jm_frame){FK_OBJANY, O_OPEN, 0, 0, 0, 0, node};
        return R_REFEED;
    case JS_OBJECT:
        *f = (jm_frame){FK_OBJ, O_OPEN, 0, 0, 0, 0, node};
        return R_REFEED;
    case JS_ARRAY:
        *f = (jm_frame){FK_ARR, A_OPEN, 0, 0, 0, 0, node};
        return R_REFEED;
    case JS_STRING:
        if (b != '"') return R_REJECT;
        *f = (jm_frame){FK_STR, S_CHAR, 0, 0, 0, 0, node};
        return R_ACCEPT;
    case JS_NUMBER:
    case JS_INTEGER:
        *f = (jm_frame){FK_NUM, N_START, kind == JS_INTEGER, 0, 0, 0, node};
        return R_REFEED;
    case JS_LITERALS:
        *f = (jm_frame){FK_LIT, 0, 0, 0, 0, 0, node};
        return R_REFEED;
    default:
        return R_REJECT;
    }
}

/* The object's properties from index a on: is one of them required? */
static int first_required(const jm_grammar *gr, const js_node *nd, int a) {
    for (int k = a; k < nd->n; k++)
        if (gr->g->props[nd->first + k].is_required) return k;
    return -1;
}

/* The key frame of a property, its window starting after the last one
 * written. */
static int push_key(jm_state *s, const jm_frame *obj) {
    if (!push(s, FK_KEY, 0, obj->node)) return 0;
    s->f[s->n - 1].a = obj->a;
    s->f[s->n - 1].b = obj->a;
    return 1;
}

/* Literal bytes lit[d..]: the frame's d counts those matched. */
static int step_tag(jm_frame *f, const char *lit, unsigned char b, int next_phase) {
    if ((unsigned char)lit[f->d] != b) return R_REJECT;
    if (lit[++f->d] == '\0') f->phase = (uint8_t)next_phase, f->d = 0;
    return R_ACCEPT;
}

/* The root object in Qwen3.5's XML call form (jm_grammar.xml_root). */
static int step_xml_object(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    const js_node *nd = &gr->g->nodes[f->node];
    switch (f->phase) {
    case O_OPEN:
    case O_FIRST:
    case O_AFTER:
        if (b != '<') return R_REJECT;
        f->phase = X_LT;
        return R_ACCEPT;
    case X_LT:
        f->d = 1;
        if (b == 'p' && f->a < nd->n) {
            f->phase = X_PARAM;
            return step_tag(f, XML_PARAM, b, O_COLON);
        }
        if (b == '/' && first_required(gr, nd, f->a) < 0) {
            f->phase = X_CLOSE;
            return step_tag(f, XML_CLOSE, b, X_CLOSE);
        }
        return R_REJECT;
    case X_PARAM:
        return step_tag(f, XML_PARAM, b, O_COLON);
    case O_COLON: /* "<parameter=" is complete: the key, ending in '>' */
        f->phase = X_NL;
        return push_key(s, f) ? R_REFEED : R_REJECT;
    case X_NL: {
        if (b != '\n') return R_REJECT;
        int node = gr->g->props[nd->first + f->c].node;
        int raw = gr->g->nodes[node].kind == JS_STRING;
        f->phase = raw ? X_NL2 : X_VEND;
        f->d = 0;
        return push(s, raw ? FK_RAW : FK_VALUE, 0, node) ? R_ACCEPT : R_REJECT;
    }
    case X_VEND:
        return step_tag(f, XML_VEND, b, X_NL2);
    case X_NL2:
        if (b != '\n') return R_REJECT;
        f->phase = O_AFTER;
        return R_ACCEPT;
    case X_CLOSE:
        if (step_tag(f, XML_CLOSE, b, X_CLOSE) != R_ACCEPT) return R_REJECT;
        if (f->d == 0) s->n--; /* "</function>" complete: the object is */
        return R_ACCEPT;
    }
    return R_REJECT;
}

static int step_object(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    if (gr->xml_root && s->n == 1 && f->kind == FK_OBJ) return step_xml_object(gr, s, b);
    int is_any = f->kind == FK_OBJANY;
    const js_node *nd = is_any ? NULL : &gr->g->nodes[f->node];
    int can_close = is_any || first_required(gr, nd, f->a) < 0;
    int more_keys = is_any || f->a < nd->n;
    switch (f->phase) {
    case O_OPEN:
        if (b != '{') return R_REJECT;
        f->phase = O_FIRST;
        return R_ACCEPT;
    case O_FIRST:
    case O_AFTER:
        if (b == '}' && can_close) {
            s->n--;
            return R_ACCEPT;
        }
        if (f->phase == O_AFTER) {
            if (b != ',' || !more_keys) return R_REJECT;
            f->phase = O_COMMA;
            return R_ACCEPT;
        }
        if (b != '"' || !more_keys) return R_REJECT;
        break; /* a key begins */
    case O_COLON:
        if (b != ':') return R_REJECT;
        f->phase = O_SP;
        return R_ACCEPT;
    case O_SP:
    case O_VAL:
        if (b == ' ' && f->phase == O_SP) {
            f->phase = O_VAL;
            return R_ACCEPT;
        }
        f->phase = O_AFTER;
        if (!push(s, FK_VALUE, 0, is_any ? -1 : gr->g->props[nd->first + f->c].node))
            return R_REJECT;
        return R_REFEED;
    case O_COMMA:
        if (b == ' ') {
            f->phase = O_KEYQ;
            return R_ACCEPT;
        }
        /* fall through */
    case O_KEYQ:
        if (b != '"') return R_REJECT;
        break;
    default:
        return R_REJECT;
    }
    f->phase = O_COLON;
    if (is_any) return push(s, FK_STR, S_CHAR, -1) ? R_ACCEPT : R_REJECT;
    if (!push(s, FK_KEY, 0, f->node)) return R_REJECT;
    s->f[s->n - 1].a = f->a; /* the key window starts at the next property */
    s->f[s->n - 1].b = f->a;
    return R_ACCEPT;
}

/* A key of a schema object: one of the properties from the window start up
 * to the next required one, matched against the candidates' texts. */
static int step_key(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    const js_node *nd = &gr->g->nodes[f->node];
    int last = first_required(gr, nd, f->a);
    if (last < 0) last = nd->n - 1;
    const js_prop *cur = &gr->g->props[nd->first + f->b];
    int xml = gr->xml_root && s->n == 2; /* <parameter=KEY>: '>' ends it, not '"' */
    for (int k = f->b; k <= last; k++) {
        const js_prop *p = &gr->g->props[nd->first + k];
        if (p->key_len <= f->c || memcmp(p->key, cur->key, f->c) != 0) continue;
        unsigned char want = xml && (size_t)f->c + 1 == p->key_len ? '>' : (unsigned char)p->key[f->c];
        if (want != b) continue;
        f->b = (uint16_t)k;
        f->c++;
        if (f->c == p->key_len) { /* the closing quote: keys are prefix-free */
            jm_frame *obj = &s->f[s->n - 2];
            obj->c = (uint16_t)k;
            obj->a = (uint16_t)(k + 1);
            s->n--;
        }
        return R_ACCEPT;
    }
    return R_REJECT;
}

static int step_array(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    const js_node *nd = f->node < 0 ? NULL : &gr->g->nodes[f->node];
    int min = nd ? nd->min_items : 0, max = nd ? nd->max_items : -1;
    int child = nd ? nd->child : -1;
    switch (f->phase) {
    case A_OPEN:
        if (b != '[') return R_REJECT;
        f->phase = A_FIRST;
        return R_ACCEPT;
    case A_FIRST:
    case A_AFTER:
        if (b == ']' && f->a >= min) {
            s->n--;
            return R_ACCEPT;
        }
        if (f->phase == A_AFTER) {
            if (b != ',' || (max >= 0 && f->a >= max)) return R_REJECT;
            f->phase = A_SP;
            return R_ACCEPT;
        }
        if (max == 0) return R_REJECT;
        break;
    case A_SP:
        if (b == ' ') {
            f->phase = A_VAL;
            return R_ACCEPT;
        }
        break;
    case A_VAL:
        break;
    default:
        return R_REJECT;
    }
    f->phase = A_AFTER;
    f->a++;
    return push(s, FK_VALUE, 0, child) ? R_REFEED : R_REJECT;
}

/* Begins a UTF-8 character at lead byte b: the continuation bytes left
 * (c) and the allowed range of the next (b: lo in the low byte, hi in the
 * high one); 0 for a byte no valid character starts with. */
static int utf8_lead(jm_frame *f, unsigned char b) {
    if (b >= 0xC2 && b <= 0xDF)
        f->c = 1, f->b = 0xBF80;
    else if (b == 0xE0)
        f->c = 2, f->b = 0xBFA0;
    else if (b == 0xED)
        f->c = 2, f->b = 0x9F80;
    else if (b >= 0xE1 && b <= 0xEF)
        f->c = 2, f->b = 0xBF80;
    else if (b == 0xF0)
        f->c = 3, f->b = 0xBF90;
    else if (b >= 0xF1 && b <= 0xF3)
        f->c = 3, f->b = 0xBF80;
    else if (b == 0xF4)
        f->c = 3, f->b = 0x8F80;
    else
        return 0;
    return 1;
}

/* b = the allowed range of the next UTF-8 continuation byte (lo in the
 * low byte, hi in the high one), c = continuation bytes left, d = the
 * characters so far (minLength/maxLength of a schema string). */
static int step_string(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    const js_node *nd = f->node >= 0 ? &gr->g->nodes[f->node] : NULL;
    int min = nd && nd->kind == JS_STRING ? nd->min_items : 0;
    int max = nd && nd->kind == JS_STRING ? nd->max_items : -1;
    switch (f->phase) {
    case S_CHAR:
        if (b == '"') {
            if (f->d < min) return R_REJECT;
            s->n--;
            return R_ACCEPT;
        }
        if (max >= 0 && f->d >= max) return R_REJECT;
        f->d++; /* a character begins (counted whole: escapes, UTF-8) */
        if (b == '\\') {
            f->phase = S_ESC;
            return R_ACCEPT;
        }
        if (b < 0x20) return R_REJECT;
        if (b < 0x80) return R_ACCEPT;
        if (!utf8_lead(f, b)) return R_REJECT;
        f->phase = S_CONT;
        return R_ACCEPT;
    case S_CONT:
        if (b < (f->b & 0xff) || b > (f->b >> 8)) return R_REJECT;
        f->b = 0xBF80;
        if (--f->c == 0) f->phase = S_CHAR;
        return R_ACCEPT;
    case S_ESC:
        if (b == 'u') {
            f->phase = S_HEX;
            f->a = 0;
            return R_ACCEPT;
        }
        if (!strchr("\"\\/bfnrt", b) || !b) return R_REJECT;
        f->phase = S_CHAR;
        return R_ACCEPT;
    case S_HEX:
        if (!is_hex(b)) return R_REJECT;
        /* No surrogates: \uD800-\uDFFF alone would not decode everywhere. */
        if (f->a == 1 && (f->c == 'd' || f->c == 'D') && !(is_digit(b) && b <= '7'))
            return R_REJECT;
        f->c = b;
        if (++f->a == 4) f->phase = S_CHAR, f->c = 0;
        return R_ACCEPT;
    }
    return R_REJECT;
}

/* A raw string value of the XML call form, up to and with the
 * "\n</parameter>" that ends it: valid UTF-8, no control bytes but tab,
 * newline and carriage return, and never "</parameter>" inside (the
 * scanner would end the value there). phase = bytes of "</parameter>"
 * matched, a = bytes of "\n</parameter>" matched, d = characters so far,
 * those of a partly matched end included (minLength/maxLength count the
 * rest). */
static int step_raw(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    const js_node *nd = &gr->g->nodes[f->node];
    if (f->c) { /* inside a UTF-8 character */
        if (b < (f->b & 0xff) || b > (f->b >> 8)) return R_REJECT;
        f->b = 0xBF80;
        f->c--;
        f->phase = 0;
        f->a = 0;
        return R_ACCEPT;
    }
    if (b < 0x20 && b != '\t' && b != '\n' && b != '\r') return R_REJECT;
    if (b >= 0x80 && !utf8_lead(f, b)) return R_REJECT;
    f->d++;
    const int end_len = (int)sizeof XML_VEND - 1, tag_len = (int)sizeof XML_TAG - 1;
    int a = (unsigned char)XML_VEND[f->a] == b ? f->a + 1 : b == '\n';
    int t = (unsigned char)XML_TAG[f->phase] == b ? f->phase + 1 : b == '<';
    if (a == end_len) { /* the end: the value is the characters before it */
        if (f->d - end_len < nd->min_items) return R_REJECT;
        s->n--;
        return R_ACCEPT;
    }
    if (t == tag_len) return R_REJECT;
    if (nd->max_items >= 0 && f->d - a > nd->max_items) return R_REJECT;
    f->a = (uint16_t)a;
    f->phase = (uint8_t)t;
    return R_ACCEPT;
}

static int number_is_final(uint8_t phase) {
    return phase == N_ZERO || phase == N_INT || phase == N_FRAC || phase == N_EXP;
}

static int step_number(jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    int is_int = f->a, room = f->b < JM_MAX_NUMBER_BYTES;
    int next = -1;
    switch (f->phase) {
    case N_START:
        next = b == '-' ? N_SIGN : b == '0' ? N_ZERO : is_digit(b) ? N_INT : -1;
        break;
    case N_SIGN:
        next = b == '0' ? N_ZERO : is_digit(b) ? N_INT : -1;
        break;
    case N_ZERO:
    case N_INT:
        if (is_digit(b) && f->phase == N_INT)
            next = N_INT;
        else if (b == '.' && !is_int)
            next = N_DOT;
        else if ((b == 'e' || b == 'E') && !is_int)
            next = N_E;
        break;
    case N_DOT:
        next = is_digit(b) ? N_FRAC : -1;
        break;
    case N_FRAC:
        next = is_digit(b) ? N_FRAC : (b == 'e' || b == 'E') && !is_int ? N_E : -1;
        break;
    case N_E:
        next = b == '+' || b == '-' ? N_ESIGN : is_digit(b) ? N_EXP : -1;
        break;
    case N_ESIGN:
    case N_EXP:
        next = is_digit(b) ? N_EXP : -1;
        break;
    }
    /* c counts the digits of the current part (integer or exponent). */
    if (next == N_INT && f->phase == N_INT && f->c >= JM_MAX_INT_DIGITS) next = -1;
    if (next == N_EXP && f->phase == N_EXP && f->c >= JM_MAX_EXP_DIGITS) next = -1;
    /* A byte that leaves the number unfinished ('-', '.', 'e', a sign)
     * needs room for one more after it: taking it as the last byte the
     * bound allows would leave a number nothing can finish (a dead end the
     * fuzzer found: 0.000...0E at the 32nd byte). */
    if (next >= 0 && !number_is_final((uint8_t)next) && f->b + 1 >= JM_MAX_NUMBER_BYTES) next = -1;
    if (next >= 0 && room) {
        f->c = next == f->phase ? f->c + 1 : (next == N_INT || next == N_EXP);
        f->phase = (uint8_t)next;
        f->b++;
        return R_ACCEPT;
    }
    if (!number_is_final(f->phase)) return R_REJECT;
    s->n--;
    return R_REFEED;
}

/* Some candidate in lits[from..n) shares text[0..pos) with cand and is
 * exactly pos long (complete) / longer (could continue). */
static int lit_has(const js_lit *l, int n, int cand, int pos, int want_longer) {
    for (int k = cand; k < n; k++) {
        if (l[k].len < (size_t)pos || memcmp(l[k].text, l[cand].text, (size_t)pos) != 0) continue;
        if (want_longer ? l[k].len > (size_t)pos : l[k].len == (size_t)pos) return 1;
    }
    return 0;
}

static int step_literal(const jm_grammar *gr, jm_state *s, unsigned char b) {
    jm_frame *f = &s->f[s->n - 1];
    int n;
    const js_lit *l = lit_list(gr, f->node, &n);
    for (int k = f->b; k < n; k++) {
        if (l[k].len <= f->c || (unsigned char)l[k].text[f->c] != b ||
            memcmp(l[k].text, l[f->b].text, f->c) != 0)
            continue;
        f->b = (uint16_t)k;
        f->c++;
        if (l[k].len == f->c && !lit_has(l, n, k, f->c, 1)) s->n--; /* nothing longer: done */
        return R_ACCEPT;
    }
    if (f->c > 0 && lit_has(l, n, f->b, f->c, 0)) { /* complete; b belongs to the parent */
        s->n--;
        return R_REFEED;
    }
    return R_REJECT;
}

/* After the prefix: the value, or with no graph anything (JM_STAGE_FREE). */
static void begin_value(const jm_grammar *gr, jm_state *s) {
    s->pos = 0;
    if (!gr->g) {
        s->stage = JM_STAGE_FREE;
        return;
    }
    s->stage = 1;
    push(s, FK_VALUE, 0, gr->g->root);
}

void jm_start(const jm_grammar *gr, jm_state *s) {
    s->stage = 0;
    s->pos = 0;
    s->n = 0;
    if (!gr->prefix_len) begin_value(gr, s);
}

int jm_feed(const jm_grammar *gr, jm_state *s, unsigned char b) {
    for (;;) {
        if (s->stage == JM_STAGE_FREE) return 1;
        if (s->stage == 0) {
            if ((unsigned char)gr->prefix[s->pos] != b) return 0;
            if (++s->pos == gr->prefix_len) begin_value(gr, s);
            return 1;
        }
        if (s->stage == 1 && s->n == 0) s->stage = 2, s->pos = 0;
        if (s->stage >= 2) {
            if (s->pos >= gr->suffix_len || (unsigned char)gr->suffix[s->pos] != b) return 0;
            s->pos++;
            return 1;
        }
        int r;
        switch (s->f[s->n - 1].kind) {
        case FK_VALUE:
            r = step_value(gr, s, b);
            break;
        case FK_OBJ:
        case FK_OBJANY:
            r = step_object(gr, s, b);
            break;
        case FK_KEY:
            r = step_key(gr, s, b);
            break;
        case FK_ARR:
            r = step_array(gr, s, b);
            break;
        case FK_STR:
            r = step_string(gr, s, b);
            break;
        case FK_NUM:
            r = step_number(s, b);
            break;
        case FK_RAW:
            r = step_raw(gr, s, b);
            break;
        default:
            r = step_literal(gr, s, b);
            break;
        }
        if (r == R_REJECT) return 0;
        if (r == R_ACCEPT) {
            if (s->stage == 1 && s->n == 0) s->stage = 2, s->pos = 0;
            return 1;
        }
    }
}

int jm_can_end(const jm_grammar *gr, const jm_state *s) {
    if (s->stage == JM_STAGE_FREE) return 1;
    if (s->stage == 0) return 0;
    int n = s->n;
    /* A number or literal at the top ends with the output. */
    while (n > 0) {
        const jm_frame *f = &s->f[n - 1];
        int ends = 0;
        if (f->kind == FK_NUM) ends = number_is_final(f->phase);
        if (f->kind == FK_LIT) {
            int nl;
            const js_lit *l = lit_list(gr, f->node, &nl);
            ends = f->c > 0 && lit_has(l, nl, f->b, f->c, 0);
        }
        if (!ends) break;
        n--;
    }
    if (n > 0) return 0;
    size_t pos = s->stage >= 2 ? s->pos : 0;
    return pos == gr->suffix_len;
}
