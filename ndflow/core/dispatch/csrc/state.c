/* ndflow compiled dispatch: configuration, backend store layouts, the engine's bookkeeping. */
#include "dispatch.h"

/* ---- configuration ---------------------------------------------------------------------------------------- */

int configured = 0;
int enabled = 0;
PyObject *engine;            /* the engine (its attributes are slots) */
PyObject *data_ids;          /* core.backend's data id counter (itertools.count) */
PyObject *layout_of;         /* backend -> StoreLayout tuple or None (Python) */
PyObject *py_dispose_tensor; /* Engine.dispose_tensor, bound: the Python dispose */
PyObject *float32_str, *string_str;
PyTypeObject *tensor_type, *variable_type, *info_type, *scope_type;

Py_ssize_t T_shape, T_dtype, T_size, T_id, T_data_id, T_info, T_kept, T_scope_id, T_disposed;
Py_ssize_t I_backend, I_nbytes, S_track, S_id;
Py_ssize_t E_direct, E_backend, E_data, E_buffers, E_bytes, E_tensors, E_scope, E_tensor_ids, E_tracker;
unsigned long owner_thread; /* the engine's owner thread (engine._owner) */

/* The offset of slot `name` of `type` (an object slot that may be written); -1 with an error otherwise. */
Py_ssize_t slot_offset(PyTypeObject *type, const char *name, int required)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL) {
        if (!required && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return -2;
        }
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY))
            offset = m->offset;
    }
    Py_DECREF(descr);
    if (offset < 0)
        PyErr_Format(PyExc_TypeError, "_dispatch: %s.%s is not a __slots__ attribute", type->tp_name, name);
    return offset;
}

PyObject *configure(PyObject *self, PyObject *args)
{
    PyObject *eng, *tensor, *variable, *info, *scope, *counter, *layout_fn, *dispose_fn, *f32, *str;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!OOOUU:configure", &eng, &PyType_Type, &tensor, &PyType_Type, &variable,
                          &PyType_Type, &info, &PyType_Type, &scope, &counter, &layout_fn, &dispose_fn, &f32, &str))
        return NULL;
    if (Py_TYPE(counter)->tp_iternext == NULL) {
        PyErr_SetString(PyExc_TypeError, "_dispatch: the data id counter must be an iterator");
        return NULL;
    }
    Py_XSETREF(engine, Py_NewRef(eng));
    tensor_type = (PyTypeObject *)Py_NewRef(tensor);
    variable_type = (PyTypeObject *)Py_NewRef(variable);
    info_type = (PyTypeObject *)Py_NewRef(info);
    scope_type = (PyTypeObject *)Py_NewRef(scope);
    Py_XSETREF(data_ids, Py_NewRef(counter));
    Py_XSETREF(layout_of, Py_NewRef(layout_fn));
    Py_XSETREF(py_dispose_tensor, Py_NewRef(dispose_fn));
    Py_XSETREF(float32_str, Py_NewRef(f32));
    Py_XSETREF(string_str, Py_NewRef(str));
#define OFF(var, type, name)                                  \
    if ((var = slot_offset(type, name, 1)) < 0)               \
        return NULL;
    OFF(T_shape, tensor_type, "shape")
    OFF(T_dtype, tensor_type, "dtype")
    OFF(T_size, tensor_type, "size")
    OFF(T_id, tensor_type, "id")
    OFF(T_data_id, tensor_type, "data_id")
    OFF(T_info, tensor_type, "_info")
    OFF(T_kept, tensor_type, "kept")
    OFF(T_scope_id, tensor_type, "scope_id")
    OFF(T_disposed, tensor_type, "_disposed")
    OFF(I_backend, info_type, "backend")
    OFF(I_nbytes, info_type, "nbytes")
    OFF(S_track, scope_type, "track")
    OFF(S_id, scope_type, "id")
    PyTypeObject *etype = Py_TYPE(engine);
    OFF(E_direct, etype, "_direct")
    OFF(E_backend, etype, "_backend")
    OFF(E_data, etype, "_data")
    OFF(E_buffers, etype, "num_data_buffers")
    OFF(E_bytes, etype, "num_bytes")
    OFF(E_tensors, etype, "num_tensors")
    OFF(E_scope, etype, "_owner_scope")
    OFF(E_tensor_ids, etype, "_tensor_ids")
    OFF(E_tracker, etype, "tracker")
#undef OFF
    /* The thread whose scope the slot _owner_scope is; other threads' scopes are read through active_scope. */
    PyObject *owner = PyObject_GetAttrString(engine, "_owner");
    if (owner == NULL)
        return NULL;
    owner_thread = PyLong_AsUnsignedLong(owner);
    Py_DECREF(owner);
    if (owner_thread == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *ids = SLOT(engine, E_tensor_ids);
    if (ids == NULL || Py_TYPE(ids)->tp_iternext == NULL) {
        PyErr_SetString(PyExc_TypeError, "_dispatch: engine._tensor_ids must be an iterator");
        return NULL;
    }
    configured = 1;
    Py_RETURN_NONE;
}

PyObject *set_enabled(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    if (on && !configured) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: enabled before configure()");
        return NULL;
    }
    enabled = on;
    Py_RETURN_NONE;
}

/* ---- backend store layouts -------------------------------------------------------------------------------- */


static Layout layouts[MAX_LAYOUTS];
static int n_layouts = 0;

static void clear_layout(Layout *L)
{
    Py_CLEAR(L->backend);
    Py_CLEAR(L->data);
    Py_CLEAR(L->record_type);
    Py_CLEAR(L->release);
    Py_CLEAR(L->value_type);
    Py_CLEAR(L->coerce);
    Py_CLEAR(L->scalar);
    Py_CLEAR(L->contexts);
    Py_CLEAR(L->make_context);
    L->dispose_ok = L->direct_ok = 0;
}

PyObject *forget_layouts(PyObject *self, PyObject *unused)
{
    for (int i = 0; i < n_layouts; i++)
        clear_layout(&layouts[i]);
    n_layouts = 0;
    Py_RETURN_NONE;
}

static PyObject *none_or_ref(PyObject *o) { return o == Py_None ? NULL : Py_NewRef(o); }

/* Fill L from the layout tuple (data, record_type, release, value_type, coerce, scalar, contexts). */
static int load_layout(Layout *L, PyObject *backend, PyObject *spec)
{
    L->backend = Py_NewRef(backend);
    if (spec == Py_None)
        return 0;
    PyObject *data, *record_type, *release, *value_type, *coerce, *scalar, *contexts, *make_context;
    if (!PyArg_ParseTuple(spec, "O!O!OOOOOO:store_layout", &PyDict_Type, &data, &PyType_Type, &record_type,
                          &release, &value_type, &coerce, &scalar, &contexts, &make_context))
        return -1;
    L->data = Py_NewRef(data);
    L->record_type = (PyTypeObject *)Py_NewRef(record_type);
    if ((L->r_values = slot_offset(L->record_type, "values", 1)) < 0 ||
        (L->r_ref = slot_offset(L->record_type, "ref_count", 1)) < 0)
        return -1;
    if ((L->r_shape = slot_offset(L->record_type, "shape", 0)) == -1 ||
        (L->r_prepared = slot_offset(L->record_type, "prepared", 0)) == -1)
        return -1;
    L->release = none_or_ref(release);
    L->coerce = none_or_ref(coerce);
    L->scalar = none_or_ref(scalar);
    L->contexts = none_or_ref(contexts);
    L->make_context = none_or_ref(make_context);
    if (L->contexts != NULL && (!PyDict_Check(L->contexts) || L->make_context == NULL)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch: store_layout contexts must be a dict, with make_context");
        return -1;
    }
    L->dispose_ok = 1;
    if (value_type != Py_None) {
        if (!PyType_Check(value_type)) {
            PyErr_SetString(PyExc_TypeError, "_dispatch: store_layout value_type must be a type");
            return -1;
        }
        /* Records made here set every slot the record type has: anything beyond these four is not ours. */
        Py_ssize_t known = 2 + (L->r_shape >= 0) + (L->r_prepared >= 0);
        Py_ssize_t slots = (L->record_type->tp_basicsize - (Py_ssize_t)sizeof(PyObject)) / (Py_ssize_t)sizeof(PyObject *);
        if (slots != known || (L->record_type->tp_flags & Py_TPFLAGS_MANAGED_DICT) || L->record_type->tp_dictoffset) {
            PyErr_Format(PyExc_TypeError, "_dispatch: record type %s has slots other than values, ref_count, shape, "
                         "prepared", L->record_type->tp_name);
            return -1;
        }
        L->value_type = (PyTypeObject *)Py_NewRef(value_type);
        L->direct_ok = 1;
    }
    return 0;
}

/* The layout of a backend (cached); NULL with an error set on failure. */
Layout *layout_for(PyObject *backend)
{
    for (int i = 0; i < n_layouts; i++)
        if (layouts[i].backend == backend)
            return &layouts[i];
    if (n_layouts == MAX_LAYOUTS)
        Py_DECREF(forget_layouts(NULL, NULL));
    PyObject *spec = PyObject_CallOneArg(layout_of, backend);
    if (spec == NULL)
        return NULL;
    Layout *L = &layouts[n_layouts];
    memset(L, 0, sizeof(*L));
    int rc = load_layout(L, backend, spec);
    Py_DECREF(spec);
    if (rc < 0) {
        clear_layout(L);
        return NULL;
    }
    n_layouts++;
    return L;
}

/* ---- the engine's bookkeeping ----------------------------------------------------------------------------- */

/* The engine's slot at `off` (borrowed); NULL with an error where it is unset. */
PyObject *engine_get(Py_ssize_t off)
{
    PyObject *v = SLOT(engine, off);
    if (v == NULL)
        PyErr_SetString(PyExc_AttributeError, "_dispatch: an engine attribute is unset");
    return v;
}

/* engine.<slot at off> += delta */
int add_counter(Py_ssize_t off, Py_ssize_t delta)
{
    PyObject *v = engine_get(off);
    if (v == NULL)
        return -1;
    Py_ssize_t n = PyLong_AsSsize_t(v);
    if (n == -1 && PyErr_Occurred())
        return -1;
    PyObject *nv = PyLong_FromSsize_t(n + delta);
    if (nv == NULL)
        return -1;
    Py_SETREF(SLOT(engine, off), nv);
    return 0;
}

/* The next value of an itertools.count (the engine's tensor ids, the data ids). */
PyObject *next_id(PyObject *counter)
{
    PyObject *v = Py_TYPE(counter)->tp_iternext(counter);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: an id counter is exhausted");
    return v;
}

PyObject *new_instance(PyTypeObject *type) { return type->tp_alloc(type, 0); }

/* A DataInfo of `nbytes` for new data `data_id`, entered in engine._data and counted (a new reference). */
PyObject *new_data_info(PyObject *data_id, PyObject *backend, Py_ssize_t nbytes)
{
    PyObject *info = new_instance(info_type);
    if (info == NULL)
        return NULL;
    SLOT(info, I_backend) = Py_NewRef(backend);
    PyObject *table;
    if ((SLOT(info, I_nbytes) = PyLong_FromSsize_t(nbytes)) == NULL || (table = engine_get(E_data)) == NULL ||
        PyDict_SetItem(table, data_id, info) < 0 || add_counter(E_buffers, 1) < 0 || add_counter(E_bytes, nbytes) < 0) {
        Py_DECREF(info);
        return NULL;
    }
    return info;
}

/* A new tensor over `data_id` (``Engine._track_output`` after its DataInfo: counted, tracked by the active
 * scope; no leak tracker). Steals `info`. */
PyObject *new_tensor(PyObject *data_id, PyObject *shape, PyObject *size, PyObject *dtype, PyObject *info)
{
    PyObject *ids = engine_get(E_tensor_ids);
    PyObject *tensor_id = ids == NULL ? NULL : next_id(ids);
    if (tensor_id == NULL) {
        Py_DECREF(info);
        return NULL;
    }
    PyObject *t = new_instance(tensor_type);
    if (t == NULL) {
        Py_DECREF(tensor_id);
        Py_DECREF(info);
        return NULL;
    }
    SLOT(t, T_shape) = Py_NewRef(shape);
    SLOT(t, T_dtype) = Py_NewRef(dtype);
    SLOT(t, T_size) = Py_NewRef(size);
    SLOT(t, T_id) = tensor_id;
    SLOT(t, T_data_id) = Py_NewRef(data_id);
    SLOT(t, T_info) = info;
    SLOT(t, T_kept) = Py_NewRef(Py_False);
    SLOT(t, T_disposed) = Py_NewRef(Py_False);
    PyObject *scope, *other = NULL; /* other: a strong reference to another thread's scope */
    if (add_counter(E_tensors, 1) < 0)
        goto fail;
    if (PyThread_get_thread_ident() == owner_thread)
        scope = engine_get(E_scope);
    else
        scope = other = PyObject_GetAttrString(engine, "active_scope");
    if (scope == NULL)
        goto fail;
    if (scope == Py_None) {
        SLOT(t, T_scope_id) = PyLong_FromLong(0);
    } else {
        if (!Py_IS_TYPE(scope, scope_type)) {
            PyErr_SetString(PyExc_TypeError, "_dispatch: engine.active_scope is not a Scope");
            goto fail;
        }
        SLOT(t, T_scope_id) = Py_NewRef(SLOT(scope, S_id));
        if (PyList_Append(SLOT(scope, S_track), t) < 0)
            goto fail;
    }
    Py_XDECREF(other);
    return t;
fail:
    Py_XDECREF(other);
    Py_DECREF(t);
    return NULL;
}

/* A float32 tensor over new data `data_id` (``DirectPath._float_output``). */
PyObject *float_output(PyObject *data_id, PyObject *shape, PyObject *size, PyObject *backend)
{
    Py_ssize_t n = PyLong_AsSsize_t(size);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    PyObject *info = new_data_info(data_id, backend, 4 * n);
    return info == NULL ? NULL : new_tensor(data_id, shape, size, float32_str, info);
}

