// The peer pranjalssh/fast.cu, its fastest kernel (12) as its own runKernel12 launches it, behind one
// C entry point for bench/peers/fastcu.py. Built at run time against a checkout ($FASTCU_DIR on the include
// path); none of fast.cu's code is in this repository. What its header expects from its matmul.cu
// (the includes, bf16, CEIL_DIV, cudaCheck) is declared here.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))
static void cuda_check(cudaError_t error, const char* file, int line) {
    if (error != cudaSuccess) {
        fprintf(stderr, "[CUDA ERROR] at %s:%d: %s\n", file, line, cudaGetErrorString(error));
        exit(1);
    }
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

#include "examples/matmul/matmul_12.cuh"

// C (column-major, bf16) = A (M x K, row-major) B (N x K, row-major)^T. runKernel12 keeps its tensor
// maps and tile schedule from the call before while M stays the same: new operands rebuild them.
extern "C" int fastcu_gemm(int M, int N, int K, bf16* A, bf16* B, bf16* C) {
    static const void* last[3] = {nullptr, nullptr, nullptr};
    if (last[0] != A || last[1] != B || last[2] != C) {
        M12::_prev_m = 0;
        last[0] = A, last[1] = B, last[2] = C;
    }
    runKernel12(M, N, K, A, B, C, nullptr);
    return static_cast<int>(cudaGetLastError());
}
