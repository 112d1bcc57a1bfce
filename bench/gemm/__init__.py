"""The GEMM family: the step catalogue, the harness that checks and times a kernel in turns with
cuBLAS, the launcher, and the studies of the steps (sweep, tuner, settling run, shape atlas)."""
