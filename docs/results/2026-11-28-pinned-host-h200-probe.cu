// Costs of getting page-locked host memory on this machine (not kept).
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static void touch(char* p, size_t b, int threads) {
  std::vector<std::thread> t;
  size_t chunk = (b + threads - 1) / threads;
  for (int i = 0; i < threads; ++i) t.emplace_back([=] { size_t o = i * chunk; if (o < b) memset(p + o, 0, std::min(chunk, b - o)); });
  for (auto& x : t) x.join();
}
int main(int argc, char** argv) {
  size_t gb = argc > 1 ? atol(argv[1]) : 1;
  size_t b = gb << 30;
  CK(cudaFree(0));
  void* d; CK(cudaMalloc(&d, b));
  for (int rep = 0; rep < 2; ++rep) {
    double t0 = now(); void* p; CK(cudaMallocHost(&p, b)); double t1 = now();
    CK(cudaMemcpy(p, d, b, cudaMemcpyDeviceToHost)); double t2 = now();
    CK(cudaFreeHost(p)); double t3 = now();
    printf("%zu GiB cudaMallocHost %.3f s, D2H %.3f s, cudaFreeHost %.3f s\n", gb, t1 - t0, t2 - t1, t3 - t2);
  }
  for (int hp = 0; hp < 2; ++hp) for (int threads : {1, 8}) {
    double t0 = now();
    char* p = (char*)mmap(nullptr, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hp) madvise(p, b, MADV_HUGEPAGE);
    touch(p, b, threads); double t1 = now();
    CK(cudaHostRegister(p, b, cudaHostRegisterDefault)); double t2 = now();
    CK(cudaMemcpy(p, d, b, cudaMemcpyDeviceToHost)); double t3 = now();
    CK(cudaHostUnregister(p)); double t4 = now();
    CK(cudaMemcpy(p, d, b, cudaMemcpyDeviceToHost)); double t5 = now();
    munmap(p, b); double t6 = now();
    printf("%zu GiB mmap%s touch(%d thr) %.3f s, register %.3f s, D2H pinned %.3f s, unregister %.3f s, D2H pageable %.3f s, munmap %.3f s\n",
           gb, hp ? "+THP" : "", threads, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5);
  }
  // register without touching first (register faults the pages in)
  for (int hp = 0; hp < 2; ++hp) {
    double t0 = now();
    char* p = (char*)mmap(nullptr, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hp) madvise(p, b, MADV_HUGEPAGE);
    CK(cudaHostRegister(p, b, cudaHostRegisterDefault)); double t1 = now();
    CK(cudaHostUnregister(p)); munmap(p, b); double t2 = now();
    printf("%zu GiB mmap%s register untouched %.3f s, unregister+munmap %.3f s\n", gb, hp ? "+THP" : "", t1 - t0, t2 - t1);
  }
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r"); char buf[200] = {}; if (f) { fgets(buf, 200, f); fclose(f); }
  printf("THP: %s", buf);
}
