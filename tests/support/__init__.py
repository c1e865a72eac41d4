"""Helpers of the test suite, importable as `support.<name>` (pytest puts tests/ on sys.path)."""
