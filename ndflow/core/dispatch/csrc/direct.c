/* ndflow compiled dispatch: the direct path (float32 element-wise kernels, matrix products) and Tensor.dispose. */
#include "dispatch.h"

/* ---- the direct path -------------------------------------------------------------------------------------- */

static int is_float32(PyObject *dtype)
{
    return dtype == float32_str || (PyUnicode_CheckExact(dtype) && PyUnicode_Compare(dtype, float32_str) == 0);
}

static int is_tensor(PyObject *o) { return Py_IS_TYPE(o, tensor_type) || Py_IS_TYPE(o, variable_type); }

/* The stored values of tensor `t` on layout L, if stored in the tensor's shape; NULL (no error) otherwise. */
static PyObject *stored_values(Layout *L, PyObject *t)
{
    PyObject *record = PyDict_GetItemWithError(L->data, SLOT(t, T_data_id));
    if (record == NULL || !Py_IS_TYPE(record, L->record_type))
        return NULL;
    PyObject *values = SLOT(record, L->r_values);
    if (values == NULL)
        return NULL;
    PyObject *shape = SLOT(t, T_shape);
    int same;
    if (L->r_shape >= 0) {
        PyObject *stored = SLOT(record, L->r_shape);
        if (stored == NULL)
            return NULL;
        same = stored == shape ? 1 : PyObject_RichCompareBool(stored, shape, Py_EQ);
    } else {
        PyObject *stored = PyObject_GetAttrString(values, "shape");
        if (stored == NULL)
            return NULL;
        same = PyObject_RichCompareBool(stored, shape, Py_EQ);
        Py_DECREF(stored);
    }
    return same == 1 ? values : NULL;
}

/* fn(*args) in the layout's per-thread context (cpu: numpy's floating-point errors off). */
static PyObject *call_direct(Layout *L, PyObject *fn, PyObject *const *args, size_t nargs)
{
    if (L->contexts == NULL)
        return PyObject_Vectorcall(fn, args, nargs, NULL);
    PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (ident == NULL)
        return NULL;
    PyObject *ctx = PyDict_GetItemWithError(L->contexts, ident); /* borrowed */
    Py_DECREF(ident);
    if (ctx != NULL)
        Py_INCREF(ctx);
    else if (PyErr_Occurred() || (ctx = PyObject_CallNoArgs(L->make_context)) == NULL) /* this thread's first */
        return NULL;
    PyObject *result;
    if (PyContext_Enter(ctx) < 0) { /* already entered: this thread runs inside it */
        PyErr_Clear();
        result = PyObject_Vectorcall(fn, args, nargs, NULL);
    } else {
        result = PyObject_Vectorcall(fn, args, nargs, NULL);
        if (PyContext_Exit(ctx) < 0)
            Py_CLEAR(result);
    }
    Py_DECREF(ctx);
    return result;
}

/* Store a direct kernel's result as new data of `shape`; returns the new tensor. */
static PyObject *keep_result(PyObject *result, PyObject *shape, PyObject *size, PyObject *backend)
{
    if (result == NULL || result == Py_None) /* None: the form declined (the kernel runs instead) */
        return result;
    /* The kernel may have let other threads run (torch releases the GIL): the layout is looked up again. */
    Layout *L = layout_for(backend);
    if (L == NULL || !L->direct_ok) {
        if (L != NULL)
            PyErr_SetString(PyExc_RuntimeError, "_dispatch: the backend's store changed while a kernel ran");
        Py_DECREF(result);
        return NULL;
    }
    if (!Py_IS_TYPE(result, L->value_type) && L->coerce != NULL)
        Py_SETREF(result, PyObject_CallOneArg(L->coerce, result));
    if (result == NULL)
        return NULL;
    PyObject *data_id = next_id(data_ids);
    if (data_id == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    PyObject *record = new_instance(L->record_type);
    if (record == NULL) {
        Py_DECREF(result);
        Py_DECREF(data_id);
        return NULL;
    }
    SLOT(record, L->r_values) = result;
    SLOT(record, L->r_ref) = PyLong_FromLong(1);
    if (L->r_shape >= 0)
        SLOT(record, L->r_shape) = Py_NewRef(shape);
    if (L->r_prepared >= 0)
        SLOT(record, L->r_prepared) = Py_NewRef(Py_None);
    int rc = PyDict_SetItem(L->data, data_id, record);
    Py_DECREF(record);
    PyObject *t = rc < 0 ? NULL : float_output(data_id, shape, size, backend);
    Py_DECREF(data_id);
    return t;
}

/* The direct kernel `kernel` and the layout of the active backend, if the path is open for tensor `t`. */
static PyObject *open_kernel(PyObject *kernel, PyObject *t, Layout **L, PyObject **backend)
{
    if (SLOT(t, T_disposed) != Py_False)
        return NULL;
    PyObject *table = SLOT(engine, E_direct);
    if (table == NULL || !PyDict_CheckExact(table) || PyDict_GET_SIZE(table) == 0)
        return NULL;
    PyObject *fn = PyDict_GetItemWithError(table, kernel);
    if (fn == NULL)
        return NULL;
    *backend = SLOT(engine, E_backend);
    if (*backend == NULL || SLOT(SLOT(t, T_info), I_backend) != *backend)
        return NULL;
    *L = layout_for(*backend);
    if (*L == NULL || !(*L)->direct_ok)
        return NULL;
    return fn;
}

/* The direct path of a binary op; None where it does not apply. */
PyObject *direct_binary(PyObject *kernel, PyObject *a, PyObject *b)
{
    if (!is_tensor(a) || !is_float32(SLOT(a, T_dtype)))
        return NOT_HANDLED;
    Layout *L;
    PyObject *backend, *fn, *args[2];
    if (is_tensor(b)) {
        if (!is_float32(SLOT(b, T_dtype)) || SLOT(b, T_disposed) != Py_False)
            return NOT_HANDLED;
        PyObject *sa = SLOT(a, T_shape), *sb = SLOT(b, T_shape);
        int same = sa == sb ? 1 : PyObject_RichCompareBool(sa, sb, Py_EQ);
        if (same != 1)
            return same < 0 ? NULL : NOT_HANDLED;
        if ((fn = open_kernel(kernel, a, &L, &backend)) == NULL)
            return PyErr_Occurred() ? NULL : NOT_HANDLED;
        if (SLOT(SLOT(b, T_info), I_backend) != backend)
            return NOT_HANDLED;
        if ((args[0] = stored_values(L, a)) == NULL || (args[1] = stored_values(L, b)) == NULL)
            return PyErr_Occurred() ? NULL : NOT_HANDLED;
        Py_INCREF(args[0]);
        Py_INCREF(args[1]);
    } else {
        if (PyFloat_CheckExact(b)) {
            double s = PyFloat_AS_DOUBLE(b);
            if (!(s >= -FLT_MAX && s <= FLT_MAX))
                return NOT_HANDLED;
        } else if (PyLong_CheckExact(b)) {
            int overflow;
            long s = PyLong_AsLongAndOverflow(b, &overflow);
            if (overflow || s < -EXACT_INT || s > EXACT_INT)
                return NOT_HANDLED;
        } else {
            return NOT_HANDLED;
        }
        if ((fn = open_kernel(kernel, a, &L, &backend)) == NULL)
            return PyErr_Occurred() ? NULL : NOT_HANDLED;
        if ((args[0] = stored_values(L, a)) == NULL)
            return PyErr_Occurred() ? NULL : NOT_HANDLED;
        Py_INCREF(args[0]);
        args[1] = L->scalar == NULL ? Py_NewRef(b) : PyObject_CallOneArg(L->scalar, b);
        if (args[1] == NULL) {
            Py_DECREF(args[0]);
            return NULL;
        }
    }
    Py_INCREF(fn); /* a kernel could re-register itself while it runs */
    Py_INCREF(backend);
    PyObject *out = keep_result(call_direct(L, fn, args, 2), SLOT(a, T_shape), SLOT(a, T_size), backend);
    Py_DECREF(fn);
    Py_DECREF(backend);
    Py_DECREF(args[0]);
    Py_DECREF(args[1]);
    return out;
}

/* The direct path of a unary op, or of a reduction over every axis (``reduce_all``: a 0-d output, ``key`` is
 * ``(kernel, "all")``); None where it does not apply. */
PyObject *direct_unary(PyObject *key, PyObject *x, int reduce_all)
{
    if (!is_tensor(x) || !is_float32(SLOT(x, T_dtype)))
        return NOT_HANDLED;
    Layout *L;
    PyObject *backend, *fn, *values;
    if ((fn = open_kernel(key, x, &L, &backend)) == NULL || (values = stored_values(L, x)) == NULL)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    if (reduce_all) { /* the table holds (fn, max_size) */
        if (!PyTuple_CheckExact(fn) || PyTuple_GET_SIZE(fn) != 2)
            return NOT_HANDLED;
        PyObject *limit = PyTuple_GET_ITEM(fn, 1);
        if (limit != Py_None) {
            int over = PyObject_RichCompareBool(SLOT(x, T_size), limit, Py_GT);
            if (over != 0)
                return over < 0 ? NULL : NOT_HANDLED;
        }
        fn = PyTuple_GET_ITEM(fn, 0);
    }
    PyObject *shape = reduce_all ? PyTuple_New(0) : Py_NewRef(SLOT(x, T_shape));
    PyObject *size = reduce_all ? PyLong_FromLong(1) : Py_NewRef(SLOT(x, T_size));
    if (shape == NULL || size == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(size);
        return NULL;
    }
    Py_INCREF(fn);
    Py_INCREF(backend);
    Py_INCREF(values);
    PyObject *out = keep_result(call_direct(L, fn, &values, 1), shape, size, backend);
    Py_DECREF(fn);
    Py_DECREF(backend);
    Py_DECREF(values);
    Py_DECREF(shape);
    Py_DECREF(size);
    return out;
}

/* The two sizes of a matrix's shape (a 2-tuple of ints); 0 (no error) for any other shape. */
static int matrix_dims(PyObject *shape, Py_ssize_t *rows, Py_ssize_t *cols)
{
    if (!PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != 2 || !PyLong_CheckExact(PyTuple_GET_ITEM(shape, 0)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(shape, 1)))
        return 0;
    *rows = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0));
    *cols = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 1));
    if (*rows < 0 || *cols < 0 || (*cols > 0 && *rows > PY_SSIZE_T_MAX / *cols)) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The direct path of a matrix product of two float32 matrices, (m, k) @ (k, n) without transposes (``key`` is
 * ``(kernel, "product")``, registered with register_direct_product); None where it does not apply. */
PyObject *direct_product(PyObject *key, PyObject *a, PyObject *b)
{
    if (!is_tensor(a) || !is_tensor(b) || !is_float32(SLOT(a, T_dtype)) || !is_float32(SLOT(b, T_dtype)) ||
        SLOT(b, T_disposed) != Py_False)
        return NOT_HANDLED;
    Py_ssize_t m, k, k_b, n;
    if (!matrix_dims(SLOT(a, T_shape), &m, &k) || !matrix_dims(SLOT(b, T_shape), &k_b, &n) || k != k_b ||
        (n > 0 && m > PY_SSIZE_T_MAX / n))
        return NOT_HANDLED;
    Layout *L;
    PyObject *backend, *fn, *args[2];
    if ((fn = open_kernel(key, a, &L, &backend)) == NULL)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    if (SLOT(SLOT(b, T_info), I_backend) != backend)
        return NOT_HANDLED;
    if ((args[0] = stored_values(L, a)) == NULL || (args[1] = stored_values(L, b)) == NULL)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    PyObject *shape = Py_BuildValue("(nn)", m, n);
    PyObject *size = PyLong_FromSsize_t(m * n);
    if (shape == NULL || size == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(size);
        return NULL;
    }
    Py_INCREF(fn); /* a kernel could re-register itself while it runs */
    Py_INCREF(backend);
    Py_INCREF(args[0]);
    Py_INCREF(args[1]);
    PyObject *out = keep_result(call_direct(L, fn, args, 2), shape, size, backend);
    Py_DECREF(fn);
    Py_DECREF(backend);
    Py_DECREF(args[0]);
    Py_DECREF(args[1]);
    Py_DECREF(shape);
    Py_DECREF(size);
    return out;
}

/* ``shape`` (a list or tuple of ints, one of them possibly -1) resolved for `size` values, as a new tuple;
 * NULL without an error where it is anything else (the Python op then raises). */
static PyObject *resolved_shape(PyObject *shape, Py_ssize_t size)
{
    if (!PyList_CheckExact(shape) && !PyTuple_CheckExact(shape))
        return NULL;
    Py_ssize_t rank = PySequence_Fast_GET_SIZE(shape), unknown = -1, known = 1;
    PyObject **dims = PySequence_Fast_ITEMS(shape);
    for (Py_ssize_t i = 0; i < rank; i++) {
        Py_ssize_t d = PyLong_CheckExact(dims[i]) ? PyLong_AsSsize_t(dims[i]) : -2;
        if (d == -1 && unknown < 0 && !PyErr_Occurred()) {
            unknown = i;
            continue;
        }
        if (d < 0 || (d > 0 && known > PY_SSIZE_T_MAX / d)) {
            PyErr_Clear();
            return NULL;
        }
        known *= d;
    }
    Py_ssize_t missing = -1;
    if (unknown >= 0) {
        if (known == 0 || size % known != 0)
            return NULL;
        missing = size / known;
    } else if (known != size) {
        return NULL;
    }
    PyObject *out = PyTuple_New(rank);
    for (Py_ssize_t i = 0; out != NULL && i < rank; i++) {
        PyObject *d = i == unknown ? PyLong_FromSsize_t(missing) : Py_NewRef(dims[i]);
        if (d == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, d);
    }
    return out;
}

/* A reshape that shares x's buffer (a kernel declared with register_shared_output, ``key`` is
 * ``(kernel, "shares")``); None where it does not apply. */
PyObject *direct_reshape(PyObject *key, PyObject *x, PyObject *shape)
{
    if (!is_tensor(x) || SLOT(x, T_dtype) == string_str || !PyUnicode_CheckExact(SLOT(x, T_dtype)) ||
        PyUnicode_Compare(SLOT(x, T_dtype), string_str) == 0)
        return NOT_HANDLED;
    Layout *L;
    PyObject *backend;
    PyObject *marker = open_kernel(key, x, &L, &backend);
    if (marker != Py_True)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    Py_ssize_t size = PyLong_AsSsize_t(SLOT(x, T_size));
    if (size == -1 && PyErr_Occurred())
        return NULL;
    PyObject *record = PyDict_GetItemWithError(L->data, SLOT(x, T_data_id));
    if (record == NULL || !Py_IS_TYPE(record, L->record_type) || SLOT(record, L->r_ref) == NULL)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    PyObject *new_shape = resolved_shape(shape, size);
    if (new_shape == NULL)
        return PyErr_Occurred() ? NULL : NOT_HANDLED;
    Py_ssize_t refs = PyLong_AsSsize_t(SLOT(record, L->r_ref));
    PyObject *count = (refs == -1 && PyErr_Occurred()) ? NULL : PyLong_FromSsize_t(refs + 1);
    if (count == NULL) {
        Py_DECREF(new_shape);
        return NULL;
    }
    Py_SETREF(SLOT(record, L->r_ref), count);
    PyObject *t = new_tensor(SLOT(x, T_data_id), new_shape, SLOT(x, T_size), SLOT(x, T_dtype),
                             Py_NewRef(SLOT(x, T_info)));
    Py_DECREF(new_shape);
    return t;
}

/* ---- disposal --------------------------------------------------------------------------------------------- */

/* Tensor.dispose: ``Engine.dispose_tensor`` for the plain case (no leak tracker, not a string, a store that
 * frees as RefCountedStore does); the Python method otherwise. */
PyObject *tensor_dispose(PyObject *t, PyObject *unused)
{
    if (!PyObject_TypeCheck(t, tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "dispose: not a Tensor");
        return NULL;
    }
    PyObject *disposed = SLOT(t, T_disposed);
    if (disposed == Py_True)
        Py_RETURN_NONE;
    PyObject *tracker = enabled ? engine_get(E_tracker) : NULL;
    if (tracker != Py_None || disposed != Py_False || SLOT(t, T_dtype) == string_str) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_CallOneArg(py_dispose_tensor, t);
    }
    PyObject *info = SLOT(t, T_info);
    PyObject *backend = SLOT(info, I_backend);
    Layout *L = layout_for(backend);
    if (L == NULL)
        return NULL;
    if (!L->dispose_ok || (PyUnicode_CheckExact(SLOT(t, T_dtype)) &&
                           PyUnicode_Compare(SLOT(t, T_dtype), string_str) == 0))
        return PyObject_CallOneArg(py_dispose_tensor, t);
    Py_SETREF(SLOT(t, T_disposed), Py_NewRef(Py_True));
    if (add_counter(E_tensors, -1) < 0)
        return NULL;
    PyObject *data_id = Py_NewRef(SLOT(t, T_data_id));
    Py_INCREF(info);
    int freed = 1, rc = 0;
    PyObject *record = PyDict_GetItemWithError(L->data, data_id);
    if (record != NULL) {
        Py_INCREF(record);
        PyObject *count = SLOT(record, L->r_ref);
        Py_ssize_t n = count == NULL ? -1 : PyLong_AsSsize_t(count);
        if (n == -1 && (count == NULL || PyErr_Occurred())) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "dispose: a data record has no ref_count");
            rc = -1;
        } else {
            PyObject *nv = PyLong_FromSsize_t(n - 1);
            if (nv == NULL)
                rc = -1;
            else
                Py_SETREF(SLOT(record, L->r_ref), nv);
            freed = n - 1 <= 0;
            if (rc == 0 && freed) {
                rc = PyDict_DelItem(L->data, data_id);
                if (rc == 0 && L->release != NULL) {
                    PyObject *release = Py_NewRef(L->release);
                    PyObject *r = PyObject_CallOneArg(release, record);
                    Py_DECREF(release);
                    rc = r == NULL ? -1 : 0;
                    Py_XDECREF(r);
                }
            }
        }
        Py_DECREF(record);
    } else if (PyErr_Occurred()) {
        rc = -1;
    }
    if (rc == 0 && freed) {
        PyObject *table = engine_get(E_data);
        PyObject *known = table == NULL ? NULL : PyDict_GetItemWithError(table, data_id);
        if (known != NULL && known != Py_None) {
            Py_ssize_t nbytes = PyLong_AsSsize_t(SLOT(info, I_nbytes));
            if ((nbytes == -1 && PyErr_Occurred()) || PyDict_DelItem(table, data_id) < 0 ||
                add_counter(E_buffers, -1) < 0 || add_counter(E_bytes, -nbytes) < 0)
                rc = -1;
        } else if (PyErr_Occurred()) {
            rc = -1;
        }
    }
    Py_DECREF(info);
    Py_DECREF(data_id);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef dispose_def = {
    "dispose", (PyCFunction)tensor_dispose, METH_NOARGS,
    "Free the tensor's data (once no other tensor shares it); a disposed tensor cannot be used again.",
};

PyObject *dispose_method(PyObject *self, PyObject *unused)
{
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: dispose_method before configure()");
        return NULL;
    }
    return PyDescr_NewMethod(tensor_type, &dispose_def);
}

