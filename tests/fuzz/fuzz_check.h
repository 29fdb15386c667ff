#pragma once
// Shared by the libFuzzer targets: an invariant check that stays on in every build type and aborts with a
// message, so libFuzzer records the input as a crash.
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                        \
      std::fputc('\n', stderr);                                                 \
      std::abort();                                                             \
    }                                                                           \
  } while (0)
