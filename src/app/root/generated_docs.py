"""The command line of Clarion's generated documents (``make cli-docs``, ``make settings-docs``):
print the generated text, or ``--update PATH`` to write it into the committed file.

Each generator says what it prints and how a file's new text follows from its path (the whole
file, or a table placed between markers); this module owns the arguments, the exit codes and
the messages, so every generator answers the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as source:
        return source.read()


def generated_docs_main(
    argv: Sequence[str] | None,
    *,
    module: str,
    show: Callable[[], str],
    rewrite: Callable[[str], str],
) -> int:
    """No arguments: write ``show()`` to standard output (0). ``--update PATH``: write
    ``rewrite(PATH)`` to PATH (0), or print ``PATH: <reason>`` when it raises ``ValueError``
    and leave the file alone (1). Anything else: the usage of ``python -m <module>`` (2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stdout.write(show())
        return 0
    if len(args) == 2 and args[0] == "--update":
        path = args[1]
        try:
            text = rewrite(path)
        except ValueError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        with open(path, "w", encoding="utf-8") as target:
            target.write(text)
        return 0
    print(f"usage: python -m {module} [--update PATH]", file=sys.stderr)
    return 2
