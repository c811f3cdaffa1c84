// safetensors: round trips of every dtype, the byte layout, corrupt files, atomic writes,
// checkpoints of modules and optimizers, and the cross-check with PyTorch's safetensors package
// (SafetensorsPeer, driven by tests/io/safetensors_peer.py on a machine with PyTorch).
#include "redline/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ops/op_test_util.h"
#include "redline/io/checkpoint.h"
#include "redline/nn/layers.h"
#include "redline/ops/ops.h"

namespace redline::io {
namespace {

namespace fs = std::filesystem;

// The value pattern shared with tests/io/safetensors_peer.py: element i of the (3, 5) tensor of
// each dtype.
double pattern(DType t, int64_t i) {
  switch (t) {
    case DType::f32:
    case DType::bf16:
    case DType::f16:
      return (static_cast<double>(i) - 7.0) * 0.375;
    case DType::f64:  // not representable in f32: the file must carry all 8 bytes
      return (static_cast<double>(i) - 7.0) * 0.375 + 1e-12;
    case DType::u8:
      return static_cast<double>((i * 37) % 256);
    case DType::i32:
      return (static_cast<double>(i) - 7.0) * 100000.0;
    case DType::i64:
      return (static_cast<double>(i) - 7.0) * 1e12;
    case DType::boolean:
      return i % 3 == 0 ? 1.0 : 0.0;
  }
  return 0;
}

std::string peer_name(DType t) { return "pattern_" + std::string(dtype_name(t)); }

NamedTensors pattern_tensors() {
  NamedTensors out;
  for (DType t : kAllDTypes) {
    Tensor v = Tensor::empty({3, 5}, t);
    for (int64_t i = 0; i < 15; ++i) v.reshape({15}).slice(0, i, i + 1).fill_(pattern(t, i));
    out.emplace_back(peer_name(t), v);
  }
  return out;
}

void expect_pattern(const Tensor& t, DType dtype) {
  ASSERT_EQ(t.dtype(), dtype);
  ASSERT_EQ(t.shape(), (Shape{3, 5}));
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ(t.at({i / 5, i % 5}), pattern(dtype, i)) << dtype_name(dtype) << " element " << i;
  }
}

std::string temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("redline_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Safetensors, EveryDTypeRoundTrips) {
  const std::string path = temp_dir() + "/all.safetensors";
  save_safetensors(path, pattern_tensors(), {{"format", "pt"}, {"step", "42"}});
  const SafetensorsContent back = load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), std::size(kAllDTypes));
  for (size_t k = 0; k < std::size(kAllDTypes); ++k) {
    EXPECT_EQ(back.tensors[k].first, peer_name(kAllDTypes[k]));  // file order kept
    expect_pattern(back.at(peer_name(kAllDTypes[k])), kAllDTypes[k]);
  }
  EXPECT_EQ(back.metadata.at("step"), "42");
  EXPECT_ERROR_WITH(back.at("missing"), "no tensor named 'missing'");
  // Non-contiguous and empty tensors are written by value.
  const Tensor t = Tensor::arange(0, 6).view({2, 3}).transpose(0, 1);
  save_safetensors(path, {{"t", t}, {"empty", Tensor::zeros({0, 4}, DType::f32)}});
  const SafetensorsContent again = load_safetensors(path);
  EXPECT_EQ(test::values(again.at("t")), test::values(t));
  EXPECT_EQ(again.at("empty").shape(), (Shape{0, 4}));
}

TEST(Safetensors, ByteLayoutFollowsTheFormat) {
  const std::string bytes = serialize_safetensors(
      {{"w", Tensor::from_host<float>({1.0f, -2.0f}, {2})}}, {{"format", "pt"}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2}));
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json({0, 8}));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  float values[2];
  std::memcpy(values, bytes.data() + 8 + n, 8);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // As PyTorch's writer lays it out: metadata first, unpadded header, BF16 data.
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[],"data_offsets":[4,12]},)"
      R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += json;
  const uint16_t a[2] = {0x3F80, 0xC000};  // 1.0, -2.0
  const int64_t b = -5;
  bytes.append(reinterpret_cast<const char*>(a), 4);
  bytes.append(reinterpret_cast<const char*>(&b), 8);
  const SafetensorsContent c = parse_safetensors(bytes, "hand.safetensors");
  EXPECT_EQ(c.tensors[0].first, "a");  // sorted by offset, not by name
  EXPECT_EQ(c.at("a").at({1}), -2.0);
  EXPECT_EQ(c.at("b").dim(), 0);
  EXPECT_EQ(c.at("b").item(), -5.0);
}

TEST(Safetensors, CorruptFilesAreRefusedWithOneSentence) {
  const std::string good = serialize_safetensors(
      {{"a", Tensor::ones({4}, DType::f32)}, {"b", Tensor::ones({2}, DType::i32)}});
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  EXPECT_ERROR_WITH(parse_safetensors(good.substr(0, 5), "f"), "fewer than the 8-byte");
  EXPECT_ERROR_WITH(parse_safetensors(good.substr(0, good.size() - 3), "f"), "truncated or padded");
  EXPECT_ERROR_WITH(parse_safetensors(good.substr(0, 8 + n / 2), "f"), "truncated?");
  std::string bad_json = good;
  bad_json[8] = '[';
  EXPECT_ERROR_WITH(parse_safetensors(bad_json, "f"), "does not parse");
  auto with_header = [](const std::string& json, size_t data_bytes) {
    std::string bytes(8, '\0');
    const uint64_t len = json.size();
    std::memcpy(bytes.data(), &len, 8);
    return bytes + json + std::string(data_bytes, '\0');
  };
  EXPECT_ERROR_WITH(
      parse_safetensors(with_header(R"({"x":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})", 2),
                        "f"),
      "dtype I16, which redline does not support");
  EXPECT_ERROR_WITH(
      parse_safetensors(with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                        "f"),
      "needs 12 bytes");
  EXPECT_ERROR_WITH(
      parse_safetensors(with_header(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                    R"("y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                                    3),
                        "f"),
      "starts at byte 1 but the previous data ends at 2");
  EXPECT_ERROR_WITH(parse_safetensors(with_header(R"({"x":{"dtype":"U8","shape":[2]}})", 2), "f"),
                    "malformed entry");
  EXPECT_ERROR_WITH(parse_safetensors(with_header(R"([1, 2])", 0), "f"), "not an object");
  EXPECT_ERROR_WITH(load_safetensors("/nonexistent/redline.safetensors"), "cannot open");
  const std::string path = temp_dir() + "/torn.safetensors";
  write_bytes(path, good.substr(0, good.size() - 1));
  EXPECT_ERROR_WITH(load_safetensors(path), path + " is not a valid safetensors file");
  EXPECT_ERROR_WITH(serialize_safetensors({{"a", Tensor()}}), "undefined");
  EXPECT_ERROR_WITH(serialize_safetensors({{"a", Tensor::ones({1}, DType::f32)},
                                           {"a", Tensor::ones({1}, DType::f32)}}),
                    "appears twice");
}

TEST(Safetensors, WritesAreAtomic) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/model.safetensors";
  save_safetensors(path, {{"v", Tensor::full({3}, 1.0, DType::f32)}});
  save_safetensors(path, {{"v", Tensor::full({3}, 2.0, DType::f32)}});  // replaces
  EXPECT_EQ(load_safetensors(path).at("v").at({0}), 2.0);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  }
  // A write that cannot complete leaves the previous file as it was.
  EXPECT_ERROR_WITH(save_safetensors(dir + "/missing_dir/x.safetensors", {}), "cannot create");
  fs::create_directory(dir + "/blocker.safetensors");  // rename over a directory fails
  EXPECT_ERROR_WITH(
      save_safetensors(dir + "/blocker.safetensors", {{"v", Tensor::ones({1}, DType::f32)}}),
      "renaming");
  EXPECT_EQ(load_safetensors(path).at("v").at({2}), 2.0);
}

TEST(Checkpoint, ModuleAndOptimizerRoundTrip) {
  Generator gen(3, 0);
  nn::Sequential net({std::make_shared<nn::Linear>(3, 4, gen), nn::ReLU(),
                      std::make_shared<nn::Linear>(4, 2, gen)});
  optim::Adam adam(net.parameters(), optim::AdamOptions{0.01});
  const Tensor x = test::uniform({5, 3}, 1);
  for (int i = 0; i < 3; ++i) {
    adam.zero_grad();
    sum(square(net(Variable(x)))).backward();
    adam.step();
  }
  const std::string path = temp_dir() + "/ckpt.safetensors";
  save_checkpoint(path, net, &adam, {{"env_steps", "1234"}});

  Generator other(99, 0);
  nn::Sequential copy({std::make_shared<nn::Linear>(3, 4, other), nn::ReLU(),
                       std::make_shared<nn::Linear>(4, 2, other)});
  optim::Adam copy_adam(copy.parameters(), optim::AdamOptions{0.01});
  const Metadata meta = load_checkpoint(path, copy, &copy_adam);
  EXPECT_EQ(meta.at("env_steps"), "1234");
  EXPECT_EQ(copy_adam.step_count(), 3);
  // Both continue identically.
  adam.zero_grad();
  copy_adam.zero_grad();
  sum(square(net(Variable(x)))).backward();
  sum(square(copy(Variable(x)))).backward();
  adam.step();
  copy_adam.step();
  for (size_t i = 0; i < net.parameters().size(); ++i) {
    EXPECT_EQ(test::values(net.parameters()[i].data()), test::values(copy.parameters()[i].data()));
  }
  // Weights only (evaluation) is fine; a different architecture is refused and left unchanged.
  load_checkpoint(path, copy);
  nn::Sequential wrong({std::make_shared<nn::Linear>(3, 5, other)});
  const std::vector<float> before = test::values(wrong.parameters()[0].data());
  EXPECT_ERROR_WITH(load_checkpoint(path, wrong), "holds 'model.0.weight' as f32 (4, 3)");
  EXPECT_EQ(test::values(wrong.parameters()[0].data()), before);
}

// Cross-check with PyTorch's safetensors package: tests/io/safetensors_peer.py writes
// $REDLINE_SAFETENSORS_PEER_DIR/torch_written.safetensors, runs this test, then reads
// redline_written.safetensors back in Python.
TEST(SafetensorsPeer, ExchangesFilesWithPyTorch) {
  const char* dir = std::getenv("REDLINE_SAFETENSORS_PEER_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "REDLINE_SAFETENSORS_PEER_DIR is not set; run tests/io/safetensors_peer.py "
                    "on a machine with PyTorch and safetensors";
  }
  const SafetensorsContent torch_file =
      load_safetensors(std::string(dir) + "/torch_written.safetensors");
  for (DType t : kAllDTypes) expect_pattern(torch_file.at(peer_name(t)), t);
  EXPECT_EQ(torch_file.metadata.at("producer"), "torch");
  save_safetensors(std::string(dir) + "/redline_written.safetensors", pattern_tensors(),
                   {{"producer", "redline"}});
}

}  // namespace
}  // namespace redline::io
