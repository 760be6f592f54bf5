/* Stop strings: hand-written streams with the exact text expected after each
 * piece (held back while a prefix matches, released when it fails), then
 * random streams over a tiny alphabet checked against the plain definition:
 * the text is cut where the first stop string to complete begins. */
#include "../test.h"
#include "gen/rng.h"
#include "gen/stop.h"

/* Pushes each piece; `expect` lists the text released after each push (one
 * per piece) and then what flush releases. Returns 1 on success. */
static int run_stream(const char *const *stops, int n_stops, const char *const *pieces,
                      int n_pieces, const char *const *expect, int expect_matched_at) {
    gen_stop s;
    nc_error err;
    if (gen_stop_init(&s, stops, n_stops, &err) != NC_OK) return 0;
    int ok = 1, matched_at = -1;
    for (int i = 0; i < n_pieces && ok; i++) {
        const char *out;
        size_t len;
        int r = gen_stop_push(&s, pieces[i], strlen(pieces[i]), &out, &len, &err);
        if (r == 1 && matched_at < 0) matched_at = i;
        if (len != strlen(expect[i]) || (len && memcmp(out, expect[i], len))) {
            printf("  piece %d '%s': released '%.*s', expected '%s'\n", i, pieces[i], (int)len, out,
                   expect[i]);
            ok = 0;
        }
    }
    if (ok) {
        const char *out;
        size_t len;
        gen_stop_flush(&s, &out, &len);
        if (len != strlen(expect[n_pieces]) || (len && memcmp(out, expect[n_pieces], len))) {
            printf("  flush released '%.*s', expected '%s'\n", (int)len, out, expect[n_pieces]);
            ok = 0;
        }
    }
    if (matched_at != expect_matched_at) {
        printf("  matched at piece %d, expected %d\n", matched_at, expect_matched_at);
        ok = 0;
    }
    gen_stop_free(&s);
    return ok;
}

static void test_stop_string_spanning_tokens(void) {
    const char *stops[] = {"\n\nUser:"};
    const char *pieces[] = {"Hello", " world", "\n", "\nUs", "er", ":", " more"};
    const char *expect[] = {"Hello", " world", "", "", "", "", "", ""};
    CHECK(run_stream(stops, 1, pieces, 7, expect, 5));
}

static void test_partial_match_released_when_it_fails(void) {
    const char *stops[] = {"</end>"};
    const char *pieces[] = {"a</e", "nd", "x", "b", "</", "en"};
    const char *expect[] = {"a", "", "</endx", "b", "", "", "</en"};
    CHECK(run_stream(stops, 1, pieces, 6, expect, -1));
}

static void test_overlapping_prefix_aab_in_aaab(void) {
    const char *stops[] = {"aab"};
    const char *pieces[] = {"a", "a", "a", "b", "tail"};
    const char *expect[] = {"", "", "a", "", "", ""};
    CHECK(run_stream(stops, 1, pieces, 5, expect, 3));
    /* the whole text in one piece */
    const char *one[] = {"xaaab"};
    const char *expect_one[] = {"xa", ""};
    CHECK(run_stream(stops, 1, one, 1, expect_one, 0));
}

static void test_first_completed_of_several_stops_wins(void) {
    const char *stops[] = {"world", "lo w", "o"};
    const char *pieces[] = {"hel", "lo world"};
    /* "l" is held as a prefix of "lo w"; then "o" (ending at 5) completes
     * before "lo w" (ending at 7) and "world" would: cut before the "o" */
    const char *expect[] = {"he", "ll", ""};
    CHECK(run_stream(stops, 3, pieces, 2, expect, 1));
}

/* Two stop strings completing on the same byte: the cut is where the one
 * that starts first begins, whatever their order in the request and
 * however the text is split ("abc" and "bc" both end at the "c"). */
static void test_same_end_tie_goes_to_the_earlier_start(void) {
    const char *orders[2][2] = {{"bc", "abc"}, {"abc", "bc"}};
    for (int o = 0; o < 2; o++) {
        const char *one[] = {"xabcy"};
        const char *expect_one[] = {"x", ""};
        CHECKF(run_stream(orders[o], 2, one, 1, expect_one, 0), "order %d, one piece", o);
        const char *bytes[] = {"x", "a", "b", "c", "y"};
        const char *expect_bytes[] = {"x", "", "", "", "", ""};
        CHECKF(run_stream(orders[o], 2, bytes, 5, expect_bytes, 3), "order %d, byte by byte", o);
    }
}

static void test_no_stops_passes_through_and_utf8_stop(void) {
    const char *pieces[] = {"α", "β"};
    const char *expect[] = {"α", "β", ""};
    CHECK(run_stream(NULL, 0, pieces, 2, expect, -1));
    const char *stops[] = {"βγ"};
    const char *p2[] = {"αβ", "δ", "β", "γ"};
    const char *e2[] = {"α", "βδ", "", "", ""};
    CHECK(run_stream(stops, 1, p2, 4, e2, 3));
}

static void test_empty_stop_string_rejected(void) {
    gen_stop s;
    nc_error err;
    const char *stops[] = {"ok", ""};
    CHECK(gen_stop_init(&s, stops, 2, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "stop string 2 is empty"));
}

/* The definition read off the whole text: find the first position where
 * some stop string ends; cut at the start of the longest one ending there. */
static size_t oracle_cut(const char *text, size_t len, const char *const *stops, int n) {
    for (size_t end = 1; end <= len; end++) {
        size_t cut = len;
        for (int i = 0; i < n; i++) {
            size_t m = strlen(stops[i]);
            if (m <= end && !memcmp(text + end - m, stops[i], m) && end - m < cut) cut = end - m;
        }
        if (cut < len) return cut;
    }
    return len;
}

static void test_random_streams_match_plain_definition(void) {
    const char *stops[] = {"aab", "abab", "ba"};
    gen_rng r;
    gen_rng_seed(&r, 99);
    for (int trial = 0; trial < 3000; trial++) {
        int n_stops = 1 + (int)(gen_rng_next(&r) % 3);
        char text[64];
        size_t len = (size_t)(gen_rng_next(&r) % 40);
        for (size_t i = 0; i < len; i++)
            text[i] = "abc"[gen_rng_next(&r) % (trial % 2 ? 2 : 3)];
        gen_stop s;
        nc_error err;
        CHECK_OK(gen_stop_init(&s, stops, n_stops, &err), &err);
        char got[128];
        size_t n_got = 0, pos = 0;
        int matched = 0;
        while (pos < len && !matched) {
            size_t piece = 1 + (size_t)(gen_rng_next(&r) % 4);
            if (piece > len - pos) piece = len - pos;
            const char *out;
            size_t olen;
            matched = gen_stop_push(&s, text + pos, piece, &out, &olen, &err) == 1;
            if (olen) memcpy(got + n_got, out, olen);
            n_got += olen;
            pos += piece;
        }
        if (!matched) {
            const char *out;
            size_t olen;
            gen_stop_flush(&s, &out, &olen);
            if (olen) memcpy(got + n_got, out, olen);
            n_got += olen;
        }
        gen_stop_free(&s);
        size_t cut = oracle_cut(text, len, stops, n_stops);
        CHECKF(n_got == cut && !memcmp(got, text, cut) && matched == (cut < len),
               "trial %d: text '%.*s' stops %d cut %zu matched %d: got '%.*s'", trial, (int)len,
               text, n_stops, cut, matched, (int)n_got, got);
    }
}

int main(void) {
    RUN(test_stop_string_spanning_tokens);
    RUN(test_partial_match_released_when_it_fails);
    RUN(test_overlapping_prefix_aab_in_aaab);
    RUN(test_first_completed_of_several_stops_wins);
    RUN(test_same_end_tie_goes_to_the_earlier_start);
    RUN(test_no_stops_passes_through_and_utf8_stop);
    RUN(test_empty_stop_string_rejected);
    RUN(test_random_streams_match_plain_definition);
    return nc_test_exit_code();
}
