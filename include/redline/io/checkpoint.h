// Checkpoints of a module and (optionally) its optimizer in one safetensors file: parameters and
// buffers as "model.<name>", optimizer state as "optim.<name>", plus string metadata (the
// trainer stores its config, step and RNG state there). Loads check every name and shape.
#pragma once

#include <string>

#include "redline/io/safetensors.h"
#include "redline/nn/module.h"
#include "redline/optim/optim.h"

namespace redline::io {

void save_checkpoint(const std::string& path, const nn::Module& module,
                     const optim::Optimizer* optimizer = nullptr, const Metadata& metadata = {});
// Copies the file's values into module (and optimizer); returns the file's metadata. Throws
// redline::Error, leaving module and optimizer unchanged, when the file does not fit them.
Metadata load_checkpoint(const std::string& path, nn::Module& module,
                         optim::Optimizer* optimizer = nullptr);

}  // namespace redline::io
