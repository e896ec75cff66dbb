"""Running work under a profiler or a scheduler: perf (CPU), ncu and nvprof (GPU), the GPU
workload child process, and Slurm. Each backend is probed once and says why it was chosen."""
