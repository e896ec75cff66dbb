// The six operations of the reference study as hand-written CUDA C kernels.
//
// Every kernel exists in float32, float64 and float16 (__half) under a stable C name,
// gpuprof_<op>_<f32|f64|f16>, so gpuprof can load it by name through NVRTC (CuPy RawModule) and
// find it by name in a profiler report. The file is self-contained (only cuda_fp16.h) so that
// nvcc and NVRTC compile it alike. Build flags are the defaults on purpose (no --use_fast_math):
// IEEE division and the accurate expf/tanhf are what an engineer gets without asking, and they
// explain why counter FLOP counts of sigmoid/tanh exceed the textbook count (see README.md).
//
// Shapes: elementwise kernels take n elements; dot takes row-major A[m×k], B[k×n], C[m×n].

#include <cuda_fp16.h>

// ---------------------------------------------------------------------------------------------
// Per-type arithmetic, so each kernel is written once as a template.
// float and double (the primary template): plain operators and the CUDA math library, whose C++
// overloads of exp/tanh/fma are expf/tanhf/fmaf for float. __half: cuda_fp16.h intrinsics for add
// and multiply (HADD2/HMUL2 in SASS, counted by flop_count_hp); exp, tanh and the dot product's
// accumulation are done in float32 (Acc) and rounded back, as half precision loses too much there,
// so float16 sigmoid/tanh/dot show up as single-precision work in the counters.
template <typename T> struct Math {
    using Acc = T;
    __device__ static T widen(T x) { return x; }
    __device__ static T narrow(T x) { return x; }
    __device__ static T add(T a, T b) { return a + b; }
    __device__ static T mul(T a, T b) { return a * b; }
    __device__ static T fma(T a, T b, T c) { return ::fma(a, b, c); }
    __device__ static T zero() { return T(0); }
    __device__ static T sigmoid(T x) { return T(1) / (T(1) + ::exp(-x)); }
    __device__ static T tanh(T x) { return ::tanh(x); }
};

template <> struct Math<__half> {
    using Acc = float;
    __device__ static float widen(__half x) { return __half2float(x); }
    __device__ static __half narrow(float x) { return __float2half(x); }
    __device__ static __half add(__half a, __half b) { return __hadd(a, b); }
    __device__ static __half mul(__half a, __half b) { return __hmul(a, b); }
    __device__ static __half sigmoid(__half x) { return narrow(Math<float>::sigmoid(widen(x))); }
    __device__ static __half tanh(__half x) { return narrow(tanhf(widen(x))); }
};

// ---------------------------------------------------------------------------------------------
// Elementwise ops: one grid-stride loop, so any grid size covers any n (launch: 256 threads/block).

#define GPUPROF_GRID_STRIDE(i, n)                                                         \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < (n); i += (unsigned long long)blockDim.x * gridDim.x)

template <typename T>
__device__ void add_body(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                         unsigned long long n) {
    GPUPROF_GRID_STRIDE(i, n) c[i] = Math<T>::add(a[i], b[i]);
}

template <typename T>
__device__ void mul_body(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                         unsigned long long n) {
    GPUPROF_GRID_STRIDE(i, n) c[i] = Math<T>::mul(a[i], b[i]);
}

template <typename T>
__device__ void scalar_body(const T* __restrict__ a, T s, T* __restrict__ c, unsigned long long n) {
    GPUPROF_GRID_STRIDE(i, n) c[i] = Math<T>::mul(s, a[i]);
}

template <typename T>
__device__ void sigmoid_body(const T* __restrict__ a, T* __restrict__ c, unsigned long long n) {
    GPUPROF_GRID_STRIDE(i, n) c[i] = Math<T>::sigmoid(a[i]);
}

template <typename T>
__device__ void tanh_body(const T* __restrict__ a, T* __restrict__ c, unsigned long long n) {
    GPUPROF_GRID_STRIDE(i, n) c[i] = Math<T>::tanh(a[i]);
}

// ---------------------------------------------------------------------------------------------
// dot: the textbook tiled shared-memory GEMM (launch: 16×16 threads/block, grid ⌈n/16⌉ × ⌈m/16⌉).
// Each thread owns one C element and accumulates over k in TILE-wide steps. Edge tiles are padded
// with zeros and every thread of a block runs the inner loop, so the FMA count the counters see is
// ⌈m/16⌉·16 × ⌈n/16⌉·16 × ⌈k/16⌉·16 (equal to m·n·k when all three are multiples of 16).
// Tiles and the accumulator are in Math<T>::Acc: float16 inputs are widened to float32 on load and
// accumulated with FFMA (as cublasGemmEx with compute type 32F, CuPy's default for float16).

constexpr int TILE = 16;

template <typename T>
__device__ void dot_body(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                         int m, int k, int n) {
    using Acc = typename Math<T>::Acc;
    __shared__ Acc a_tile[TILE][TILE];
    __shared__ Acc b_tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    Acc acc = Math<Acc>::zero();
    for (int t = 0; t < k; t += TILE) {
        a_tile[ty][tx] = (row < m && t + tx < k) ? Math<T>::widen(a[(size_t)row * k + t + tx])
                                                 : Math<Acc>::zero();
        b_tile[ty][tx] = (t + ty < k && col < n) ? Math<T>::widen(b[(size_t)(t + ty) * n + col])
                                                 : Math<Acc>::zero();
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc = Math<Acc>::fma(a_tile[ty][i], b_tile[i][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = Math<T>::narrow(acc);
}

// ---------------------------------------------------------------------------------------------
// Stable C names: gpuprof_<op>_<suffix>.

#define GPUPROF_KERNELS(SUFFIX, T)                                                              \
    extern "C" __global__ void __launch_bounds__(256) gpuprof_add_##SUFFIX(                     \
        const T* a, const T* b, T* c, unsigned long long n) { add_body<T>(a, b, c, n); }        \
    extern "C" __global__ void __launch_bounds__(256) gpuprof_mul_##SUFFIX(                     \
        const T* a, const T* b, T* c, unsigned long long n) { mul_body<T>(a, b, c, n); }        \
    extern "C" __global__ void __launch_bounds__(256) gpuprof_scalar_##SUFFIX(                  \
        const T* a, T s, T* c, unsigned long long n) { scalar_body<T>(a, s, c, n); }            \
    extern "C" __global__ void __launch_bounds__(256) gpuprof_sigmoid_##SUFFIX(                 \
        const T* a, T* c, unsigned long long n) { sigmoid_body<T>(a, c, n); }                   \
    extern "C" __global__ void __launch_bounds__(256) gpuprof_tanh_##SUFFIX(                    \
        const T* a, T* c, unsigned long long n) { tanh_body<T>(a, c, n); }                      \
    extern "C" __global__ void __launch_bounds__(TILE * TILE) gpuprof_dot_##SUFFIX(             \
        const T* a, const T* b, T* c, int m, int k, int n) { dot_body<T>(a, b, c, m, k, n); }

GPUPROF_KERNELS(f32, float)
GPUPROF_KERNELS(f64, double)
GPUPROF_KERNELS(f16, __half)
