"""The Layers API, as TF.js's ``tf.layers`` / ``tf.sequential`` / ``tf.model`` / ``tf.input``.

``nf.layers.dense(units=4, input_shape=[3])`` or, as TF.js writes it, ``nf.layers.dense({'units': 4,
'inputShape': [3]})`` makes a layer (each factory shows its arguments, shapes and an example in ``help()``;
TF.js's other names such as ``max_pool2d`` / ``avg_pooling2d`` are aliases); ``nf.sequential(layers=[...])`` and
``nf.model(inputs=nf.input(shape=[3]), outputs=...)`` make models that ``predict``, print a
``summary()``, and serialize to the Keras JSON of ``model.toJSON()`` (``to_json`` / ``from_config``).
Initializers, regularizers, constraints and activations are found by their TF.js names;
``nf.serialization.register_class`` makes custom layers loadable.

As in tfjs-layers: ``engine/`` holds the machinery (``base``: Layer, ``topology``: SymbolicTensor, Node,
InputSpec, ``inputs``: InputLayer, input, ``container``: the graph, ``models``: LayersModel, Sequential,
``executor``, ``summary``, training, callbacks, saving); the layer kinds sit here (``core``: Dense, Activation,
Flatten, Reshape, Dropout, ``convolutional``, ``pooling``, ``recurrent``, ``merge``, ...), beside what is neither
(``initializers``, ``regularizers``, ``constraints``, ``activations``, ``losses``, ``metrics``, ``optimizers``,
``serialization``, ``variables``, ``naming``, ``backend``, ``utils``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the factories' full signatures for type checkers (generated: tools/gen_typing.py)
    from ._factory_signatures import *  # noqa: F403

from . import activations, constraints, initializers, regularizers, serialization
from .core import Activation, Dense, Dropout, Flatten, Reshape, activation, dense, dropout, flatten, reshape
from .engine.base import DisposeResult, Layer
from .engine.container import Container, deserialize_layer
from .engine.inputs import InputLayer, input  # noqa: F401  (nf.layers.input; kept out of __all__: it would shadow the builtin)
from .engine.models import Functional, LayersModel, model
from .engine.sequential import Sequential, sequential
from .engine.topology import InputSpec, Node, SymbolicTensor
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .variables import LayerVariable

input_layer = layer_factory(
    InputLayer,
    "input_layer",
    notes="``nf.input(shape=[3])`` is the usual entry; this makes the layer itself.",
    **FACTORY_DOCS["input_layer"],
)


__all__ = [
    "Activation", "Container", "Dense", "DisposeResult", "Dropout", "Flatten", "Functional", "InputLayer",
    "InputSpec", "Layer", "LayerVariable", "LayersModel", "Node", "Reshape", "Sequential", "SymbolicTensor",
    "activation", "activations", "constraints", "dense", "deserialize_layer", "dropout", "flatten", "initializers",
    "input_layer", "model", "regularizers", "reshape", "sequential", "serialization",
]  # fmt: skip

# -- convolutional, pooling and normalization layers (issue 5, CNN family) -------------------------
from . import convolutional, convolutional_depthwise, convolutional_transpose, normalization, pooling  # noqa: E402
from .convolutional import *  # noqa: E402, F403
from .convolutional_depthwise import *  # noqa: E402, F403
from .convolutional_transpose import *  # noqa: E402, F403
from .normalization import *  # noqa: E402, F403
from .pooling import *  # noqa: E402, F403

__all__ += [
    *convolutional.__all__, *convolutional_depthwise.__all__, *convolutional_transpose.__all__,
    *normalization.__all__, *pooling.__all__,
]  # fmt: skip

# -- core extras, embeddings, merge, advanced activations, noise, preprocessing (issue 5, misc family) --
from . import advanced_activations, core_extra, embeddings, merge, noise, preprocessing  # noqa: E402
from .advanced_activations import *  # noqa: E402, F403
from .core_extra import *  # noqa: E402, F403
from .embeddings import *  # noqa: E402, F403
from .merge import *  # noqa: E402, F403
from .noise import *  # noqa: E402, F403
from .preprocessing import *  # noqa: E402, F403

__all__ += [
    *advanced_activations.__all__, *core_extra.__all__, *embeddings.__all__, *merge.__all__, *noise.__all__,
    *preprocessing.__all__,
]  # fmt: skip

# -- recurrent and wrapper layers (issue 5, recurrent family) --
from . import convolutional_recurrent, recurrent, recurrent_cells, wrappers  # noqa: E402
from .convolutional_recurrent import *  # noqa: E402, F403
from .recurrent import *  # noqa: E402, F403
from .recurrent_cells import *  # noqa: E402, F403
from .wrappers import *  # noqa: E402, F403

__all__ += [*convolutional_recurrent.__all__, *recurrent.__all__, *recurrent_cells.__all__, *wrappers.__all__]

# -- training: compile / fit / evaluate, losses, metrics, callbacks (issue 5, training family) --
from . import losses, metrics  # noqa: E402
from .engine import callbacks, progress  # noqa: E402
from .engine.callbacks import (  # noqa: E402
    BaseCallback,
    Callback,
    CallbackList,
    CustomCallback,
    EarlyStopping,
    History,
    early_stopping,
    register_callback_constructor,
)
from .engine.progress import ProgbarLogger  # noqa: E402

__all__ += [
    "BaseCallback", "Callback", "CallbackList", "CustomCallback", "EarlyStopping", "History", "ProgbarLogger",
    "callbacks", "early_stopping", "losses", "metrics", "progress", "register_callback_constructor",
]  # fmt: skip

# -- save / load in the TF.js format: model.save, load_layers_model (issue 5, save/load family) --
from .engine import saving  # noqa: E402
from .engine.saving import load_layers_model, load_layers_model_async  # noqa: E402

__all__ += ["load_layers_model", "load_layers_model_async", "saving"]

# -- the rest of TF.js 4.22's layers, its alternative names, tf.models.modelFromJSON (issue 26) --
from . import aliases, preprocessing_category, preprocessing_random  # noqa: E402
from .aliases import *  # noqa: E402, F403
from .preprocessing_category import *  # noqa: E402, F403
from .preprocessing_random import *  # noqa: E402, F403

__all__ += [*aliases.__all__, *preprocessing_category.__all__, *preprocessing_random.__all__]
