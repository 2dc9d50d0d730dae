# ruff: noqa: E501  (a table of one-line docs)
"""Input / output shapes and a one-line example for each ``nf.layers`` factory (their docstrings use them).

``FACTORY_DOCS[name]`` holds the keywords ``shapes`` and ``example`` of ``layer_factory``; ``b`` stands for
the batch axis, ``...`` for any number of axes.
"""

from __future__ import annotations


def _shapes(inp: str, out: str) -> str:
    return f"Input shape: {inp}.\nOutput shape: {out}."


_SAME = "the input shape"
_CONV_IN = "``[b, *spatial, channels]`` (``channelsLast``) or ``[b, channels, *spatial]`` (``channelsFirst``)"
_CONV_OUT = "the same layout with ``filters`` channels and each spatial axis shrunk by the window (``'valid'``) or divided by the strides (``'same'``)"
_POOL_OUT = "the same layout, each spatial axis reduced by the window and strides"
_RNN_IN = "``[b, time, features]``"
_RNN_OUT = "``[b, units]`` (``[b, time, units]`` with ``return_sequences``; plus the states with ``return_state``)"
_CELL = "one step: ``[b, features]`` with the states ``[b, units]`` each"
_MERGE = "a list of tensors of the same shape (broadcast on the batch axis)"


def _d(shapes: str, example: str) -> dict[str, str]:
    return {"shapes": shapes, "example": example}


FACTORY_DOCS: dict[str, dict[str, str]] = {
    # core
    "dense": _d(_shapes("``[b, ..., input_dim]``", "``[b, ..., units]``"), "nf.layers.dense({'units': 16, 'inputShape': [4]})"),
    "activation": _d(_shapes("any", _SAME), "nf.layers.activation(activation='relu')"),
    "dropout": _d(_shapes("any", _SAME), "nf.layers.dropout(rate=0.5)"),
    "flatten": _d(_shapes("``[b, d1, d2, ...]``", "``[b, d1 * d2 * ...]``"), "nf.layers.flatten()"),
    "reshape": _d(_shapes("``[b, ...]``", "``[b, *target_shape]`` (one ``-1`` entry is inferred)"), "nf.layers.reshape(target_shape=[2, 3])"),
    "input_layer": _d(_shapes("``[b, *input_shape]``", _SAME), "nf.layers.input_layer(input_shape=[3])"),
    # core extras
    "masking": _d(_shapes("``[b, time, features]``", _SAME + " (timesteps equal to ``mask_value`` everywhere are masked)"), "nf.layers.masking(mask_value=0)"),
    "permute": _d(_shapes("``[b, d1, ..., dn]``", "the non-batch axes reordered by ``dims`` (1-based)"), "nf.layers.permute(dims=[2, 1])"),
    "repeat_vector": _d(_shapes("``[b, features]``", "``[b, n, features]``"), "nf.layers.repeat_vector(n=3)"),
    "spatial_dropout1d": _d(_shapes("``[b, time, channels]``", _SAME + " (whole channels dropped)"), "nf.layers.spatial_dropout1d(rate=0.2)"),
    "embedding": _d(_shapes("``[b, time]`` integer indices", "``[b, time, output_dim]``"), "nf.layers.embedding(input_dim=1000, output_dim=16)"),
    # activations
    "relu": _d(_shapes("any", _SAME), "nf.layers.relu(max_value=6)"),
    "leaky_relu": _d(_shapes("any", _SAME), "nf.layers.leaky_relu(alpha=0.1)"),
    "prelu": _d(_shapes("any", _SAME), "nf.layers.prelu(shared_axes=[1, 2])"),
    "elu": _d(_shapes("any", _SAME), "nf.layers.elu(alpha=1.0)"),
    "thresholded_relu": _d(_shapes("any", _SAME), "nf.layers.thresholded_relu(theta=1.0)"),
    "softmax": _d(_shapes("any", _SAME), "nf.layers.softmax(axis=-1)"),
    # convolutions
    "conv1d": _d(_shapes("``[b, length, channels]``", "``[b, new_length, filters]``"), "nf.layers.conv1d(filters=8, kernel_size=3)"),
    "conv2d": _d(_shapes(_CONV_IN, _CONV_OUT), "nf.layers.conv2d({'filters': 8, 'kernelSize': 3, 'activation': 'relu'})"),
    "conv3d": _d(_shapes(_CONV_IN, _CONV_OUT), "nf.layers.conv3d(filters=4, kernel_size=3)"),
    "conv2d_transpose": _d(_shapes(_CONV_IN, "the same layout with ``filters`` channels, each spatial axis grown by the strides"), "nf.layers.conv2d_transpose(filters=8, kernel_size=3, strides=2)"),
    "conv3d_transpose": _d(_shapes(_CONV_IN, "the same layout with ``filters`` channels, each spatial axis grown by the strides"), "nf.layers.conv3d_transpose(filters=4, kernel_size=2, strides=2)"),
    "depthwise_conv2d": _d(_shapes(_CONV_IN, "the same layout with ``channels * depth_multiplier`` channels"), "nf.layers.depthwise_conv2d(kernel_size=3, depth_multiplier=2)"),
    "separable_conv2d": _d(_shapes(_CONV_IN, _CONV_OUT), "nf.layers.separable_conv2d(filters=8, kernel_size=3)"),
    "cropping2d": _d(_shapes("``[b, rows, cols, channels]``", "``[b, rows - top - bottom, cols - left - right, channels]``"), "nf.layers.cropping2d(cropping=[[1, 1], [2, 0]])"),
    "up_sampling2d": _d(_shapes("``[b, rows, cols, channels]``", "``[b, rows * size[0], cols * size[1], channels]``"), "nf.layers.up_sampling2d(size=[2, 2])"),
    "zero_padding2d": _d(_shapes("``[b, rows, cols, channels]``", "``[b, rows + top + bottom, cols + left + right, channels]``"), "nf.layers.zero_padding2d(padding=[1, 2])"),
    # pooling
    "max_pooling1d": _d(_shapes("``[b, length, channels]``", "``[b, pooled_length, channels]``"), "nf.layers.max_pooling1d(pool_size=2)"),
    "max_pooling2d": _d(_shapes(_CONV_IN, _POOL_OUT), "nf.layers.max_pooling2d({'poolSize': 2, 'strides': 2})"),
    "max_pooling3d": _d(_shapes(_CONV_IN, _POOL_OUT), "nf.layers.max_pooling3d(pool_size=2)"),
    "average_pooling1d": _d(_shapes("``[b, length, channels]``", "``[b, pooled_length, channels]``"), "nf.layers.average_pooling1d(pool_size=2)"),
    "average_pooling2d": _d(_shapes(_CONV_IN, _POOL_OUT), "nf.layers.average_pooling2d(pool_size=2)"),
    "average_pooling3d": _d(_shapes(_CONV_IN, _POOL_OUT), "nf.layers.average_pooling3d(pool_size=2)"),
    "global_max_pooling1d": _d(_shapes("``[b, length, channels]``", "``[b, channels]`` (``[b, 1, channels]`` with keepdims)"), "nf.layers.global_max_pooling1d()"),
    "global_max_pooling2d": _d(_shapes(_CONV_IN, "``[b, channels]`` (spatial axes kept as 1 with keepdims)"), "nf.layers.global_max_pooling2d()"),
    "global_average_pooling1d": _d(_shapes("``[b, length, channels]``", "``[b, channels]`` (``[b, 1, channels]`` with keepdims)"), "nf.layers.global_average_pooling1d()"),
    "global_average_pooling2d": _d(_shapes(_CONV_IN, "``[b, channels]`` (spatial axes kept as 1 with keepdims)"), "nf.layers.global_average_pooling2d()"),
    # normalization
    "batch_normalization": _d(_shapes("any", _SAME), "nf.layers.batch_normalization(axis=-1)"),
    "layer_normalization": _d(_shapes("any", _SAME), "nf.layers.layer_normalization(axis=-1)"),
    # merge
    "add": _d(_shapes(_MERGE, "their common shape"), "nf.layers.add([a, b])"),
    "subtract": _d(_shapes("two tensors of the same shape", "their common shape"), "nf.layers.subtract([a, b])"),
    "multiply": _d(_shapes(_MERGE, "their common shape"), "nf.layers.multiply([a, b])"),
    "average": _d(_shapes(_MERGE, "their common shape"), "nf.layers.average([a, b])"),
    "maximum": _d(_shapes(_MERGE, "their common shape"), "nf.layers.maximum([a, b])"),
    "minimum": _d(_shapes(_MERGE, "their common shape"), "nf.layers.minimum([a, b])"),
    "concatenate": _d(_shapes("a list of tensors equal except on ``axis``", "their shape with the ``axis`` lengths summed"), "nf.layers.concatenate({'axis': -1}).apply([a, b])"),
    "dot": _d(_shapes("two tensors ``[b, n]`` / ``[b, ..., n]``", "the batch-wise dot product over ``axes``"), "nf.layers.dot([a, b], axes=1)"),
    # noise
    "gaussian_noise": _d(_shapes("any", _SAME), "nf.layers.gaussian_noise(stddev=0.1)"),
    "gaussian_dropout": _d(_shapes("any", _SAME), "nf.layers.gaussian_dropout(rate=0.2)"),
    "alpha_dropout": _d(_shapes("any", _SAME), "nf.layers.alpha_dropout(rate=0.1)"),
    # preprocessing
    "rescaling": _d(_shapes("any", _SAME + " (float32)"), "nf.layers.rescaling(scale=1 / 255)"),
    "center_crop": _d(_shapes("``[h, w, c]`` or ``[b, h, w, c]``", "``[height, width, c]`` or ``[b, height, width, c]``"), "nf.layers.center_crop(height=224, width=224)"),
    "resizing": _d(_shapes("``[h, w, c]`` or ``[b, h, w, c]``", "``[height, width, c]`` or ``[b, height, width, c]``"), "nf.layers.resizing(height=64, width=64)"),
    "category_encoding": _d(_shapes("``[b]`` or ``[b, n]`` integers in ``[0, num_tokens)``", "``[b, num_tokens]`` (``'int'``: the input unchanged)"), "nf.layers.category_encoding({'numTokens': 4, 'outputMode': 'oneHot'})"),
    "random_width": _d(_shapes("``[h, w, c]`` or ``[b, h, w, c]``", "the same with a random width ``round(w * (1 + U(lower, upper)))``"), "nf.layers.random_width(factor=0.2, seed=1)"),
    "random_height": _d(_shapes("``[h, w, c]`` or ``[b, h, w, c]``", "the same with a random height ``round(h * (1 + U(lower, upper)))``"), "nf.layers.random_height(factor=0.2, seed=1)"),
    # recurrent
    "simple_rnn": _d(_shapes(_RNN_IN, _RNN_OUT), "nf.layers.simple_rnn(units=8, return_sequences=True)"),
    "gru": _d(_shapes(_RNN_IN, _RNN_OUT), "nf.layers.gru({'units': 8, 'returnSequences': True})"),
    "lstm": _d(_shapes(_RNN_IN, _RNN_OUT), "nf.layers.lstm(units=8)"),
    "rnn": _d(_shapes(_RNN_IN, "``[b, units]`` of the (last) cell (``[b, time, units]`` with ``return_sequences``)"), "nf.layers.rnn(cell=nf.layers.lstm_cell(units=3))"),
    "simple_rnn_cell": _d(_shapes(_CELL, "``[b, units]`` and the new state"), "nf.layers.simple_rnn_cell(units=8)"),
    "gru_cell": _d(_shapes(_CELL, "``[b, units]`` and the new state"), "nf.layers.gru_cell(units=8)"),
    "lstm_cell": _d(_shapes(_CELL, "``[b, units]`` and the new states ``h`` and ``c``"), "nf.layers.lstm_cell(units=8)"),
    "stacked_rnn_cells": _d(_shapes(_CELL, "the last cell's output and every cell's states"), "nf.layers.stacked_rnn_cells(cells=[nf.layers.lstm_cell(units=4), nf.layers.lstm_cell(units=4)])"),
    "conv_lstm2d": _d(_shapes("``[b, time, rows, cols, channels]``", "``[b, new_rows, new_cols, filters]`` (with the time axis after ``b`` when ``return_sequences``)"), "nf.layers.conv_lstm2d(filters=4, kernel_size=3)"),
    "conv_lstm2d_cell": _d(_shapes("one step: ``[b, rows, cols, channels]``", "``[b, new_rows, new_cols, filters]`` and the states"), "nf.layers.conv_lstm2d_cell(filters=4, kernel_size=3)"),
    # wrappers
    "bidirectional": _d(_shapes(_RNN_IN, "the wrapped RNN's output with both directions merged (``'concat'``: ``2 * units`` features)"), "nf.layers.bidirectional(layer=nf.layers.lstm(units=4), merge_mode='concat')"),
    "time_distributed": _d(_shapes("``[b, time, ...]``", "``[b, time, *output of the wrapped layer for one step]``"), "nf.layers.time_distributed(layer=nf.layers.dense(units=4))"),
}  # fmt: skip

__all__ = ["FACTORY_DOCS"]
