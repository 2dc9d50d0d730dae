/* ndflow compiled dispatch: a graph program's replayed steps (ndflow/converter/runtime/program.py, Program._steps).
 *
 * run_steps runs steps from ``start`` for as long as each is the plain replay: a kept kernel call (replay.py)
 * whose changing inputs have the recorded shapes and dtypes, nothing observing kernels (the engine's _slow is
 * False), no shape-cache work for the step. Per step it does what the Python loop does: the kernel through
 * Engine.run_kernel (kernel.c), the outputs into their slot, then the slots that die there disposed. It
 * returns the index of the first step it did not run, for the Python loop to run (or len(steps): all done).
 * In a run on the shape cache (mode 2), a shape-only step whose run only empties its slot (``skip[k]``) runs
 * here too.
 * A step whose kernel ran but whose outputs are not the plain one or list of new tensors is returned as
 * (index, kernel output, mark) for Python to settle. An error raised by a step propagates, with the step's
 * index in at[0].
 */
#include "dispatch.h"

/* vals[s][i] (borrowed), or NULL where that slot entry is missing (Python then reports it). */
static PyObject *slot_value(PyObject *vals, PyObject *ref_s, PyObject *ref_i)
{
    Py_ssize_t s = PyLong_AsSsize_t(ref_s), i = PyLong_AsSsize_t(ref_i);
    if ((s == -1 || i == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (s < 0 || s >= PyList_GET_SIZE(vals) || i < 0)
        return NULL;
    PyObject *entry = PyList_GET_ITEM(vals, s);
    if (!PyList_CheckExact(entry) || i >= PyList_GET_SIZE(entry))
        return NULL;
    return PyList_GET_ITEM(entry, i);
}

/* Whether every (slot, index, shape, dtype) of ``check`` names a tensor of that shape and dtype: 1 yes, 0 no,
 * -1 error. */
static int same_inputs(PyObject *vals, PyObject *check)
{
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(check); j++) {
        PyObject *e = PyTuple_GET_ITEM(check, j);
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 4)
            return 0;
        PyObject *a = slot_value(vals, PyTuple_GET_ITEM(e, 0), PyTuple_GET_ITEM(e, 1));
        if (a == NULL || Py_TYPE(a) != tensor_type)
            return 0;
        PyObject *want[2] = {PyTuple_GET_ITEM(e, 2), PyTuple_GET_ITEM(e, 3)};
        PyObject *have[2] = {SLOT(a, T_shape), SLOT(a, T_dtype)};
        for (int f = 0; f < 2; f++) {
            if (have[f] == want[f])
                continue;
            int eq = PyObject_RichCompareBool(have[f], want[f], Py_EQ);
            if (eq <= 0)
                return eq;
        }
    }
    return 1;
}

/* The kernel's inputs (a new tuple), or NULL with no error where one is missing. */
static PyObject *kernel_inputs(PyObject *vals, PyObject *refs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(refs);
    PyObject *inputs = PyTuple_New(n);
    if (inputs == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *r = PyTuple_GET_ITEM(refs, j), *a;
        if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 2 ||
            (a = slot_value(vals, PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1))) == NULL) {
            Py_DECREF(inputs);
            return NULL;
        }
        PyTuple_SET_ITEM(inputs, j, Py_NewRef(a));
    }
    return inputs;
}

/* The outputs of a kernel call as the slot's list: the tensor or list of tensors the call made (the last ones
 * of ``track`` from ``mark``). Steals ``out`` when it returns non-NULL; NULL without an error: Python settles;
 * NULL with one (no memory for the list): ``out`` is not stolen. */
static PyObject *plain_outputs(PyObject *out, PyObject *track, Py_ssize_t mark)
{
    Py_ssize_t made = PyList_GET_SIZE(track) - mark;
    if (Py_TYPE(out) == tensor_type) {
        if (made != 1 || PyList_GET_ITEM(track, mark) != out)
            return NULL;
        PyObject *outs = PyList_New(1);
        if (outs != NULL)
            PyList_SET_ITEM(outs, 0, out);
        return outs;
    }
    if (!PyList_CheckExact(out) || made != PyList_GET_SIZE(out))
        return NULL;
    for (Py_ssize_t j = 0; j < made; j++) {
        PyObject *t = PyList_GET_ITEM(out, j);
        if (Py_TYPE(t) != tensor_type || PyList_GET_ITEM(track, mark + j) != t)
            return NULL;
    }
    return out;
}

/* ``if not t.kept and t.id not in keep: ENGINE.dispose_tensor(t)`` for a slot value that is not a Tensor. */
static int free_other(PyObject *t, PyObject *keep)
{
    PyObject *kept = PyObject_GetAttrString(t, "kept");
    if (kept == NULL)
        return -1;
    int is_kept = PyObject_IsTrue(kept);
    Py_DECREF(kept);
    if (is_kept != 0)
        return is_kept < 0 ? -1 : 0;
    PyObject *id = PyObject_GetAttrString(t, "id");
    if (id == NULL)
        return -1;
    int in_keep = PySet_Contains(keep, id);
    Py_DECREF(id);
    if (in_keep != 0)
        return in_keep < 0 ? -1 : 0;
    PyObject *r = PyObject_CallOneArg(py_dispose_tensor, t);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* Dispose the tensors of the slots in ``free`` that are not kept and not in ``keep``; the slots become None. */
static int free_slots(PyObject *vals, PyObject *free, PyObject *keep)
{
    PyObject *seq = PySequence_Fast(free, "run_steps: a step's free slots must be a sequence");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        Py_ssize_t s = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, j));
        if (s == -1 && PyErr_Occurred())
            goto fail;
        if (s < 0 || s >= PyList_GET_SIZE(vals)) {
            PyErr_SetString(PyExc_IndexError, "run_steps: a free slot out of range");
            goto fail;
        }
        PyObject *entry = PyList_GET_ITEM(vals, s);
        if (entry == Py_None)
            continue;
        Py_INCREF(entry);
        PyObject *items = PySequence_Fast(entry, "run_steps: a slot must hold a list of tensors");
        if (items == NULL) {
            Py_DECREF(entry);
            goto fail;
        }
        int rc = 0;
        for (Py_ssize_t m = 0; rc == 0 && m < PySequence_Fast_GET_SIZE(items); m++) {
            PyObject *t = PySequence_Fast_GET_ITEM(items, m);
            if (t == Py_None)
                continue;
            if (!PyObject_TypeCheck(t, tensor_type)) { /* another value with kept and id: as Python reads it */
                Py_INCREF(t); /* its attributes may run Python code */
                rc = free_other(t, keep);
                Py_DECREF(t);
                continue;
            }
            if (SLOT(t, T_kept) == Py_True)
                continue;
            int kept = PySet_GET_SIZE(keep) > 0 ? PySet_Contains(keep, SLOT(t, T_id)) : 0;
            if (kept != 0) {
                rc = kept < 0 ? -1 : 0;
                continue;
            }
            Py_INCREF(t);
            PyObject *r = Py_TYPE(t) == tensor_type ? tensor_dispose(t, NULL) : PyObject_CallOneArg(py_dispose_tensor, t);
            Py_DECREF(t);
            if (r == NULL)
                rc = -1;
            Py_XDECREF(r);
        }
        Py_DECREF(items);
        Py_DECREF(entry);
        if (rc < 0)
            goto fail;
        if (PyList_SetItem(vals, s, Py_NewRef(Py_None)) < 0)
            goto fail;
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

/* Step ``k`` of a cached run that only empties its slot (a shape-only step off the frontier): the slot None,
 * then the slots that die there freed. */
static int skip_step(PyObject *vals, PyObject *step, PyObject *keep)
{
    Py_ssize_t o = PyLong_AsSsize_t(PyTuple_GET_ITEM(step, 3));
    if (o == -1 && PyErr_Occurred())
        return -1;
    if (o < 0 || o >= PyList_GET_SIZE(vals)) {
        PyErr_SetString(PyExc_IndexError, "run_steps: an output slot out of range");
        return -1;
    }
    if (PyList_SetItem(vals, o, Py_NewRef(Py_None)) < 0)
        return -1;
    return free_slots(vals, PyTuple_GET_ITEM(step, 4), keep);
}

/* run_steps(steps, calls, replayable, pure, skip, vals, track, keep_ids, mode, start, at): see the top of the
 * file. */
PyObject *run_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyList_CheckExact(args[2]) ||
        !PyList_CheckExact(args[5]) || !PyList_CheckExact(args[6]) || !PyAnySet_Check(args[7]) ||
        !PyLong_CheckExact(args[8]) || !PyLong_CheckExact(args[9]) || !PyList_CheckExact(args[10]) ||
        PyList_GET_SIZE(args[10]) < 1) {
        PyErr_SetString(PyExc_TypeError, "run_steps(steps, calls, replayable, pure, skip, vals: list, track: list, "
                                         "keep_ids: set, mode: int, start: int, at: list)");
        return NULL;
    }
    PyObject *steps = args[0], *calls = args[1], *replayable = args[2], *pure = args[3], *skip = args[4];
    PyObject *vals = args[5], *track = args[6], *keep = args[7], *at = args[10];
    long mode = PyLong_AsLong(args[8]);
    Py_ssize_t k = PyLong_AsSsize_t(args[9]);
    if ((mode == -1 || k == -1) && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(steps);
    if (!configured || !enabled || E_slow <= 0 || k < 0)
        return PyLong_FromSsize_t(k);
    if (mode != 0 && !PyList_CheckExact(pure))
        return PyLong_FromSsize_t(k);
    for (; k < n; k++) {
        if (SLOT(engine, E_slow) != Py_False || k >= PyList_GET_SIZE(calls) || k >= PyList_GET_SIZE(replayable))
            break;
        PyObject *call = PyList_GET_ITEM(calls, k), *step = PyList_GET_ITEM(steps, k);
        if (mode != 0 && (k >= PyList_GET_SIZE(pure) || PyList_GET_ITEM(pure, k) != Py_False)) {
            /* the shape cache's step: in a cached run, one that only empties its slot runs here */
            if (mode != 2 || !PyList_CheckExact(skip) || k >= PyList_GET_SIZE(skip) ||
                PyList_GET_ITEM(skip, k) != Py_True || !PyTuple_CheckExact(step) || PyTuple_GET_SIZE(step) != 5)
                break; /* replayed from the cache or recorded: Python */
            Py_INCREF(step);
            int rc = skip_step(vals, step, keep);
            Py_DECREF(step);
            if (rc < 0)
                goto error;
            continue;
        }
        if (PyList_GET_ITEM(replayable, k) != Py_True || !PyTuple_CheckExact(call) || PyTuple_GET_SIZE(call) < 6 ||
            !PyTuple_CheckExact(step) || PyTuple_GET_SIZE(step) != 5)
            break;
        PyObject *kernel = PyTuple_GET_ITEM(call, 1), *attrs = PyTuple_GET_ITEM(call, 3);
        PyObject *check = PyTuple_GET_ITEM(call, 4), *refs = PyTuple_GET_ITEM(call, 5);
        if (!PyUnicode_CheckExact(kernel) || !PyTuple_CheckExact(check) || !PyTuple_CheckExact(refs))
            break;
        Py_INCREF(call); /* held from here: comparisons, the kernel itself may change the program's calls */
        int same = same_inputs(vals, check);
        PyObject *inputs = same > 0 ? kernel_inputs(vals, refs) : NULL;
        if (inputs == NULL) {
            Py_DECREF(call);
            if (PyErr_Occurred())
                goto error;
            break; /* not the recorded signature, or an input missing: Python */
        }
        Py_ssize_t mark = PyList_GET_SIZE(track);
        PyObject *kargs[3] = {kernel, inputs, attrs};
        Py_INCREF(step);
        PyObject *out = engine_run_kernel(engine, kargs, 3, NULL);
        Py_DECREF(inputs);
        Py_DECREF(call);
        if (out == NULL) {
            Py_DECREF(step);
            goto error;
        }
        PyObject *outs = plain_outputs(out, track, mark);
        if (outs == NULL) {
            Py_DECREF(step);
            if (PyErr_Occurred()) {
                Py_DECREF(out);
                goto error;
            }
            PyObject *settle = Py_BuildValue("(nNn)", k, out, mark); /* steals out, even on failure */
            if (settle == NULL)
                goto error;
            return settle;
        }
        PyObject *out_slot = PyTuple_GET_ITEM(step, 3);
        Py_ssize_t o = PyLong_AsSsize_t(out_slot);
        int rc = (o == -1 && PyErr_Occurred()) ? -1 : 0;
        if (rc == 0 && (o < 0 || o >= PyList_GET_SIZE(vals))) {
            PyErr_SetString(PyExc_IndexError, "run_steps: an output slot out of range");
            rc = -1;
        }
        if (rc == 0)
            rc = PyList_SetItem(vals, o, outs); /* steals outs */
        else
            Py_DECREF(outs);
        if (rc == 0)
            rc = free_slots(vals, PyTuple_GET_ITEM(step, 4), keep);
        Py_DECREF(step);
        if (rc < 0)
            goto error;
    }
    return PyLong_FromSsize_t(k);
error:;
    PyObject *where = PyLong_FromSsize_t(k);
    if (where != NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyList_SetItem(at, 0, where) < 0)
            PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return NULL;
}
