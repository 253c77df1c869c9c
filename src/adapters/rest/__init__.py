"""The REST surface: Starlette routes, authentication, one error table, OpenAPI."""

from clarion.adapters.rest.app import RestApi, build_rest, create_rest_app

__all__ = ["RestApi", "build_rest", "create_rest_app"]
