"""Other projects' kernels, built from their checkouts at run time and timed beside ours:
fast.cu, DeepGEMM, gpu-benches."""
