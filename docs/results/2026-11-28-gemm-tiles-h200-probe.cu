// Probe (#17, docs/results/2026-11-28-gemm-tiles-h200.md): the DGEMM shapes of the blocked QR's trailing
// update and the full-T steps at n = 8192-32768, nb = 512, timed one by one alone on the GPU with
// cublasDgemm and with each algorithm cuBLASLt's heuristic returns (up to 24), with their tiles.
// Build: nvcc -O3 -std=c++20 -arch=sm_90 this.cu -lcublasLt -lcublas
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("fail %s:%d %s -> %d\n", __FILE__, __LINE__, #x, int(e_)); std::exit(1); } } while (0)

__global__ void fill(double* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = (h & 0xffff) / 65536.0 - 0.5;
  }
}

struct shape { const char* name; cublasOperation_t ta, tb; int m, n, k; const double *A; int lda; const double* B; int ldb; double* C; int ldc; double beta; };

cublasHandle_t h;
cublasLtHandle_t lt;
void* wsp; size_t wsz = 64u << 20;
cudaEvent_t e0, e1;

template <class F> float med(F f, int reps) {
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}


static void cfg(const cublasLtMatmulAlgo_t& a, char* out) {
  int id = 0, splitk = 0; uint32_t tile = 0, stages = 0, swz = 0, red = 0, custom = 0; uint16_t cluster = 0, inner = 0; size_t w;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &w);
  std::sprintf(out, "id%d tile%u st%u sk%d red%u swz%u cu%u cl%u in%u", id, tile, stages, splitk, red, swz, custom, cluster, inner);
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5, nb = 512, nmax = 32768;
  CK(cublasCreate(&h)); CK(cublasLtCreate(&lt));
  CK(cudaMalloc(&wsp, wsz));
  CK(cublasSetWorkspace(h, wsp, wsz));
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  double *A, *S, *X, *W;
  size_t mn = size_t(nmax) * nmax;
  CK(cudaMalloc(&A, mn * 8)); CK(cudaMalloc(&S, mn * 8));
  CK(cudaMalloc(&X, size_t(nmax) * nb * 8)); CK(cudaMalloc(&W, size_t(nmax) * nb * 8));
  fill<<<2048, 256>>>(A, mn, 1); fill<<<2048, 256>>>(S, mn, 2);
  fill<<<2048, 256>>>(X, size_t(nmax) * nb, 3); fill<<<2048, 256>>>(W, size_t(nmax) * nb, 4);
  CK(cudaDeviceSynchronize());
  struct pt { int n, k; };
  std::vector<pt> pts = {{32768, 1536}, {32768, 4608}, {32768, 10752}, {32768, 16896}, {32768, 23040}, {32768, 29184},
                         {16384, 1536}, {16384, 4608}, {16384, 8704}, {16384, 12800}, {8192, 1024}, {8192, 3584}, {8192, 6144}};
  const char* names[4] = {"X=Sb^T Vb", "Sb+=Vb T12^T", "W=V^T C", "C-=V W"};
  for (auto [n, k] : pts) {
    const int m = n, mb = m - k - nb, nt = n - k - nb;
    const double* vb = A + size_t(k) * m + k + nb;
    shape sh[4] = {
        {names[0], CUBLAS_OP_T, CUBLAS_OP_N, k, nb, mb, S + k + nb, m, vb, m, X, k, 0.0},
        {names[1], CUBLAS_OP_N, CUBLAS_OP_T, mb, k, nb, vb, m, S + size_t(k) * m, m, S + k + nb, m, 1.0},
        {names[2], CUBLAS_OP_T, CUBLAS_OP_N, nb, nt, m - k, A + size_t(k) * m + k, m, A + size_t(k + nb) * m + k, m, W, nb, 0.0},
        {names[3], CUBLAS_OP_N, CUBLAS_OP_N, m - k, nt, nb, A + size_t(k) * m + k, m, W, nb, A + size_t(k + nb) * m + k, m, 1.0},
    };
    for (int g = 0; g < 4; ++g) {
      shape& s = sh[g];
      double alpha = g == 3 ? -1.0 : 1.0, beta = s.beta;
      cublasLtMatmulDesc_t desc;
      CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_64F, CUDA_R_64F));
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &s.ta, sizeof(s.ta)));
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &s.tb, sizeof(s.tb)));
      cublasLtMatrixLayout_t la, lb, lc;
      int ar = s.ta == CUBLAS_OP_N ? s.m : s.k, ac = s.ta == CUBLAS_OP_N ? s.k : s.m;
      int br = s.tb == CUBLAS_OP_N ? s.k : s.n, bc = s.tb == CUBLAS_OP_N ? s.n : s.k;
      CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_64F, ar, ac, s.lda));
      CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_64F, br, bc, s.ldb));
      CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_64F, s.m, s.n, s.ldc));
      cublasLtMatmulPreference_t pref;
      CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof(wsz)));
      cublasLtMatmulHeuristicResult_t res[24];
      int nres = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 24, res, &nres));
      const int na = nres + 1;  // slot 0: cublasDgemm
      std::vector<std::vector<float>> t(na);
      auto run = [&](int a) -> int {
        if (a == 0) return cublasDgemm(h, s.ta, s.tb, s.m, s.n, s.k, &alpha, s.A, s.lda, s.B, s.ldb, &beta, s.C, s.ldc);
        return cublasLtMatmul(lt, desc, &alpha, s.A, la, s.B, lb, &beta, s.C, lc, s.C, lc, &res[a - 1].algo, wsp, wsz, 0);
      };
      std::vector<int> ok(na, 1);
      for (int a = 0; a < na; ++a) ok[a] = run(a) == 0;
      CK(cudaDeviceSynchronize());
      for (int r = 0; r < reps; ++r)
        for (int a = 0; a < na; ++a) {
          if (!ok[a]) continue;
          cudaEventRecord(e0); run(a); cudaEventRecord(e1); cudaEventSynchronize(e1);
          float ms; cudaEventElapsedTime(&ms, e0, e1); t[a].push_back(ms);
        }
      double fl = 2.0 * s.m * double(s.n) * s.k;
      std::printf("== n=%d k=%d %s M=%d N=%d K=%d\n", n, k, s.name, s.m, s.n, s.k);
      for (int a = 0; a < na; ++a) {
        if (!ok[a]) continue;
        std::sort(t[a].begin(), t[a].end());
        char c[200] = "cublasDgemm";
        if (a > 0) cfg(res[a - 1].algo, c);
        std::printf("  %2d %-60s med %8.3f ms min %8.3f  %5.1f TF\n", a - 1, c, t[a][t[a].size() / 2], t[a][0],
                    fl / t[a][t[a].size() / 2] / 1e9);
      }
      std::fflush(stdout);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
    }
  }
  CK(cudaGetLastError());
}
