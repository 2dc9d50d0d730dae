"""The compiled kernels' argument types, as the models and ops call them: what the background warm-up
compiles (:mod:`.warmup`). Written by ``tools/record_jit_signatures.py``; each type spelled as
:func:`.warmup.spell` writes it."""

# fmt: off
SIGNATURES: dict[str, list[tuple[str, ...]]] = {
    '_conv_kernels.im2col2d': [
        ('float32[4C]', 'float32[2C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64',
         'int64', 'int64', 'int64', 'int64'),
    ],
    '_dw3_kernels.depthwise3x3_blocked_serial': [
        ('float32[4C]', 'float32[3C]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64',
         'float32[1C]', 'float32[4C]', 'int64', 'float32', 'float32[1C]'),
        ('float32[4C]', 'float32[3Cr]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64',
         'float32[1C]', 'float32[4C]', 'int64', 'float32', 'float32[1C]'),
        ('float32[4C]', 'float32[3Cr]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64',
         'float32[1Cr]', 'float32[4C]', 'int64', 'float32', 'float32[1C]'),
    ],
    '_grad_kernels.adam_update': [
        ('float32[1C]', 'float32[1C]', 'float32[1C]', 'float32[1C]', 'float32[1C]', 'float32[1C]', 'float32[1C]',
         'float32', 'float32', 'float32', 'float32', 'float32', 'float32', 'float32', 'float32'),
    ],
    '_grad_kernels.max_pool_grad2d': [
        ('float32[4C]', 'float32[4C]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'bool',
         'int64', 'int64'),
    ],
    '_grad_kernels.segment_sum_rows': [
        ('float64[2C]', 'int64[1C]', 'float32[2C]', 'int64'),
    ],
    '_image_kernels.resize_bilinear': [
        ('float32[3C]', 'int64[1Cr]', 'int64[1Cr]', 'float64[1Cr]', 'int64[1Cr]', 'int64[1Cr]', 'float64[1Cr]',
         'int64', 'float32[3C]'),
    ],
    '_kernels.abs_prelu': [
        ('float32[2C]', 'float32[2C]', 'float32[1Cr]'),
    ],
    '_kernels.activate': [
        ('float32[2C]', 'float32[2C]', 'float32[1C]', 'float32[2C]', 'int64', 'float32', 'float32[1C]'),
    ],
    '_kernels.add_taps': [
        ('float32[2C]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64',
         'int64', 'int64', 'int64'),
    ],
    '_kernels.depthwise_flat_serial': [
        ('float32[4C]', 'float32[3C]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'float32[1C]',
         'float32[4C]', 'int64', 'float32', 'float32[1C]'),
        ('float32[4C]', 'float32[3C]', 'float32[4C]', 'int64', 'int64', 'int64', 'int64', 'int64', 'float32[1Cr]',
         'float32[4C]', 'int64', 'float32', 'float32[1C]'),
    ],
    '_kernels.epilogue_serial': [
        ('float32[2C]', 'float32[1C]', 'float32[2C]', 'int64', 'float32', 'float32[1C]'),
        ('float32[2C]', 'float32[1Cr]', 'float32[2C]', 'int64', 'float32', 'float32[1C]'),
        ('float32[2C]', 'float32[1Cr]', 'float32[2C]', 'int64', 'float32', 'float32[1Cr]'),
    ],
    '_kernels.hard_swish': [
        ('float32[1C]', 'float32[1C]', 'float32', 'float32', 'bool'),
    ],
    '_kernels.pool2d': [
        ('float32[4C]', 'float32[4C]', 'bool', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64', 'int64'),
    ],
    '_nms_kernels.nms_hard': [
        ('float32[2C]', 'float32[1C]', 'int64', 'float64', 'float64', 'int32[1C]', 'float64[1C]'),
    ],
}
