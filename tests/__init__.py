"""Test package (a package so that ``tests.wire_servers`` is importable and runnable with ``-m``)."""
