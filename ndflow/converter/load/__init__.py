"""Loading stage of the converter: a ``model.json``'s ``modelTopology`` read into a checked graph.

- ``graph``: nodes (``modelTopology.node``, a GraphDef as JSON) and their TF ``AttrValue`` attributes;
- ``registry``: which op mapper runs each TF op type (``register_op``, ``get_mapper``, ``supported_ops``),
  what ``validate`` asks to find the op types ndflow cannot run;
- ``plan``: the :class:`~ndflow.converter.load.plan.Graph` (edges, consumers, inputs, outputs, library
  functions), its validation at load, and execution plans (the nodes a run needs, in order).

Reading the files (shards, dequantization) is ``ndflow.io``'s; ``converter.graph_model`` ties the stages
together. Nothing here imports ``passes``, ``runtime`` or ``mappers``.
"""
