"""Measure a GPU from first principles: ``python -m bench`` (see bench/__main__.py)."""
from .core.toolkit import use_pypi_toolkit

use_pypi_toolkit()   # before anything runs nvcc or cuobjdump, here or in a worker process
