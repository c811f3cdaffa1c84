// Weight initializers. Values are drawn on the CPU from a Philox Generator (seed, stream) and
// copied to the tensor's device, so one seed gives the same network on every device.
// fan_in / fan_out of a (out, in, k...) weight: in * prod(k) / out * prod(k).
#pragma once

#include "redline/core/random.h"
#include "redline/core/tensor.h"

namespace redline::nn::init {

void uniform_(Tensor& t, double lo, double hi, Generator& gen);
void normal_(Tensor& t, double mean, double std, Generator& gen);
void constant_(Tensor& t, double value);
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for Linear and Conv2d weights and biases.
void uniform_fan_in_(Tensor& t, int64_t fan_in, Generator& gen);
// He: U(-b, b) with b = gain * sqrt(3 / fan_in); N(0, gain / sqrt(fan_in)). gain sqrt(2) (relu).
void kaiming_uniform_(Tensor& t, Generator& gen, double gain = 1.4142135623730951);
void kaiming_normal_(Tensor& t, Generator& gen, double gain = 1.4142135623730951);
// Glorot: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& t, Generator& gen, double gain = 1.0);
// A (semi-)orthogonal matrix of the (out, in * prod(k)) view, times gain (QR of a Gaussian
// matrix with the signs of R's diagonal folded in, as torch.nn.init.orthogonal_).
void orthogonal_(Tensor& t, Generator& gen, double gain = 1.0);

int64_t fan_in(const Tensor& t);
int64_t fan_out(const Tensor& t);

}  // namespace redline::nn::init
