"""The node: NCCL's collectives (ours and nccl-tests), peer-to-peer copies, nvbandwidth, and a GEMM
overlapped with a collective."""
