/* The typing rule of XML call values (tool_value.h). */
#include "gen/tool_value.h"

#include <string.h>

typedef enum value_kind {
    VALUE_INTEGER,
    VALUE_NUMBER,
    VALUE_WORD,
    VALUE_OBJECT,
    VALUE_ARRAY
} value_kind;

/* The schema types read as JSON; any other (string, none, unknown) is text. */
static const struct {
    const char *type;
    value_kind kind;
} json_types[] = {{"integer", VALUE_INTEGER}, {"number", VALUE_NUMBER}, {"boolean", VALUE_WORD},
                  {"null", VALUE_WORD},       {"object", VALUE_OBJECT}, {"array", VALUE_ARRAY}};

/* The kind of type's values, or -1 when they stay text. */
static int kind_of(const char *type) {
    for (size_t i = 0; i < sizeof json_types / sizeof *json_types; i++)
        if (!strcmp(type, json_types[i].type)) return (int)json_types[i].kind;
    return -1;
}

const char *gen_tool_value_type(const json_t *params, const char *key) {
    const json_t *t =
        json_object_get(json_object_get(json_object_get(params, "properties"), key), "type");
    return json_is_string(t) ? json_string_value(t) : "";
}

int gen_tool_value_is_json(const char *type) {
    return kind_of(type) >= 0;
}

/* true, false, null, or Python's True, False, None: the value, else NULL. */
static json_t *word(const char *v, size_t n) {
    static const struct {
        const char *text;
        int kind; /* 0 false, 1 true, 2 null */
    } words[] = {{"true", 1}, {"True", 1}, {"false", 0}, {"False", 0}, {"null", 2}, {"None", 2}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i].text) == n && !memcmp(words[i].text, v, n))
            return words[i].kind == 2 ? json_null() : json_boolean(words[i].kind);
    return NULL;
}

json_t *gen_tool_value_read(const char *type, const char *v, size_t n) {
    int kind = kind_of(type);
    json_t *j = NULL;
    if (kind == VALUE_WORD) {
        j = word(v, n);
    } else if (kind >= 0) {
        json_error_t je;
        j = json_loadb(v, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        int fits = kind == VALUE_OBJECT    ? json_is_object(j)
                   : kind == VALUE_ARRAY   ? json_is_array(j)
                   : kind == VALUE_INTEGER ? json_is_integer(j)
                                           : json_is_number(j);
        if (!fits) {
            json_decref(j);
            j = NULL;
        }
    }
    return j ? j : json_stringn(v, n);
}
