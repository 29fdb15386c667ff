#pragma once
// How the C allocator hands freed memory back to the system in `tensorfold serve`, a long-running process
// whose resident memory should return to its idle level after a burst of requests.

namespace tf::cli {

// Call before the engine loads. Does nothing off glibc, or when GLIBC_TUNABLES sets glibc.malloc.* (the
// operator's settings win).
void return_freed_memory_promptly();

}  // namespace tf::cli
