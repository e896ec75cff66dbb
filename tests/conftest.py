"""Tests see gpuprof's internal errors as the exceptions they are, not as the CLI's one-line report
(tests/test_cli_internal_error.py unsets this to test that report)."""

import os

os.environ.setdefault("GPUPROF_DEBUG", "1")
