"""Helpers shared by the test modules: history builders and strategies, the outside judges,
the hook table, the LiteLLM Proxy runner and the subprocess worker of the patch tests.

``pyproject.toml`` puts ``tests`` on pytest's ``pythonpath``, so a test module imports
``from support.cases import user``; a subprocess worker gets the same with ``tests`` on
``PYTHONPATH``. Importing this package imports nothing else: the patch worker asserts that
no SDK is loaded before its first step.
"""
