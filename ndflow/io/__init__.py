"""``nf.io``: the TF.js model format (model.json + weight shards) and the handlers that load and save it.

Handlers are synchronous: ``handler.load() -> ModelArtifacts``, ``handler.save(artifacts) -> SaveResult``.
"""

from __future__ import annotations

from .file_system import FileSystem, file_system, file_system_router, read_files_in_folder
from .handlers import (
    check_group_data,
    check_weight_path,
    get_load_handlers,
    get_save_handlers,
    load_weights,
    register_load_router,
    register_save_router,
    resolve_load_handler,
    resolve_save_handler,
    weights_loader_factory,
)
from .http import HTTPRequest, browser_http_request, http, http_router, is_http_scheme, parse_url
from .model_json import (
    artifacts_for_model_json,
    check_weights_manifest,
    dumps_model_json,
    is_graph_model,
    model_json_for_artifacts,
    normalize_model_json,
    parse_model_json,
)
from .npm import NpmError, npm_model_files, npm_package_dir, npm_router
from .passthrough import from_memory, from_memory_sync, with_save_handler, with_save_handler_sync
from .types import (
    DTYPE_VALUE_SIZE_MAP,
    IOHandler,
    LoadHandler,
    ModelArtifacts,
    ModelArtifactsInfo,
    SaveHandler,
    SaveResult,
    buffers_byte_length,
    concatenate_buffers,
    model_artifacts_info,
)
from .weights import (
    DEFAULT_SHARD_SIZE_BYTES,
    NamedTensor,
    check_weight_spec,
    decode_arrays,
    decode_weights,
    dequantize_array,
    encode_weights,
    get_weight_specs,
    quantize_array,
    shard_file_name,
    shard_weights,
    split_weight_data,
    weight_byte_length,
    weights_byte_length,
)

# TF.js names for the same functions.
concatenate_array_buffers = concatenate_buffers
get_model_artifacts_info_for_json = model_artifacts_info
get_model_json_for_model_artifacts = model_json_for_artifacts
get_model_artifacts_for_json_sync = artifacts_for_model_json

__all__ = [
    "DEFAULT_SHARD_SIZE_BYTES", "DTYPE_VALUE_SIZE_MAP", "FileSystem", "HTTPRequest", "IOHandler", "LoadHandler",
    "ModelArtifacts", "ModelArtifactsInfo", "NamedTensor", "SaveHandler", "SaveResult",
    "artifacts_for_model_json", "browser_http_request", "buffers_byte_length", "check_group_data",
    "check_weight_path", "check_weight_spec", "check_weights_manifest", "concatenate_array_buffers",
    "concatenate_buffers", "decode_arrays", "decode_weights", "dequantize_array", "dumps_model_json",
    "encode_weights", "file_system", "file_system_router", "from_memory", "from_memory_sync",
    "get_load_handlers", "get_model_artifacts_for_json_sync", "get_model_artifacts_info_for_json",
    "get_model_json_for_model_artifacts", "get_save_handlers", "get_weight_specs", "http", "http_router",
    "is_graph_model", "is_http_scheme", "load_weights", "model_artifacts_info", "model_json_for_artifacts",
    "normalize_model_json", "NpmError", "npm_model_files", "npm_package_dir", "npm_router",
    "parse_model_json", "parse_url", "quantize_array", "read_files_in_folder",
    "register_load_router", "register_save_router", "resolve_load_handler", "resolve_save_handler",
    "shard_file_name", "shard_weights", "split_weight_data", "weight_byte_length", "weights_byte_length",
    "weights_loader_factory", "with_save_handler", "with_save_handler_sync",
]  # fmt: skip
