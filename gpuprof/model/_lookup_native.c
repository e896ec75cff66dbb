/* The launch × key pivot of a metric table (`gpuprof.model.tables.lookup`) in one pass of C per
 * name column.
 *
 * NumPy does the same work in a dozen whole-column steps (map codes to keys, pick the matching
 * rows, make their cells, keep the first of each cell, scatter), each a pass over a million rows
 * and a temporary array; here each row is read once, with the GIL released. Built as an optional
 * extension: without a C compiler, `tables.lookup` takes the NumPy path, which gives the same
 * arrays.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A read-only or writable 1-D contiguous buffer of signed integers or doubles. */
typedef struct {
    Py_buffer view;
    int held;
} Buffer;

static int take(PyObject *object, Buffer *b, int writable, const char *name) {
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, &b->view, flags)) return -1;
    b->held = 1;
    if (b->view.ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: a 1-D array", name);
        return -1;
    }
    return 0;
}

static void release(Buffer *b) {
    if (b->held) PyBuffer_Release(&b->view);
    b->held = 0;
}

/* Whether a buffer holds signed integers of 1, 2, 4 or 8 bytes. */
static int is_int(const Buffer *b) {
    const char *f = b->view.format ? b->view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    return *f && strchr("bhilq", *f) && f[1] == 0 &&
           (b->view.itemsize == 1 || b->view.itemsize == 2 || b->view.itemsize == 4 || b->view.itemsize == 8);
}

static int is_double(const Buffer *b) {
    const char *f = b->view.format ? b->view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    return *f == 'd' && f[1] == 0;
}

/* A column of signed integers as the loop reads it: kept in locals, so that the stores into the
   output (which may alias anything) do not make the compiler read the buffer's fields again. */
typedef struct {
    const char *data;
    Py_ssize_t length;
    int size;
} Ints;

static Ints ints(const Buffer *b) { return (Ints){(const char *)b->view.buf, b->view.shape[0], (int)b->view.itemsize}; }

static inline int64_t at(Ints column, Py_ssize_t i) {
    switch (column.size) {
    case 1: return ((const int8_t *)column.data)[i];
    case 2: return ((const int16_t *)column.data)[i];
    case 4: return ((const int32_t *)column.data)[i];
    default: return ((const int64_t *)column.data)[i];
    }
}

/* The key position of a row's name (-1: none), from its category code and a code -> key table. */
static inline int64_t key_of(Ints codes, Ints to_key, Py_ssize_t row) {
    int64_t code = at(codes, row);
    return code >= 0 && code < to_key.length ? at(to_key, code) : -1;
}

/* Pass `pass` over the rows (0: canonical names, 1: tool names where a row's tool name is not the
   key its canonical name already is): a cell takes the first row that finds it. Returns -1 when a
   key or launch falls outside the output. */
static int fill_pass(int pass, Ints launch, const double *values, Ints canonical, Ints to_key, Ints names,
                     Ints name_to_key, Py_ssize_t rows, Py_ssize_t launches, Py_ssize_t keys, double *cells,
                     unsigned char *found, int64_t *first) {
    for (Py_ssize_t row = 0; row < rows; row++) {
        int64_t key = key_of(names, name_to_key, row);
        if (key < 0 || (pass == 1 && key == key_of(canonical, to_key, row))) continue;
        int64_t l = at(launch, row);
        if (key >= keys || l < 0 || l >= launches) return -1;
        Py_ssize_t cell = (Py_ssize_t)key * launches + (Py_ssize_t)l;
        if (found[cell]) continue;
        found[cell] = 1;
        cells[cell] = values[row];
        if (first[key] < 0) first[key] = row;
    }
    return 0;
}

static PyObject *fill(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *objects[7];
    Py_ssize_t launches;
    if (!PyArg_ParseTuple(args, "OnOOOOOO", &objects[0], &launches, &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6]))
        return NULL;
    static const char *names[] = {"out", "launch", "value", "canonical", "to_key", "metric", "metric_to_key"};
    Buffer b[7] = {{{0}}};
    PyObject *result = NULL;
    unsigned char *found = NULL;
    int64_t *first = NULL;
    for (int k = 0; k < 7; k++)
        if (take(objects[k], &b[k], k == 0, names[k])) goto done;
    Buffer *out = &b[0], *launch = &b[1], *value = &b[2];
    Py_ssize_t rows = launch->view.shape[0], cells = out->view.shape[0];
    int ok = is_double(out) && is_double(value) && launches > 0 && cells % launches == 0 &&
             value->view.shape[0] == rows && b[3].view.shape[0] == rows && b[5].view.shape[0] == rows;
    for (int k = 1; ok && k < 7; k++) ok = k == 2 || is_int(&b[k]);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "arrays of other types or lengths than a metric table's");
        goto done;
    }
    Py_ssize_t keys = cells / launches;
    found = calloc(cells ? cells : 1, 1);
    first = malloc(2 * (keys ? keys : 1) * sizeof *first);
    if (!found || !first) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < 2 * keys; k++) first[k] = -1;
    int bad = 0;
    double *cell_values = (double *)out->view.buf;
    const double *values = (const double *)value->view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int pass = 0; pass < 2 && !bad; pass++)
        bad = fill_pass(pass, ints(launch), values, ints(&b[3]), ints(&b[4]), ints(&b[3 + 2 * pass]),
                        ints(&b[4 + 2 * pass]), rows, launches, keys, cell_values, found, first + pass * keys);
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a key or launch outside the output array");
        goto done;
    }
    result = PyTuple_New(2);
    for (int pass = 0; result && pass < 2; pass++) {
        PyObject *list = PyList_New(keys);
        if (!list) {
            Py_CLEAR(result);
            break;
        }
        PyTuple_SET_ITEM(result, pass, list);
        for (Py_ssize_t k = 0; k < keys; k++) {
            PyObject *number = PyLong_FromLongLong(first[pass * keys + k]);
            if (!number) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(list, k, number);
        }
    }
done:
    for (int k = 0; k < 7; k++) release(&b[k]);
    free(found);
    free(first);
    return result;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS,
     "fill(out, launches, launch, value, canonical, to_key, metric, metric_to_key) -> (first, first_by_tool_name)\n\n"
     "Write each metric row's value into `out` (the launch x key array in Fortran order, flattened) at\n"
     "(to_key[canonical[row]], launch[row]), then at (metric_to_key[metric[row]], launch[row]) where the\n"
     "tool name is another key: the first row that finds a cell gives its value. Category code -1 and\n"
     "key -1 find nothing. Returns the first row each key took in each pass (-1: none)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lookup_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lookup_native(void) { return PyModule_Create(&module); }
