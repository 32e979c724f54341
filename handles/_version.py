"""The package's version, written once: ``pyproject.toml`` reads it (hatch's version source).

A module constant rather than ``importlib.metadata.version()``: that import alone took
24 ms of a 170 ms cold start, and the version is needed at every start (``serverInfo``).
"""

__version__ = "0.2.0.dev0"
