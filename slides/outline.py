"""The deck, in order. Each name is a section: its template slides/<name>.md.j2 and, where it has
data or figures of its own, its module slides/<name>.py (see slides/deck.py). A section's context
may be read by others (gemm: the step catalogue's results); a module that several read and that
has no slides of its own (device: the GPU model) is not a section.

A new section: its template, its module, and its name here."""
SECTIONS = ("title", "terms", "architecture", "peaks", "why_gemm", "setup", "regimes", "gemm", "results", "bursts", "sweep", "atlas", "tune", "settle",
            "precision", "fp8", "multigpu", "overlap", "missing", "backup", "instruction_latency", "memory_latency", "hbm", "l2", "gpu_benches", "transpose", "machinery",
            "clusters", "tma", "compare", "counters", "kernel_pages")

# The talks: the slides each puts on its main path, by title (a * matches any text), in the outline's
# order; every other slide follows as backup, linked from the main slide of its topic or the one
# before it (slides/talk.py). A slide the
# results do not make (a section not measured) is not shown; "full" is the whole study in order.
_OPENING = ("CUDA Performance Study", "Theoretical Peak Performance", "Why Matrix Multiply?", "GEMM Problem Setup",
            "One cuBLAS, Several Figures")
_CLOSING = ("Past One GPU: *", "NCCL: Bus Bandwidth by Message Size", "Hiding Communication Under a GEMM",
            "Still on the Table", "Takeaways")
TALKS = {
    "default": (*_OPENING, "Hopper SM Architecture", "Kernel *: * — Performance", "wgmma Alone: Rate Against N",
                "TMA Alone: What One Thread Can Issue", "Bursts From a Rest", "GEMM Across Sizes", "Shape Atlas — BF16",
                "Shape Atlas — FP8 Block-Scaled",
                "Timing Under the Power Cap", "BF16: Each Step Against cuBLAS BF16", "BF16 Beside fast.cu", "FP8: Three Precisions Side by Side",
                "FP8: Sums Promoted to FP32", "FP8: Block Scales",
                "FP8 Beside DeepGEMM", "Mixture of Experts: the All-to-All", "What It Means for Data-Parallel Training",
                "Past the Reference Deck", *_CLOSING),
    "short": (*_OPENING, "Kernel *: WGMMA + TMA — Performance", "Bursts From a Rest",
              "Shape Atlas — BF16", "Timing Under the Power Cap", "FP8: Three Precisions Side by Side",
              "FP8 Beside DeepGEMM", "Past the Reference Deck", *_CLOSING),
}
TALK_LIMITS = {"default": 40, "short": 20}          # main slides, and minutes of the rehearsal estimate
