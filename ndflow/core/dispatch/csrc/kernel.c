/* ndflow compiled dispatch: Engine.run_kernel and Engine._track_output for the plain case.
 *
 * The plain case: compiled dispatch on, nothing observes kernels (no tape, profile() or debug mode: the
 * engine's _slow is False; no leak tracker), a backend is active, the kernel is registered, every input is a
 * live tensor of the active backend. Anything else runs the Python method, which raises the errors.
 */
#include "dispatch.h"

PyObject *py_run_kernel;     /* Engine.run_kernel as written in Python (unbound) */
PyObject *bytes_per_element; /* ndflow.core.dtypes.BYTES_PER_ELEMENT */
Py_ssize_t E_slow, E_kernels;
static PyObject *track_output_name;

/* engine._track_output(data_id, shape, dtype, backend), in Python. */
static PyObject *py_track_output(PyObject *data_id, PyObject *shape, PyObject *dtype, PyObject *backend)
{
    PyObject *args[5] = {engine, data_id, shape, dtype, backend};
    return PyObject_VectorcallMethod(track_output_name, args, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* A tensor for one kernel output (``ndflow.core.dispatch.outputs.track_output``, the engine's ``_track_output``): data it shares keeps its DataInfo, new data gets
 * one. Strings, shapes other than tuples of ints and a watching leak tracker go to the Python method. */
static PyObject *track_output(PyObject *out, PyObject *backend)
{
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 3) {
        PyErr_SetString(PyExc_TypeError, "run_kernel: a kernel must return (data_id, shape, dtype) or a list of them");
        return NULL;
    }
    PyObject *data_id = PyTuple_GET_ITEM(out, 0), *shape = PyTuple_GET_ITEM(out, 1);
    PyObject *dtype = PyTuple_GET_ITEM(out, 2);
    PyObject *per = PyTuple_CheckExact(shape) ? PyDict_GetItemWithError(bytes_per_element, dtype) : NULL;
    if (per == NULL || SLOT(engine, E_tracker) != Py_None)
        return PyErr_Occurred() ? NULL : py_track_output(data_id, shape, dtype, backend);
    Py_ssize_t size = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *dim = PyTuple_GET_ITEM(shape, i);
        Py_ssize_t d = PyLong_CheckExact(dim) ? PyLong_AsSsize_t(dim) : -1;
        if (d < 0 || (d > 0 && size > PY_SSIZE_T_MAX / 8 / d)) {
            PyErr_Clear();
            return py_track_output(data_id, shape, dtype, backend);
        }
        size *= d;
    }
    PyObject *table = engine_get(E_data);
    if (table == NULL)
        return NULL;
    PyObject *info = PyDict_GetItemWithError(table, data_id);
    if (info != NULL) {
        Py_INCREF(info);
    } else {
        Py_ssize_t bytes = PyLong_AsSsize_t(per);
        if ((bytes == -1 && PyErr_Occurred()) || PyErr_Occurred())
            return NULL;
        if ((info = new_data_info(data_id, backend, bytes * size)) == NULL)
            return NULL;
    }
    PyObject *size_obj = PyLong_FromSsize_t(size);
    if (size_obj == NULL) {
        Py_DECREF(info);
        return NULL;
    }
    PyObject *t = new_tensor(data_id, shape, size_obj, dtype, info);
    Py_DECREF(size_obj);
    return t;
}

/* _dispatch.track_output(data_id, shape, dtype, backend): track_output above, for the tests that hold it to the
 * Python specification (ndflow.core.dispatch.outputs.track_output). Requires a configured module. */
PyObject *py_track_output_c(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "track_output(data_id, shape, dtype, backend) takes 4 arguments");
        return NULL;
    }
    if (!configured || bytes_per_element == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: track_output needs the configured module");
        return NULL;
    }
    PyObject *out = PyTuple_Pack(3, args[0], args[1], args[2]);
    if (out == NULL)
        return NULL;
    PyObject *t = track_output(out, args[3]);
    Py_DECREF(out);
    return t;
}

/* Engine.run_kernel(name, inputs, attrs=None). */
PyObject *engine_run_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *backend, *kernels, *config;
    if (!enabled || kwnames != NULL || nargs < 2 || nargs > 3 || self != engine || SLOT(engine, E_slow) != Py_False ||
        SLOT(engine, E_tracker) != Py_None || (backend = SLOT(engine, E_backend)) == NULL || backend == Py_None ||
        (kernels = SLOT(engine, E_kernels)) == NULL || !PyDict_CheckExact(kernels) || !PyTuple_CheckExact(args[1]))
        goto python;
    if ((config = PyDict_GetItemWithError(kernels, args[0])) == NULL || !PyTuple_Check(config) ||
        PyTuple_GET_SIZE(config) < 3) {
        if (PyErr_Occurred())
            return NULL;
        goto python;
    }
    PyObject *inputs = args[1];
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inputs); i++) {
        PyObject *t = PyTuple_GET_ITEM(inputs, i);
        if (!PyObject_TypeCheck(t, tensor_type) || SLOT(t, T_disposed) != Py_False ||
            SLOT(SLOT(t, T_info), I_backend) != backend)
            goto python;
    }
    Py_INCREF(backend);
    Py_INCREF(config);
    PyObject *call[3] = {backend, inputs, nargs == 3 ? args[2] : Py_None};
    PyObject *out = PyObject_Vectorcall(PyTuple_GET_ITEM(config, 2), call, 3, NULL);
    Py_DECREF(config);
    PyObject *result = NULL;
    if (out == NULL) {
        /* the error propagates */
    } else if (PyList_CheckExact(out)) {
        Py_ssize_t n = PyList_GET_SIZE(out);
        result = PyList_New(n);
        for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
            PyObject *t = track_output(PyList_GET_ITEM(out, i), backend);
            if (t == NULL)
                Py_CLEAR(result);
            else
                PyList_SET_ITEM(result, i, t);
        }
    } else {
        result = track_output(out, backend);
    }
    Py_XDECREF(out);
    Py_DECREF(backend);
    return result;
python:;
    PyObject *stack[4] = {self, args[0], nargs > 1 ? args[1] : NULL, nargs > 2 ? args[2] : NULL};
    if (nargs > 3 || kwnames != NULL || nargs < 1) { /* unusual calls: bind through the method object */
        PyObject *bound = PyMethod_New(py_run_kernel, self);
        if (bound == NULL)
            return NULL;
        PyObject *r = PyObject_Vectorcall(bound, args, nargs, kwnames);
        Py_DECREF(bound);
        return r;
    }
    return PyObject_Vectorcall(py_run_kernel, stack, nargs + 1, NULL);
}

static PyMethodDef run_kernel_def = {
    "run_kernel", (PyCFunction)(void (*)(void))engine_run_kernel, METH_FASTCALL | METH_KEYWORDS,
    "Run kernel ``name`` of the active backend; returns a tensor, or a list for multi-output kernels.",
};

/* run_kernel_method(Engine, python_run_kernel, BYTES_PER_ELEMENT): Engine.run_kernel compiled. */
PyObject *run_kernel_method(PyObject *self, PyObject *args)
{
    PyObject *type, *fallback, *sizes;
    if (!PyArg_ParseTuple(args, "O!OO!:run_kernel_method", &PyType_Type, &type, &fallback, &PyDict_Type, &sizes))
        return NULL;
    if (!configured || (PyObject *)Py_TYPE(engine) != type) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: run_kernel_method needs the configured engine's class");
        return NULL;
    }
    if ((E_slow = slot_offset((PyTypeObject *)type, "_slow", 1)) < 0 ||
        (E_kernels = slot_offset((PyTypeObject *)type, "_kernels", 1)) < 0)
        return NULL;
    if (track_output_name == NULL && (track_output_name = PyUnicode_InternFromString("_track_output")) == NULL)
        return NULL;
    Py_XSETREF(py_run_kernel, Py_NewRef(fallback));
    Py_XSETREF(bytes_per_element, Py_NewRef(sizes));
    return PyDescr_NewMethod((PyTypeObject *)type, &run_kernel_def);
}
