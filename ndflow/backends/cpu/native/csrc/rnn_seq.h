/* A recurrent layer's whole time loop in one call (rnn_seq.c). */
#ifndef NDFLOW_RNN_SEQ_H
#define NDFLOW_RNN_SEQ_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* rnn_sequence(kind, B, T, U, p, rk, rb, h, c, out, act, ract, backwards, seq, threads): kind 0 LSTM, 1 GRU
 * (TF.js's), 2 GRU with the reset after the product (rb: its recurrent bias); p the input projection (B, T, G*U),
 * rk the recurrent kernel (U, G*U); h (and c) hold the initial states and receive the final ones; out (B, T, U) the
 * outputs with ``seq`` (else None); act and ract activation codes (0 linear, 1 tanh, 2 sigmoid, 3 hard sigmoid as
 * TF.js, 4 relu); the batch's rows split over ``threads``. */
PyObject *gemm_rnn_sequence(PyObject *self, PyObject *args);

/* lstm_grad(B, T, U, d_out, dh, dc, rkt, c0, zs, cs, dp, act, ract, backwards, seq, threads): back-propagation
 * through an LSTM's loop run with zs, cs (and hs) kept (rnn_sequence's training form): d_out the outputs' gradient
 * ((B, T, U) with seq, else (B, U)), dh and dc the final states' (updated in place to the initial states'), rkt the
 * recurrent kernel transposed (4U, U); writes dp (B, T, 4U, time order). The recurrent kernel's gradient is one product
 * of the caller's (the kept outputs against dp). The batch's rows split over ``threads``. */
PyObject *gemm_lstm_grad(PyObject *self, PyObject *args);

/* Take array ``i`` of a call into ``views``: C-contiguous float32 of exactly ``count`` values (writable where asked);
 * -1 with ValueError naming ``what``. */
int take_rnn(Py_buffer *views, int *held, int i, PyObject *obj, const char *what, int64_t count, int writable);

#endif
