// One sentence for each fault a replay kernel can find (shared by the CPU twins, which throw at
// once, and the GPU front-end, which raises what the kernels wrote to pinned memory).
#pragma once

#include <cstdint>
#include <string>

#include "rl/replay/replay_math.h"

namespace redline::rl::replay {

std::string fault_message(const DeviceFault& fault, int64_t capacity);

}  // namespace redline::rl::replay
