"""The deck, in order. Each name is a section: its template slides/<name>.md.j2 and, where it has
data or figures of its own, its module slides/<name>.py (see slides/deck.py). A section's context
may be read by others (gemm: the step catalogue's results); a module that several read and that
has no slides of its own (device: the GPU model) is not a section.

A new section: its template, its module, and its name here."""
SECTIONS = ("title", "terms", "architecture", "peaks", "why_gemm", "setup", "regimes", "gemm", "results", "bursts", "sweep", "atlas", "tune", "settle",
            "precision", "fp8", "multigpu", "overlap", "missing", "backup", "instruction_latency", "memory_latency", "hbm", "l2", "gpu_benches", "transpose", "machinery",
            "clusters", "tma", "compare", "counters", "kernel_pages")
