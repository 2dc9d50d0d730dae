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

#endif
