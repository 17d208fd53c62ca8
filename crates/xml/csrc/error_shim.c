/*
 * Variadic error callback for libxml2/libxslt.
 *
 * libxml2's xmlGenericErrorFunc and libxslt's generic/transform error
 * callbacks are printf-style variadic functions, which stable Rust cannot
 * define. This shim formats the message and forwards the finished string to
 * a plain (non-variadic) sink function installed once from Rust.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*sluice_xml_sink_fn)(const char *message);

static sluice_xml_sink_fn sluice_xml_sink = NULL;

/* Called exactly once, from Rust's initialisation (under std::sync::Once),
 * before any callback can fire. */
void sluice_xml_install_sink(sluice_xml_sink_fn sink) {
    sluice_xml_sink = sink;
}

void sluice_xml_generic_error(void *ctx, const char *fmt, ...) {
    char small[1024];
    va_list ap;
    va_list ap2;
    int needed;
    (void) ctx;

    if (fmt == NULL || sluice_xml_sink == NULL)
        return;

    va_start(ap, fmt);
    va_copy(ap2, ap);
    needed = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (needed < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t) needed < sizeof(small)) {
        va_end(ap2);
        sluice_xml_sink(small);
        return;
    }
    {
        char *big = malloc((size_t) needed + 1);
        if (big == NULL) {
            va_end(ap2);
            sluice_xml_sink(small); /* truncated, better than nothing */
            return;
        }
        vsnprintf(big, (size_t) needed + 1, fmt, ap2);
        va_end(ap2);
        sluice_xml_sink(big);
        free(big);
    }
}
