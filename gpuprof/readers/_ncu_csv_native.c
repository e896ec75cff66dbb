/* The rows of an Nsight Compute details CSV in one pass of C: what `_ncu_csv_bulk.Rows` needs.
 *
 * The details table repeats a launch's dozen attribute fields on each of its metric rows and a
 * few hundred metric names and units over a million rows. This scanner reads the file in blocks
 * with the GIL released, keeps each column's distinct strings once (a field equal to the row
 * above's costs one memcmp, any other one hash lookup), turns each value cell into a double as it
 * goes, and hands back codes, first rows of launches and the value cells that are no plain
 * decimal. Anything it does not judge (a quoted line break, a short or long row, an empty metric
 * name or value, a quote inside an unquoted field) makes it answer None: the pure-Python paths
 * decide those files. Built as an optional extension: without a C compiler, gpuprof reads the same
 * files through pyarrow or pandas.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK (8u << 20)
#define MAX_COLUMNS 256

/* ---- growable arrays ---------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap, item;
} Vec;

static int vec_reserve(Vec *v, size_t more) {
    if (v->len + more <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 1024;
    while (cap < v->len + more) cap *= 2;
    char *data = realloc(v->data, cap * v->item);
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

#define VEC_PUSH(v, type, value)                                         \
    (vec_reserve((v), 1) ? -1 : (((type *)(v)->data)[(v)->len++] = (value), 0))

/* ---- one column's distinct strings, in order of first appearance -------------------------- */

typedef struct {
    Vec arena;   /* char: the strings' bytes as they stand in the file (escaped quotes doubled) */
    Vec offsets; /* uint64: where string k starts in the arena */
    Vec lengths; /* uint32 */
    Vec escaped; /* uint8: whether string k holds doubled quotes */
    int32_t *slots;
    size_t mask;
    Vec after;    /* int32: the code that followed string k the last time (-1: none yet) */
    int32_t last; /* the code of the field in the row before (-1: none) */
} Dict;

static int dict_init(Dict *d) {
    memset(d, 0, sizeof *d);
    d->arena.item = 1;
    d->offsets.item = sizeof(uint64_t);
    d->lengths.item = sizeof(uint32_t);
    d->escaped.item = 1;
    d->after.item = sizeof(int32_t);
    d->mask = 255;
    d->slots = malloc((d->mask + 1) * sizeof(int32_t));
    if (!d->slots) return -1;
    memset(d->slots, 0xff, (d->mask + 1) * sizeof(int32_t));
    d->last = -1;
    return 0;
}

static void dict_free(Dict *d) {
    free(d->arena.data);
    free(d->offsets.data);
    free(d->lengths.data);
    free(d->escaped.data);
    free(d->after.data);
    free(d->slots);
}

static inline uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static inline int dict_same(const Dict *d, int32_t code, const char *p, size_t n) {
    return ((uint32_t *)d->lengths.data)[code] == n &&
           (n == 0 || memcmp(d->arena.data + ((uint64_t *)d->offsets.data)[code], p, n) == 0);
}

static int dict_grow(Dict *d) {
    size_t mask = d->mask * 2 + 1;
    int32_t *slots = malloc((mask + 1) * sizeof(int32_t));
    if (!slots) return -1;
    memset(slots, 0xff, (mask + 1) * sizeof(int32_t));
    for (size_t k = 0; k < d->offsets.len; k++) {
        const char *p = d->arena.data + ((uint64_t *)d->offsets.data)[k];
        size_t i = hash_bytes(p, ((uint32_t *)d->lengths.data)[k]) & mask;
        while (slots[i] >= 0) i = (i + 1) & mask;
        slots[i] = (int32_t)k;
    }
    free(d->slots);
    d->slots = slots;
    d->mask = mask;
    return 0;
}

/* Remember that `code` came after the row before's, and make it the last. */
static inline int32_t dict_follow(Dict *d, int32_t code) {
    if (d->last >= 0) ((int32_t *)d->after.data)[d->last] = code;
    return d->last = code;
}

/* The code of the field p[0:n] (added when new); -1 when out of memory. A field equal to the row
 * before's, or to what followed that the last time (the metrics of a launch come in the order of
 * the launch before), costs a memcmp; any other one a hash lookup. */
static int32_t dict_code(Dict *d, const char *p, size_t n, int escaped) {
    if (d->last >= 0) {
        if (dict_same(d, d->last, p, n)) return d->last;
        int32_t next = ((int32_t *)d->after.data)[d->last];
        if (next >= 0 && dict_same(d, next, p, n)) return d->last = next;
    }
    size_t i = hash_bytes(p, n) & d->mask;
    while (d->slots[i] >= 0) {
        if (dict_same(d, d->slots[i], p, n)) return dict_follow(d, d->slots[i]);
        i = (i + 1) & d->mask;
    }
    int32_t code = (int32_t)d->offsets.len;
    if (vec_reserve(&d->arena, n) || VEC_PUSH(&d->offsets, uint64_t, d->arena.len) ||
        VEC_PUSH(&d->lengths, uint32_t, (uint32_t)n) || VEC_PUSH(&d->escaped, uint8_t, (uint8_t)escaped) ||
        VEC_PUSH(&d->after, int32_t, -1))
        return -1;
    if (n) memcpy(d->arena.data + d->arena.len, p, n);
    d->arena.len += n;
    d->slots[i] = code;
    if (d->offsets.len * 2 > d->mask && dict_grow(d)) return -1;
    return dict_follow(d, code);
}

/* String k as a Python str (doubled quotes made single); NULL with UnicodeDecodeError when the
 * bytes are no UTF-8. */
static PyObject *dict_string(const Dict *d, size_t k) {
    const char *p = d->arena.data + ((uint64_t *)d->offsets.data)[k];
    size_t n = ((uint32_t *)d->lengths.data)[k];
    if (!((uint8_t *)d->escaped.data)[k]) return PyUnicode_DecodeUTF8(p, (Py_ssize_t)n, NULL);
    char *plain = malloc(n ? n : 1);
    if (!plain) return PyErr_NoMemory();
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        plain[m++] = p[i];
        if (p[i] == '"') i++;
    }
    PyObject *s = PyUnicode_DecodeUTF8(plain, (Py_ssize_t)m, NULL);
    free(plain);
    return s;
}

/* ---- value cells -------------------------------------------------------------------------- */

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A cell matching -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? once its thousands separators are
 * dropped, as the nearest double (as pyarrow's and Python's readers round it); 0 when it is
 * something else (28.05%, n/a, a policy's name), which Python then reads. */
static inline size_t past_separators(const char *p, size_t i, size_t n) {
    while (i < n && p[i] == ',') i++;
    return i;
}

static int plain_decimal(const char *p, size_t n, double *out) {
#define DIGIT() (i < n && p[i] >= '0' && p[i] <= '9')
    size_t i = past_separators(p, 0, n);
    int negative = 0;
    if (i < n && p[i] == '-') negative = 1, i++;
    uint64_t mantissa = 0;
    int digits = 0, fraction = 0, exact = 1, seen = 0;
    for (i = past_separators(p, i, n); DIGIT(); i = past_separators(p, i + 1, n)) {
        if (mantissa || p[i] != '0') digits++;
        if (digits > 19) exact = 0; else mantissa = mantissa * 10 + (uint64_t)(p[i] - '0');
        seen = 1;
    }
    if (!seen) return 0;
    if (i < n && p[i] == '.') {
        seen = 0;
        for (i = past_separators(p, i + 1, n); DIGIT(); i = past_separators(p, i + 1, n)) {
            if (mantissa || p[i] != '0') digits++;
            if (digits > 19) exact = 0; else mantissa = mantissa * 10 + (uint64_t)(p[i] - '0'), fraction++;
            seen = 1;
        }
        if (!seen) return 0;
    }
    int has_exponent = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        has_exponent = 1;
        i = past_separators(p, i + 1, n);
        if (i < n && (p[i] == '-' || p[i] == '+')) i++;
        seen = 0;
        for (i = past_separators(p, i, n); DIGIT(); i = past_separators(p, i + 1, n)) seen = 1;
        if (!seen) return 0;
    }
#undef DIGIT
    if (i != n) return 0;
    /* Clinger's fast path: an integer below 2^53 divided by an exact power of ten is correctly
     * rounded; anything else goes through strtod (correctly rounded in glibc). */
    if (exact && !has_exponent && mantissa < (1ull << 53) && fraction <= 22) {
        double v = (double)mantissa / POW10[fraction];
        *out = negative ? -v : v;
        return 1;
    }
    char buf[128], *end;
    size_t m = 0;
    for (i = 0; i < n; i++) {
        if (p[i] == ',') continue;
        if (m + 1 >= sizeof buf) return 0;
        buf[m++] = p[i];
    }
    buf[m] = 0;
    *out = strtod(buf, &end);
    return end == buf + m && isfinite(*out); /* 1e999: Python reads it, and keeps its text */
}

/* ---- the scan ----------------------------------------------------------------------------- */

typedef struct {
    const char *raw; /* where the field starts in the line, its opening quote included */
    const char *p;
    size_t n;
    int quoted_escapes;
} Field;

typedef struct {
    /* the layout */
    int columns, width, i_id, i_name, i_unit, i_value, i_section, i_rule;
    int wanted[MAX_COLUMNS];
    int n_wanted;
    /* what the rows hold */
    Dict dicts[MAX_COLUMNS];
    Vec names, units, sections; /* int32 per metric row */
    Vec numbers;                /* double per metric row */
    Vec others;                 /* int64 metric row, int32 code in `texts` */
    Dict texts;                 /* the value cells that are no plain decimal */
    Vec starts;                 /* int64: each launch's first metric row */
    Vec ids;                    /* int32: each launch's ID code */
    Vec firsts;                 /* int32 * n_wanted: each launch's first row's wanted fields */
    Vec rules;                  /* int32 * (1 + columns): launch, then every field's code */
    int32_t last_id;
    int64_t metric_rows;
    /* The fields before the first that changes from row to row (ID, kernel, grid ...: `prefix`
     * of them; 0 when a launch column comes later) as they stood in the last row split whole: a
     * row that starts with the same bytes has the same fields there, and is split from there on. */
    int prefix;
    char *prev;
    size_t prev_len, prev_cap;
    Field prev_fields[MAX_COLUMNS]; /* `raw` and `p` as offsets into `prev` */
    const char *refusal; /* why the rows are left to the other readers */
} Scan;

/* The fields of the line p[0:n] (without its line break); the number of fields, -1 when the line
 * is not one this reader judges. */
static int split(const char *p, size_t n, Field *fields, int most) {
    const char *end = p + n;
    int count = 0;
    for (;;) {
        if (count == most) return -1;
        Field *f = &fields[count++];
        f->quoted_escapes = 0;
        f->raw = p;
        if (p < end && *p == '"') {
            const char *start = ++p;
            for (;;) {
                const char *q = memchr(p, '"', (size_t)(end - p));
                if (!q) return -1; /* a quote left open: a line break inside a field */
                if (q + 1 < end && q[1] == '"') {
                    f->quoted_escapes = 1;
                    p = q + 2;
                    continue;
                }
                f->p = start;
                f->n = (size_t)(q - start);
                p = q + 1;
                break;
            }
            if (p == end) return count;
            if (*p != ',') return -1;
            p++;
        } else {
            const char *q = memchr(p, ',', (size_t)(end - p));
            const char *stop = q ? q : end;
            if (memchr(p, '"', (size_t)(stop - p))) return -1;
            f->p = p;
            f->n = (size_t)(stop - p);
            if (!q) return count;
            p = q + 1;
        }
    }
}

/* One row: 0 taken, 1 refused (s->refusal says why), -1 out of memory. */
static int take_row(Scan *s, const char *line, size_t n) {
    Field fields[MAX_COLUMNS];
    if (n && line[n - 1] == '\r') n--;
    if (!n) return 0; /* blank lines are no rows, for pandas and pyarrow alike */
    int from = 0;
    if (s->prev_len && n >= s->prev_len && memcmp(line, s->prev, s->prev_len) == 0)
        from = s->prefix; /* the same launch's fields as the row split whole (set below if needed) */
    size_t skipped = from ? s->prev_len : 0;
    int count = split(line + skipped, n - skipped, fields + from, s->columns - from);
    if (count < 0) return s->refusal = "a row this scanner does not split", 1;
    count += from;
    if (!from && s->prefix && count > s->prefix) { /* this row's prefix, for the rows after it */
        size_t len = (size_t)(fields[s->prefix].raw - line);
        if (len > s->prev_cap) {
            char *bigger = realloc(s->prev, len);
            if (!bigger) return -1;
            s->prev = bigger;
            s->prev_cap = len;
        }
        memcpy(s->prev, line, len);
        s->prev_len = len;
        for (int i = 0; i < s->prefix; i++) {
            s->prev_fields[i] = fields[i];
            s->prev_fields[i].raw = (const char *)(uintptr_t)(fields[i].raw - line);
            s->prev_fields[i].p = (const char *)(uintptr_t)(fields[i].p - line);
        }
    }
    int rule = 0;
    if (count == s->columns && s->i_rule >= 0 && fields[s->i_name].n == 0) {
        if (fields[s->i_rule].n == 0) return s->refusal = "a row without metric or rule", 1;
        rule = 1;
    } else if (count != s->columns && count != s->width) {
        return s->refusal = "a row of another length", 1;
    }
    const Field *id = &fields[s->i_id];
    int32_t code = from ? s->last_id : dict_code(&s->dicts[s->i_id], id->p, id->n, id->quoted_escapes);
    if (code < 0) return -1;
    if (code != s->last_id || !s->ids.len) {
        s->last_id = code;
        if (VEC_PUSH(&s->ids, int32_t, code) || VEC_PUSH(&s->starts, int64_t, s->metric_rows)) return -1;
        for (int k = 0; k < s->n_wanted; k++) {
            int i = s->wanted[k];
            if (i >= count) return s->refusal = "a launch column beyond the row", 1;
            int32_t c = dict_code(&s->dicts[i], fields[i].p, fields[i].n, fields[i].quoted_escapes);
            if (c < 0 || VEC_PUSH(&s->firsts, int32_t, c)) return -1;
        }
    }
    if (rule) {
        for (int i = 0; i < from; i++) { /* the prefix's fields, where the row split whole had them */
            fields[i] = s->prev_fields[i];
            fields[i].raw = line + (size_t)s->prev_fields[i].raw;
            fields[i].p = line + (size_t)s->prev_fields[i].p;
        }
        if (VEC_PUSH(&s->rules, int32_t, (int32_t)(s->ids.len - 1))) return -1;
        for (int i = 0; i < s->columns; i++) {
            int32_t c = dict_code(&s->dicts[i], fields[i].p, fields[i].n, fields[i].quoted_escapes);
            if (c < 0 || VEC_PUSH(&s->rules, int32_t, c)) return -1;
        }
        return 0;
    }
    const Field *name = &fields[s->i_name], *unit = &fields[s->i_unit], *value = &fields[s->i_value];
    if (!name->n) return s->refusal = "a metric row without a metric name", 1;
    if (!value->n) return s->refusal = "a metric row without a value", 1;
    int32_t c_name = dict_code(&s->dicts[s->i_name], name->p, name->n, name->quoted_escapes);
    int32_t c_unit = dict_code(&s->dicts[s->i_unit], unit->p, unit->n, unit->quoted_escapes);
    if (c_name < 0 || c_unit < 0 || VEC_PUSH(&s->names, int32_t, c_name) || VEC_PUSH(&s->units, int32_t, c_unit))
        return -1;
    if (s->i_section >= 0) {
        const Field *f = &fields[s->i_section];
        int32_t c = dict_code(&s->dicts[s->i_section], f->p, f->n, f->quoted_escapes);
        if (c < 0 || VEC_PUSH(&s->sections, int32_t, c)) return -1;
    }
    double number = 0.0;
    if (value->quoted_escapes || !plain_decimal(value->p, value->n, &number)) {
        int32_t t = dict_code(&s->texts, value->p, value->n, value->quoted_escapes);
        if (t < 0 || VEC_PUSH(&s->others, int64_t, s->metric_rows) || VEC_PUSH(&s->others, int64_t, t)) return -1;
        number = 0.0;
    }
    if (VEC_PUSH(&s->numbers, double, number)) return -1;
    s->metric_rows++;
    return 0;
}

/* Every row of bytes [start, stop) of the file: 0 done, 1 refused, -1 out of memory, -2 an OS
 * error (errno). Runs without the GIL. */
static int scan_range(Scan *s, int fd, off_t start, off_t stop) {
    size_t cap = BLOCK, held = 0;
    char *buffer = malloc(cap);
    if (!buffer) return -1;
    int result = 0;
    off_t at = start;
    for (;;) {
        if (held == cap) { /* one line longer than the buffer */
            char *bigger = realloc(buffer, cap * 2);
            if (!bigger) {
                result = -1;
                break;
            }
            buffer = bigger;
            cap *= 2;
        }
        size_t want = cap - held;
        if ((off_t)want > stop - at) want = (size_t)(stop - at);
        ssize_t got = want ? pread(fd, buffer + held, want, at) : 0;
        if (got < 0) {
            if (errno == EINTR) continue;
            result = -2;
            break;
        }
        at += got;
        size_t filled = held + (size_t)got;
        const char *p = buffer, *end = buffer + filled;
        int at_end = got == 0;
        for (;;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) {
                if (at_end && p < end) { /* a last line without its line break */
                    result = take_row(s, p, (size_t)(end - p));
                    p = end;
                }
                break;
            }
            result = take_row(s, p, (size_t)(nl - p));
            if (result) break;
            p = nl + 1;
        }
        if (result || at_end) break;
        held = (size_t)(end - p);
        memmove(buffer, p, held);
    }
    free(buffer);
    return result;
}

typedef struct {
    Scan *scan;
    int fd;
    off_t start, stop;
    int result;
    int err;
} Part;

static void *scan_part(void *arg) {
    Part *part = arg;
    part->result = scan_range(part->scan, part->fd, part->start, part->stop);
    part->err = errno;
    return NULL;
}

/* Where the line holding byte `at` ends (just after its line break; `stop` when none does). A
 * line break inside a quoted field there leaves an open quote to the part before, which refuses it. */
static off_t line_end(int fd, off_t at, off_t stop) {
    char window[4096];
    while (at < stop) {
        ssize_t got = pread(fd, window, sizeof window, at);
        if (got <= 0) return stop;
        const char *nl = memchr(window, '\n', (size_t)got);
        if (nl) return at + (nl - window) + 1 < stop ? at + (nl - window) + 1 : stop;
        at += got;
    }
    return stop;
}

/* Each code of `from`'s strings as `into` codes them (added there in order when new); NULL when
 * out of memory. */
static int32_t *codes_in(Dict *into, const Dict *from) {
    size_t count = from->offsets.len;
    int32_t *map = malloc((count ? count : 1) * sizeof(int32_t));
    if (!map) return NULL;
    for (size_t k = 0; k < count; k++) {
        map[k] = dict_code(into, from->arena.data + ((uint64_t *)from->offsets.data)[k],
                           ((uint32_t *)from->lengths.data)[k], ((uint8_t *)from->escaped.data)[k]);
        if (map[k] < 0) {
            free(map);
            return NULL;
        }
    }
    return map;
}

static int append_coded(Vec *into, const Vec *from, const int32_t *map) {
    if (vec_reserve(into, from->len)) return -1;
    for (size_t k = 0; k < from->len; k++) ((int32_t *)into->data)[into->len++] = map[((int32_t *)from->data)[k]];
    return 0;
}

/* Append the rows of `b` (the part of the file after `a`'s) to `a`, in `a`'s codes; the launch
 * that goes on over the parts' border stays one. 0, or -1 when out of memory. */
static int merge(Scan *a, Scan *b) {
    int32_t *maps[MAX_COLUMNS] = {0};
    int32_t *texts = codes_in(&a->texts, &b->texts);
    int failed = !texts;
    for (int i = 0; i < a->columns && !failed; i++) failed = !(maps[i] = codes_in(&a->dicts[i], &b->dicts[i]));
    int32_t *ids = (int32_t *)b->ids.data;
    int on = !failed && a->ids.len && b->ids.len &&
             ((int32_t *)a->ids.data)[a->ids.len - 1] == maps[a->i_id][ids[0]];
    size_t launches = a->ids.len - (size_t)on, skip = (size_t)on;
    failed = failed || append_coded(&a->names, &b->names, maps[a->i_name]) ||
             append_coded(&a->units, &b->units, maps[a->i_unit]) ||
             (a->i_section >= 0 && append_coded(&a->sections, &b->sections, maps[a->i_section])) ||
             vec_reserve(&a->numbers, b->numbers.len) || vec_reserve(&a->others, b->others.len) ||
             vec_reserve(&a->ids, b->ids.len) || vec_reserve(&a->starts, b->starts.len) ||
             vec_reserve(&a->firsts, b->firsts.len) || vec_reserve(&a->rules, b->rules.len);
    if (!failed) {
        if (b->numbers.len)
            memcpy((double *)a->numbers.data + a->numbers.len, b->numbers.data, b->numbers.len * sizeof(double));
        a->numbers.len += b->numbers.len;
        for (size_t k = 0; k < b->others.len; k += 2) {
            ((int64_t *)a->others.data)[a->others.len++] = ((int64_t *)b->others.data)[k] + a->metric_rows;
            ((int64_t *)a->others.data)[a->others.len++] = texts[((int64_t *)b->others.data)[k + 1]];
        }
        for (size_t k = skip; k < b->ids.len; k++) {
            ((int32_t *)a->ids.data)[a->ids.len++] = maps[a->i_id][ids[k]];
            ((int64_t *)a->starts.data)[a->starts.len++] = ((int64_t *)b->starts.data)[k] + a->metric_rows;
            for (int w = 0; w < a->n_wanted; w++) {
                int32_t code = ((int32_t *)b->firsts.data)[k * (size_t)a->n_wanted + (size_t)w];
                ((int32_t *)a->firsts.data)[a->firsts.len++] = maps[a->wanted[w]][code];
            }
        }
        for (size_t k = 0; k < b->rules.len; k += 1 + (size_t)a->columns) {
            const int32_t *rule = (int32_t *)b->rules.data + k;
            ((int32_t *)a->rules.data)[a->rules.len++] = (int32_t)(rule[0] + launches);
            for (int i = 0; i < a->columns; i++) ((int32_t *)a->rules.data)[a->rules.len++] = maps[i][rule[1 + i]];
        }
        a->metric_rows += b->metric_rows;
    }
    free(texts);
    for (int i = 0; i < a->columns; i++) free(maps[i]);
    return failed ? -1 : 0;
}

/* ---- back to Python ----------------------------------------------------------------------- */

static PyObject *vec_bytes(Vec *v) {
    return PyByteArray_FromStringAndSize(v->data ? v->data : "", (Py_ssize_t)(v->len * v->item));
}

/* Column i's distinct strings as a list. */
static PyObject *strings(const Dict *d) {
    size_t count = d->offsets.len;
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (!list) return NULL;
    for (size_t k = 0; k < count; k++) {
        PyObject *s = dict_string(d, k);
        if (!s) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, s);
    }
    return list;
}

static void scan_free(Scan *s) {
    for (int i = 0; i < s->columns; i++) dict_free(&s->dicts[i]);
    dict_free(&s->texts);
    Vec *vecs[] = {&s->names, &s->units, &s->sections, &s->numbers, &s->others,
                   &s->starts, &s->ids, &s->firsts, &s->rules};
    for (size_t k = 0; k < sizeof vecs / sizeof *vecs; k++) free(vecs[k]->data);
    free(s->prev);
}

static PyObject *result(Scan *s) {
    PyObject *dicts = PyList_New(s->columns);
    if (!dicts) return NULL;
    for (int i = 0; i < s->columns; i++) {
        PyObject *list = strings(&s->dicts[i]);
        if (!list) {
            Py_DECREF(dicts);
            return NULL;
        }
        PyList_SET_ITEM(dicts, i, list);
    }
    PyObject *texts = strings(&s->texts);
    if (!texts) {
        Py_DECREF(dicts);
        return NULL;
    }
    return Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:L}", "strings", dicts, "texts", texts,
                         "names", vec_bytes(&s->names), "units", vec_bytes(&s->units), "sections",
                         vec_bytes(&s->sections), "numbers", vec_bytes(&s->numbers), "others",
                         vec_bytes(&s->others), "starts", vec_bytes(&s->starts), "ids", vec_bytes(&s->ids),
                         "firsts", vec_bytes(&s->firsts), "rules", vec_bytes(&s->rules), "metric_rows",
                         (long long)s->metric_rows);
}

/* A Scan of the layout in `layout`, its tables empty; NULL when out of memory. */
static Scan *scan_new(const Scan *layout) {
    Scan *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->columns = layout->columns, s->width = layout->width, s->i_id = layout->i_id, s->i_name = layout->i_name;
    s->i_unit = layout->i_unit, s->i_value = layout->i_value, s->i_section = layout->i_section;
    s->i_rule = layout->i_rule, s->n_wanted = layout->n_wanted, s->prefix = layout->prefix;
    memcpy(s->wanted, layout->wanted, sizeof s->wanted);
    int failed = 0, i = 0;
    for (; i < s->columns && !failed; i++) failed = dict_init(&s->dicts[i]);
    if (failed || dict_init(&s->texts)) {
        for (int k = 0; k < i; k++) dict_free(&s->dicts[k]);
        free(s);
        return NULL;
    }
    s->names.item = s->units.item = s->sections.item = s->ids.item = s->firsts.item = s->rules.item = sizeof(int32_t);
    s->numbers.item = sizeof(double);
    s->others.item = s->starts.item = sizeof(int64_t);
    s->last_id = -1;
    return s;
}

#define MAX_PARTS 64

typedef struct {
    Part *work;
    int count;
    int next; /* the next part to scan, taken atomically */
} Queue;

/* Scan parts off the queue until none is left: a thread slowed by another program takes fewer. */
static void *worker(void *arg) {
    Queue *queue = arg;
    for (;;) {
        int k = __atomic_fetch_add(&queue->next, 1, __ATOMIC_RELAXED);
        if (k >= queue->count) return NULL;
        scan_part(&queue->work[k]);
    }
}

/* The rows of [offset, stop) in parts of about `part_bytes` (MAX_PARTS at most), scanned by
 * `threads` threads and merged into parts[0] in file order: the outcome as scan_range's, the
 * first part's that failed. Runs without the GIL. */
static int scan_parts(Scan **parts, int threads, long long part_bytes, int fd, off_t offset, off_t stop, int *err) {
    Part work[MAX_PARTS];
    pthread_t ids[MAX_PARTS];
    off_t size = stop - offset, at = offset;
    if (part_bytes < 1) part_bytes = 1;
    int count = size / part_bytes < MAX_PARTS ? (int)(size / part_bytes) : MAX_PARTS;
    if (count < 1) count = 1;
    for (int k = 0; k < count; k++) {
        off_t end = k == count - 1 ? stop : line_end(fd, offset + size / count * (k + 1), stop);
        if (end < at) end = at;
        if (k && !(parts[k] = scan_new(parts[0]))) {
            count = k;
            for (k = 1; k < count; k++) {
                scan_free(parts[k]);
                free(parts[k]);
                parts[k] = NULL;
            }
            return -1;
        }
        work[k] = (Part){parts[k], fd, at, end, 0, 0};
        at = end;
    }
    Queue queue = {work, count, 0};
    int started = 0;
    while (started + 1 < threads && started + 1 < count && !pthread_create(&ids[started], NULL, worker, &queue))
        started++;
    worker(&queue);
    for (int t = 0; t < started; t++) pthread_join(ids[t], NULL);
    int outcome = 0;
    for (int k = 0; k < count && !outcome; k++) {
        outcome = work[k].result;
        *err = work[k].err;
    }
    for (int k = 1; k < count; k++) {
        if (!outcome) outcome = merge(parts[0], parts[k]);
        scan_free(parts[k]);
        free(parts[k]);
        parts[k] = NULL;
    }
    return outcome;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"fd",      "offset", "columns",   "width",  "i_id",   "i_name", "i_unit",
                               "i_value", "i_section", "i_rule", "wanted", "threads", "part_bytes", NULL};
    int fd, threads = 1;
    long long offset, part_bytes = 16 << 20;
    PyObject *wanted;
    Scan layout = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iLiiiiiiiiO|iL", keywords, &fd, &offset, &layout.columns,
                                     &layout.width, &layout.i_id, &layout.i_name, &layout.i_unit, &layout.i_value,
                                     &layout.i_section, &layout.i_rule, &wanted, &threads, &part_bytes))
        return NULL;
    PyObject *seq = PySequence_Fast(wanted, "wanted: a sequence of column numbers");
    if (!seq) return NULL;
    layout.n_wanted = (int)PySequence_Fast_GET_SIZE(seq);
    int bad = layout.columns < 1 || layout.columns > MAX_COLUMNS || layout.n_wanted > MAX_COLUMNS;
    for (int k = 0; !bad && k < layout.n_wanted; k++) {
        long i = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
        bad = i < 0 || i >= layout.columns;
        layout.wanted[k] = (int)i;
    }
    Py_DECREF(seq);
    int indices[] = {layout.i_id, layout.i_name, layout.i_unit, layout.i_value};
    for (size_t k = 0; k < 4; k++) bad = bad || indices[k] < 0 || indices[k] >= layout.columns;
    bad = bad || layout.i_section >= layout.columns || layout.i_rule >= layout.columns || layout.width < 1 ||
          layout.width > layout.columns || offset < 0;
    if (bad) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a column number outside the row");
        return NULL;
    }
    int varying[] = {layout.i_name, layout.i_unit, layout.i_value, layout.i_section, layout.i_rule};
    layout.prefix = layout.columns;
    for (size_t k = 0; k < 5; k++)
        if (varying[k] >= 0 && varying[k] < layout.prefix) layout.prefix = varying[k];
    for (int k = 0; k < layout.n_wanted; k++)
        if (layout.wanted[k] >= layout.prefix) layout.prefix = 0;
    if (layout.i_id >= layout.prefix) layout.prefix = 0;
    struct stat info;
    if (fstat(fd, &info)) return PyErr_SetFromErrno(PyExc_OSError);
    Scan *parts[MAX_PARTS] = {0};
    if (!(parts[0] = scan_new(&layout))) return PyErr_NoMemory();
    int outcome, err = 0;
    Py_BEGIN_ALLOW_THREADS
    outcome = scan_parts(parts, threads, part_bytes, fd, (off_t)offset, info.st_size, &err);
    Py_END_ALLOW_THREADS
    Scan *s = parts[0];
    PyObject *out = NULL;
    if (outcome == 0) {
        out = result(s);
        if (!out && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            out = PyUnicode_FromString("a field that is no UTF-8");
        }
    } else if (outcome == 1) {
        out = PyUnicode_FromString(s->refusal ? s->refusal : "a row this scanner does not judge");
    } else if (outcome == -2) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        PyErr_NoMemory();
    }
    scan_free(s);
    free(s);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_VARARGS | METH_KEYWORDS,
     "scan(fd, offset, columns, width, i_id, i_name, i_unit, i_value, i_section, i_rule, wanted, threads=1,\n"
     "part_bytes=16 MiB) -> dict | str\n\n"
     "The rows of a details CSV from byte `offset` of the open file `fd` to its end, on up to `threads`\n"
     "threads (parts of `part_bytes` at least): a dict of columns, or a str saying why they are left\n"
     "to the other readers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ncu_csv_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ncu_csv_native(void) { return PyModule_Create(&module); }
