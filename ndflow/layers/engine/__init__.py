"""The engine of the Layers API (tfjs-layers' ``src/engine``): what every layer kind and model runs on.

``base`` (``Layer``), ``layer_weights`` (its weights), ``topology`` (``SymbolicTensor``, ``Node``, ``InputSpec``),
``inputs`` (``InputLayer``, ``input``), ``container`` / ``container_config`` (the graph of layers and its config),
``executor`` (eager graph execution), ``summary``, ``models`` (``LayersModel``, ``Functional``), ``sequential``
(``Sequential``), ``layer_nodes`` (a layer's inbound nodes), ``compiling`` / ``training`` / ``training_utils`` /
``training_dataset`` / ``training_config`` (compile, fit, evaluate), ``callbacks`` / ``progress`` (fit's callbacks
and progress bar) and ``saving`` (``model.save``, ``load_layers_model``). The engine imports none of the layer kinds
in ``ndflow.layers``: it finds them by class name through ``ndflow.layers.serialization``'s registry when a config
is deserialized.
"""
