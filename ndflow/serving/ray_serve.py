"""The serving app as a Ray Serve deployment: each replica builds the same ASGI app (models, batching, metrics,
hot reload) and Ray Serve routes HTTP requests across the replicas, scaling their number with the load when
``autoscaling_config`` is given.

    from ray import serve
    from ndflow.serving import deployment

    serve.run(deployment(["models/emotion"], num_replicas=2).bind(), route_prefix="/")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .config import ServeConfig


def _ray_serve() -> Any:
    try:
        from ray import serve
    except ImportError:
        raise ImportError("ndflow.serving.deployment needs Ray Serve: pip install 'ndflow[ray]' "
                          "(or pip install 'ray[serve]')") from None  # fmt: skip
    return serve


def deployment(
    models: Mapping[str, Any] | Iterable[Any] | ServeConfig,
    *,
    name: str = "ndflow-serving",
    num_replicas: int | str | None = None,
    autoscaling_config: Mapping[str, Any] | None = None,
    ray_actor_options: Mapping[str, Any] | None = None,
    max_ongoing_requests: int | None = None,
    **options: Any,
) -> Any:
    """A Ray Serve deployment (call ``.bind()`` and give it to ``serve.run``) whose replicas serve ``models``
    with :func:`ndflow.serving.app` (``options`` as there). ``num_replicas`` and ``autoscaling_config``
    (``{"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8}``) are Ray Serve's; give one."""
    serve = _ray_serve()
    config = models if isinstance(models, ServeConfig) else ServeConfig(models=models, **options)  # type: ignore[arg-type]
    if num_replicas is not None and autoscaling_config is not None:
        raise ValueError("deployment: give num_replicas or autoscaling_config, not both")
    settings = config.to_json()

    def build() -> Any:
        from ndflow.serving.api import app
        from ndflow.serving.config import ServeConfig as Config

        return app(Config.from_json(settings))

    class NdflowServing:
        """A replica: Ray Serve runs the app's lifespan (loading the models) when the replica starts."""

    NdflowServing.__qualname__ = NdflowServing.__name__ = "NdflowServing"
    kwargs: dict[str, Any] = {"name": name}
    if num_replicas is not None:
        kwargs["num_replicas"] = num_replicas
    if autoscaling_config is not None:
        kwargs["autoscaling_config"] = dict(autoscaling_config)
    if ray_actor_options is not None:
        kwargs["ray_actor_options"] = dict(ray_actor_options)
    if max_ongoing_requests is not None:
        kwargs["max_ongoing_requests"] = max_ongoing_requests
    return serve.deployment(**kwargs)(serve.ingress(build)(NdflowServing))
