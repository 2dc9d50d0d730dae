/* Shared declarations of ndflow's compiled dispatch (module ndflow.core.dispatch._dispatch; see
 * ndflow/core/dispatch/compiled.py).
 *
 * The Python dispatch (ndflow/core/dispatch/) is the specification: output bookkeeping is
 * ndflow/core/dispatch/outputs.py's track_output, which new_tensor/float_output (state.c) and track_output
 * (kernel.c) mirror (tests/core/test_compiled_dispatch.py compares them); this module does the same
 * work on the same objects and answers "not handled" (None) whenever a case is not the plain one, so that the
 * Python code runs instead. Without a C compiler ndflow runs the Python code alone.
 *
 * What it reads and writes, all set up by configure() (state.c):
 *   - the engine's slots (_direct, _backend, _data, the counters, _owner_scope: the active scope of the thread
 *     that made the engine, read only on that thread, _tensor_ids, tracker);
 *   - Tensor, DataInfo and Scope objects through their __slots__ (offsets read from the member descriptors);
 *   - each backend's store through the layout its store_layout() describes (data dict, record slots, how
 *     direct kernels are called and their results kept).
 *
 * Files: state.c (configuration, store layouts, the engine's bookkeeping), direct.c (the direct path and
 * disposal), kernel.c (Engine.run_kernel), steps.c (a graph program's replayed steps), module.c (the Op type,
 * the module). Built with hidden symbol visibility.
 */
#ifndef NDFLOW_DISPATCH_H
#define NDFLOW_DISPATCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <structmember.h>

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))
#define MAX_LAYOUTS 8
#define EXACT_INT (1L << 24)
#define NOT_HANDLED Py_NewRef(Py_None)

typedef struct {
    PyObject *backend; /* strong: its address cannot be reused while cached */
    int dispose_ok;    /* the store frees as RefCountedStore.dispose_data does */
    int direct_ok;     /* direct kernels may run on it */
    PyObject *data;    /* data id -> record */
    PyTypeObject *record_type;
    Py_ssize_t r_values, r_ref, r_shape, r_prepared; /* -2: no such slot */
    PyObject *release;                               /* callable(record) or NULL */
    PyTypeObject *value_type;                        /* results of this type are kept as they are */
    PyObject *coerce;                                /* other results go through it (or NULL) */
    PyObject *scalar;                                /* Python number -> scalar operand (or NULL) */
    PyObject *contexts;                              /* thread ident -> contextvars.Context (or NULL) */
    PyObject *make_context;                          /* makes this thread's context where it has none */
} Layout;

/* state.c: configuration */
extern int configured, enabled;
extern PyObject *engine, *data_ids, *layout_of, *py_dispose_tensor, *float32_str, *string_str;
extern PyTypeObject *tensor_type, *variable_type, *info_type, *scope_type;
extern Py_ssize_t T_shape, T_dtype, T_size, T_id, T_data_id, T_info, T_kept, T_scope_id, T_disposed;
extern Py_ssize_t I_backend, I_nbytes, S_track, S_id;
extern Py_ssize_t E_direct, E_backend, E_data, E_buffers, E_bytes, E_tensors, E_scope, E_tensor_ids, E_tracker;

Py_ssize_t slot_offset(PyTypeObject *type, const char *name, int required); /* -1: error; -2: absent, optional */
PyObject *configure(PyObject *self, PyObject *args);
PyObject *set_enabled(PyObject *self, PyObject *arg);
PyObject *forget_layouts(PyObject *self, PyObject *unused);
Layout *layout_for(PyObject *backend);
PyObject *engine_get(Py_ssize_t off);
int add_counter(Py_ssize_t off, Py_ssize_t delta);
PyObject *next_id(PyObject *counter);
PyObject *new_instance(PyTypeObject *type);
PyObject *new_data_info(PyObject *data_id, PyObject *backend, Py_ssize_t nbytes);
PyObject *new_tensor(PyObject *data_id, PyObject *shape, PyObject *size, PyObject *dtype, PyObject *info);
PyObject *float_output(PyObject *data_id, PyObject *shape, PyObject *size, PyObject *backend);

/* direct.c: the direct path and disposal */
PyObject *direct_binary(PyObject *kernel, PyObject *a, PyObject *b);
PyObject *direct_unary(PyObject *key, PyObject *x, int reduce_all);
PyObject *direct_reshape(PyObject *key, PyObject *x, PyObject *shape);
PyObject *direct_product(PyObject *key, PyObject *a, PyObject *b);
PyObject *tensor_dispose(PyObject *t, PyObject *unused);
PyObject *dispose_method(PyObject *self, PyObject *unused); /* Tensor.dispose as a method descriptor */

/* kernel.c: Engine.run_kernel */
PyObject *run_kernel_method(PyObject *self, PyObject *args);
PyObject *engine_run_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *py_track_output_c(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern Py_ssize_t E_slow; /* the engine's _slow slot (0 before run_kernel_method) */

/* steps.c: a graph program's replayed steps */
PyObject *run_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
