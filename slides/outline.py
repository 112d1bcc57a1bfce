"""The deck, in order. Each name is a section: its template slides/<name>.md.j2 and, where it has
data or figures of its own, its module slides/<name>.py (see slides/deck.py). Modules that several
sections read (device: the GPU model; gemm: the step catalogue's results) are not sections.

A new section: its template, its module, and its name here."""
SECTIONS = ("title", "architecture", "peaks", "why_gemm", "setup", "kernels", "results", "regimes", "sweep", "atlas", "tune", "settle",
            "precision", "fp8", "multigpu", "overlap", "missing", "backup", "instruction_latency", "memory_latency", "hbm", "l2", "transpose", "machinery",
            "clusters", "compare", "counters", "kernel_pages")
