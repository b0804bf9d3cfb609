"""Starting a ``spawn`` process without re-running the user's script.

``multiprocessing``'s ``spawn`` prepares a child by importing the parent's main module again
(as ``__mp_main__``), so that objects defined there can be unpickled in the child. For a
script without an ``if __name__ == "__main__":`` guard that re-runs the whole script in the
child, which builds its env and manager again and fails. The learner process needs nothing of
the main module unless what it is sent refers to it (a key encoder class defined in the
script), so :func:`start_without_main` starts it with the main module out of sight: the two
lines of the README work in a plain script, guard or not.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["refers_to_main", "start_without_main"]

_LOCK = threading.Lock()  # one start at a time hides and restores the main module's attributes


def refers_to_main(pickled: bytes) -> bool:
    """Whether a pickle may name an object of the main module (then the child needs it).

    >>> import pickle
    >>> refers_to_main(pickle.dumps({"a": 1})), refers_to_main(pickle.dumps(sys.modules[__name__].refers_to_main))
    (False, False)
    >>> refers_to_main(b"...__main__...")
    True
    """
    return b"__main__" in pickled


def start_without_main(process: Any) -> None:
    """``process.start()`` (a ``spawn`` context's process) without the child importing the main
    module: ``spawn`` reads the main module's ``__spec__`` and ``__file__`` when it starts a
    process, and leaves the main module alone where it finds neither."""
    main = sys.modules.get("__main__")
    if main is None:
        process.start()
        return
    with _LOCK:
        saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
        main.__spec__ = None
        main.__dict__.pop("__file__", None)
        try:
            process.start()
        finally:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)
