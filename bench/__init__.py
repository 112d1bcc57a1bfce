"""Measure a GPU from first principles: ``python -m bench`` (see bench/__main__.py)."""
