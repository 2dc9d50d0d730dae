"""The serving errors: each carries the HTTP status and the TensorFlow Serving error code it maps to, and is
answered as TensorFlow Serving's error body ``{"error": "..."}``."""

from __future__ import annotations

#: TensorFlow Serving's (gRPC) error codes and the HTTP status each gets.
STATUS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "NOT_FOUND": 404,
    "PAYLOAD_TOO_LARGE": 413,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
    "INTERNAL": 500,
    "UNKNOWN": 500,
}


class ServingError(Exception):
    """A request that cannot be answered: ``code`` is TensorFlow Serving's error code, ``status`` its HTTP status."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status if status is not None else STATUS.get(code, 500)

    def body(self) -> dict[str, str]:
        """TensorFlow Serving's error body."""
        return {"error": self.message}


def invalid(message: str) -> ServingError:
    """A bad request (400, INVALID_ARGUMENT)."""
    return ServingError(message, "INVALID_ARGUMENT")


def not_found(message: str) -> ServingError:
    """An unknown model or version (404, NOT_FOUND)."""
    return ServingError(message, "NOT_FOUND")
