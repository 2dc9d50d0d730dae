/* ndflow compiled dispatch: the Op type (op functions with the direct path in front) and the module. */
#include "dispatch.h"

/* ---- ops: an op function with the direct path in front (nf.add is one) ------------------------------------ */

enum { OP_UNARY = 1, OP_BINARY = 2, OP_REDUCE_ALL = 3, OP_RESHAPE = 4, OP_PRODUCT = 5 };

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall;
    int kind;           /* OP_*: f(x), f(a, b), f(x) reducing every axis, f(x, shape) sharing x's buffer, f(a, b)
                           a matrix product */
    int nargs;          /* the positional arguments of the direct path's calls */
    PyObject *kernel;   /* the kernel's name */
    PyObject *key;      /* its key in the direct table: the name, or (name, "all") / (name, "shares") */
    PyObject *fallback; /* the op's Python function */
} Op;

static PyObject *op_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Op *op = (Op *)self;
    if (enabled && kwnames == NULL && PyVectorcall_NARGS(nargsf) == op->nargs) {
        PyObject *t;
        switch (op->kind) {
        case OP_BINARY:
            t = direct_binary(op->key, args[0], args[1]);
            break;
        case OP_RESHAPE:
            t = direct_reshape(op->key, args[0], args[1]);
            break;
        case OP_PRODUCT:
            t = direct_product(op->key, args[0], args[1]);
            break;
        default:
            t = direct_unary(op->key, args[0], op->kind == OP_REDUCE_ALL);
        }
        if (t != Py_None)
            return t;
        Py_DECREF(t);
    }
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

/* Bound to a tensor as its method (Tensor.add, Tensor.__add__), as a Python function would be. */
static PyObject *op_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int op_traverse(Op *op, visitproc visit, void *arg)
{
    Py_VISIT(op->fallback);
    return 0;
}

static int op_clear(Op *op)
{
    Py_CLEAR(op->fallback);
    Py_CLEAR(op->kernel);
    Py_CLEAR(op->key);
    return 0;
}

static void op_dealloc(Op *op)
{
    PyObject_GC_UnTrack(op);
    op_clear(op);
    PyObject_GC_Del(op);
}

/* Attributes a function has (__name__, __doc__, __module__, __qualname__, __annotations__...) come from the
 * Python function; __wrapped__ is that function (inspect.signature follows it). */
static PyObject *op_getattro(PyObject *self, PyObject *name)
{
    Op *op = (Op *)self;
    if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0)
        return Py_NewRef(op->fallback);
    if (PyUnicode_CompareWithASCIIString(name, "__class__") == 0)
        return PyObject_GenericGetAttr(self, name);
    PyObject *value = PyObject_GetAttr(op->fallback, name);
    if (value != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return value;
    PyErr_Clear();
    return PyObject_GenericGetAttr(self, name);
}

static PyObject *op_repr(Op *op) { return PyUnicode_FromFormat("<op %R (compiled dispatch)>", op->fallback); }

static PyMemberDef op_members[] = {
    {"kernel", T_OBJECT, offsetof(Op, kernel), READONLY, "the kernel the direct path runs"},
    {NULL},
};

static PyTypeObject OpType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ndflow.core.dispatch._dispatch.Op",
    .tp_basicsize = sizeof(Op),
    .tp_dealloc = (destructor)op_dealloc,
    .tp_vectorcall_offset = offsetof(Op, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)op_repr,
    .tp_getattro = op_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_descr_get = op_descr_get,
    .tp_members = op_members,
};

static PyObject *make_op(PyObject *self, PyObject *args)
{
    int kind;
    PyObject *kernel, *fallback;
    if (!PyArg_ParseTuple(args, "iUO:op", &kind, &kernel, &fallback))
        return NULL;
    if (kind < OP_UNARY || kind > OP_PRODUCT) {
        PyErr_SetString(PyExc_ValueError,
                        "_dispatch.op: kind must be 1 (unary), 2 (binary), 3 (reduce all), 4 (reshape), 5 (product)");
        return NULL;
    }
    PyObject *key = kind == OP_REDUCE_ALL ? Py_BuildValue("(Os)", kernel, "all")
                    : kind == OP_RESHAPE  ? Py_BuildValue("(Os)", kernel, "shares")
                    : kind == OP_PRODUCT  ? Py_BuildValue("(Os)", kernel, "product")
                                          : Py_NewRef(kernel);
    if (key == NULL)
        return NULL;
    Op *op = PyObject_GC_New(Op, &OpType);
    if (op == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    op->vectorcall = op_vectorcall;
    op->kind = kind;
    op->nargs = kind == OP_BINARY || kind == OP_RESHAPE || kind == OP_PRODUCT ? 2 : 1;
    op->kernel = Py_NewRef(kernel);
    op->key = key;
    op->fallback = Py_NewRef(fallback);
    PyObject_GC_Track(op);
    return (PyObject *)op;
}

/* ---- module ----------------------------------------------------------------------------------------------- */

static PyObject *py_direct_binary(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (n != 3) {
        PyErr_SetString(PyExc_TypeError, "direct_binary(kernel, a, b)");
        return NULL;
    }
    if (!configured || !enabled || !PyUnicode_CheckExact(args[0]))
        Py_RETURN_NONE;
    return direct_binary(args[0], args[1], args[2]);
}

static PyObject *py_direct_unary(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "direct_unary(kernel, x)");
        return NULL;
    }
    if (!configured || !enabled || !PyUnicode_CheckExact(args[0]))
        Py_RETURN_NONE;
    return direct_unary(args[0], args[1], 0);
}

/* dispose_scope(track, keep_ids): Engine.dispose_tensor on every tensor of a closing scope's list that is not
 * kept, not disposed and whose id is not in the set keep_ids (the scope's result). */
static PyObject *py_dispose_scope(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (n != 2 || !PyList_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "dispose_scope(track: list, keep_ids: set)");
        return NULL;
    }
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch: dispose_scope before configure()");
        return NULL;
    }
    PyObject *track = args[0], *keep = args[1];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(track); i++) {
        PyObject *t = PyList_GET_ITEM(track, i);
        if (!PyObject_TypeCheck(t, tensor_type)) {
            PyErr_SetString(PyExc_TypeError, "dispose_scope: the scope tracks a non-tensor");
            return NULL;
        }
        if (SLOT(t, T_kept) == Py_True || SLOT(t, T_disposed) == Py_True)
            continue;
        if (PySet_GET_SIZE(keep) > 0) {
            int kept = PySet_Contains(keep, SLOT(t, T_id));
            if (kept < 0)
                return NULL;
            if (kept)
                continue;
        }
        Py_INCREF(t);
        PyObject *r = tensor_dispose(t, NULL);
        Py_DECREF(t);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

static PyObject *py_enabled(PyObject *self, PyObject *unused) { return PyBool_FromLong(enabled); }

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(engine, Tensor, Variable, DataInfo, Scope, data_ids, store_layout, dispose_tensor, 'float32', "
     "'string')"},
    {"set_enabled", set_enabled, METH_O, "Turn the compiled paths on or off (off: ops call their Python functions)."},
    {"enabled", py_enabled, METH_NOARGS, "Whether the compiled paths are on."},
    {"forget_layouts", forget_layouts, METH_NOARGS, "Forget the cached store layouts (backends changed)."},
    {"op", make_op, METH_VARARGS,
     "op(kind, kernel, fallback): an op function with the direct path in front (kind 1 unary, 2 binary, 3 a "
     "reduction over every axis, 4 a reshape sharing its input's buffer, 5 a matrix product)."},
    {"run_kernel_method", run_kernel_method, METH_VARARGS,
     "run_kernel_method(Engine, python_run_kernel, BYTES_PER_ELEMENT): Engine.run_kernel as a method descriptor."},
    {"dispose_scope", (PyCFunction)(void (*)(void))py_dispose_scope, METH_FASTCALL,
     "dispose_scope(track, keep_ids): dispose a closing scope's tensors that are not kept or returned."},
    {"dispose_method", dispose_method, METH_NOARGS, "Tensor.dispose as a method descriptor."},
    {"run_steps", (PyCFunction)(void (*)(void))run_steps, METH_FASTCALL,
     "run_steps(steps, calls, replayable, pure, skip, vals, track, keep_ids, mode, start, at): a graph program's plain "
     "replayed steps from start; the first step left to Python, or (step, output, mark) to settle."},
    {"direct_binary", (PyCFunction)(void (*)(void))py_direct_binary, METH_FASTCALL,
     "direct_binary(kernel, a, b): the direct path's tensor, or None where it does not apply."},
    {"track_output", (PyCFunction)(void (*)(void))py_track_output_c, METH_FASTCALL,
     "track_output(data_id, shape, dtype, backend): the tensor the compiled run_kernel makes for one kernel output "
     "(the mirror of ndflow.core.dispatch.outputs.track_output; tests compare the two)."},
    {"direct_unary", (PyCFunction)(void (*)(void))py_direct_unary, METH_FASTCALL,
     "direct_unary(kernel, x): the direct path's tensor, or None where it does not apply."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ndflow.core.dispatch._dispatch",
    "ndflow's compiled dispatch (see ndflow/core/dispatch/compiled.py).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__dispatch(void)
{
    if (PyType_Ready(&OpType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL || PyModule_AddObjectRef(m, "Op", (PyObject *)&OpType) < 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}

