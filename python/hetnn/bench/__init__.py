"""Benchmark suites behind ``python -m hetnn bench``. Every figure is measured here, in this process: devices are
synchronized around each timed call, after warm-up, over repeats (see :func:`hetnn.benchmark`)."""
from .matmul import MATMUL_SHAPES, run_matmul
from .report import format_table

__all__ = ["MATMUL_SHAPES", "run_matmul", "format_table"]
