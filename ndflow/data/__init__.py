"""``nf.data``: TF.js's tf.data in Python idiom: lazy datasets (sync and async) and their sources.

Sources: tfjs-data's ``array``, ``generator``, ``zip``, ``csv`` (local files, ``file://`` and http(s) URLs,
streamed), ``webcam`` (a camera index or a video file, through OpenCV: extra ``video``) and ``microphone``
(spectrogram frames from a device or an audio file: extras ``microphone`` / ``audio``); ndflow's ``from_numpy``.
Every ``Dataset`` has tfjs-data's transformations (``batch``, ``shuffle``, ``map``, ``map_async``, ``filter``,
``take``, ``skip``, ``repeat``, ``concatenate``, ``prefetch``) and consumers (``for_each_async``, ``to_array``,
``iterator``), plus ndflow's ``unbatch`` and ``shard``. See docs/data.md.
"""

from __future__ import annotations

from .byte_sources import DataSource, FileDataSource, URLDataSource
from .csv import ColumnNames, CSVDataset, csv
from .dataset import Dataset, dataset_from_iterator_fn
from .lazy_iterator import IteratorResult, LazyIterator, run_coroutine_blocking
from .microphone import MicrophoneIterator, microphone
from .results import ArrayResult, Completed
from .sources import array, from_numpy, generator, zip
from .text_lines import TextLineDataset
from .webcam import WebcamIterator, webcam

__all__ = [
    "ArrayResult", "CSVDataset", "ColumnNames", "Completed", "DataSource", "Dataset", "FileDataSource",
    "IteratorResult", "LazyIterator", "MicrophoneIterator", "TextLineDataset", "URLDataSource", "WebcamIterator",
    "array", "csv", "dataset_from_iterator_fn", "from_numpy", "generator", "microphone", "run_coroutine_blocking",
    "webcam", "zip",
]  # fmt: skip
