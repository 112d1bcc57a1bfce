"""Micro-benchmarks of the memory system and the instructions: HBM, L2, latencies, a transpose."""
