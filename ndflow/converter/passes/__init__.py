"""Load-time graph optimizations of the converter: rewrites of a copy of the loaded graph.

``optimize.optimize_graph`` runs the passes in this order (:data:`~ndflow.converter.passes.optimize.PASSES`,
each one can be left out):

1. ``fold`` (``constant_fold.fold_constants``): nodes whose inputs are all constants run once and become Const
   nodes (shape arithmetic, casts, reshapes of weights...);
2. ``identity`` (``constant_fold.remove_identities``): Identity/StopGradient/Snapshot nodes go;
3. ``canon`` (``canon.canonical_prelu`` then ``canon.canonical_clips``): PReLU and clips spelled with
   elementary ops become Prelu, Relu and Relu6 nodes;
4. ``transpose`` (``transpose.sink_transposes``): Transposes sink through element-wise ops, pads and concats
   until pairs cancel; identities go again;
5. ``pad`` (``canon.pads_into_convs``): zero Pad nodes before convolutions become their explicit padding;
6. ``fuse`` (``fuse.fuse_products``): a convolution or matrix product absorbs the constant bias, scale and
   inference-form ``FusedBatchNorm`` nodes after it (the batch-norm fold: scales multiplied into the filter,
   the rest into one bias) and one activation; then residual adds (``fuse.fuse_residual_adds``);
7. ``hard_swish`` (``hard_swish.fuse_hard_swish``): ``x * relu6(x + 3) * c`` becomes one node;
8. ``abs_prelu`` (``abs_prelu.fuse_abs_prelu``): ``x + (x - |x|) * c`` becomes one node.

Every pass edits a ``rewrite.Rewriter`` (the mutable copy; the original graph stays). Passes sit above
``load``, ``runtime`` (constant folding runs nodes through their mappers) and ``mappers``.
"""
