"""Log output for the ``clarion`` command. The library itself never configures logging."""

from __future__ import annotations

import logging
import sys

import structlog

from clarion.app.root.settings import LogFormat


def configure_logging(log_format: LogFormat, *, level: int = logging.INFO) -> None:
    """Route structlog and the standard library through one handler on stderr.

    ``console`` renders readable lines (for a terminal); ``json`` one JSON object per line.
    Only the CLI calls this; embedding hosts keep their own configuration.
    """
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("alembic", "httpx", "httpx2", "mcp", "sse_starlette"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
