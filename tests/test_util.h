// Helpers shared by the test programs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "redline/core/device.h"

// GPU tests run where a GPU is usable and are reported as skipped (with the reason) elsewhere.
#define REDLINE_REQUIRE_GPU()                                                                     \
  do {                                                                                            \
    if (::redline::gpu_count() == 0) {                                                            \
      GTEST_SKIP() << "no usable GPU in this process (backend: " << ::redline::gpu_backend_name() \
                   << ")";                                                                        \
    }                                                                                             \
  } while (0)

// Path of a file in the source tree (tests read the specs and fixtures from there).
inline std::string source_path(const std::string& relative) {
  return std::string(REDLINE_SOURCE_DIR) + "/" + relative;
}
