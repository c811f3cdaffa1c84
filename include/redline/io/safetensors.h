// The safetensors format (https://github.com/huggingface/safetensors), readable and writable by
// PyTorch's `safetensors` package:
//   8 bytes   little-endian u64 N, the header length
//   N bytes   JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                    ..., "__metadata__": {"key": "value"}}  (padded with spaces)
//   rest      the tensors' raw little-endian bytes; offsets are relative to the end of the header
// dtype names: F32, F64, BF16, F16, U8, I32, I64, BOOL.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redline/core/tensor.h"

namespace redline::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsContent {
  NamedTensors tensors;  // in file order (by data offset)
  Metadata metadata;

  // The tensor called name; throws redline::Error naming the file's tensors when absent.
  const Tensor& at(const std::string& name) const;
};

// The file's bytes (tensors from any device are copied to the host).
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});
// Parses bytes; `source` names them in error messages (a path). Tensors land on device.
SafetensorsContent parse_safetensors(std::string_view bytes, const std::string& source,
                                     Device device = Device::cpu());

// Atomic: writes path.tmp-<pid>, fsyncs it, renames it over path and fsyncs the directory, so a
// crash leaves either the old file or the new one, never a torn one.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});
// Refuses a missing, truncated or corrupt file with one sentence naming the path and the fault.
SafetensorsContent load_safetensors(const std::string& path, Device device = Device::cpu());

// "F32" <-> DType::f32, ...
std::string_view safetensors_dtype_name(DType dtype);

// Writes bytes to path atomically (used by the checkpoint writers too).
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace redline::io
