"""Structured logs: one JSON object per line (time, level, logger, message, and the record's extra fields such as
``model``, ``version``, ``status``, ``ms``), for the ``ndflow.serving`` logger and uvicorn's."""

from __future__ import annotations

import json
import logging
import sys

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName",
                                                                          "color_message"}  # fmt: skip


class JsonFormatter(logging.Formatter):
    """A log record as one JSON line; fields given with ``extra=`` are included."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(level: str = "info", fmt: str = "json") -> None:
    """Send the serving and uvicorn logs to stderr, as JSON lines (``fmt="json"``) or plain text."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    for name in ("ndflow.serving", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
