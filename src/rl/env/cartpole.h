// CartPole-v1 with Gymnasium's dynamics and constants: float64 physics, explicit Euler,
// float32 observations. sin and cos are our own double-precision polynomials with explicit
// fused multiply-adds, so the CPU and every GPU compute the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "redline/core/hd.h"
#include "rl/env/grid.h"

namespace redline::rl {

// sin(x) and cos(x) for |x| < 1e5, within about 1 ulp: Cody-Waite reduction by pi/2 into
// [-pi/4, pi/4] and Taylor polynomials to degree 17 (truncation error below 1e-19 there).
REDLINE_HD inline void portable_sincos(double x, double* sin_out, double* cos_out) {
  constexpr double kTwoOverPi = 0.63661977236758134308;
  constexpr double kPiOver2Hi = 1.5707963267341256e+00;   // first 33 bits of pi/2
  constexpr double kPiOver2Mid = 6.0771005065061922e-11;  // next 33 bits
  constexpr double kPiOver2Lo = 2.0222662487959506e-21;   // the rest
  const double k = rint(x * kTwoOverPi);                  // round to nearest (default mode)
  double r = fma_d(-k, kPiOver2Hi, x);
  r = fma_d(-k, kPiOver2Mid, r);
  r = fma_d(-k, kPiOver2Lo, r);
  const double r2 = r * r;
  // sin(r) = r (1 - r^2/3! + r^4/5! - ...), cos(r) = 1 - r^2/2! + r^4/4! - ...
  double sp = 1.0 / 355687428096000.0;  // 1/17!
  sp = fma_d(sp, r2, -1.0 / 1307674368000.0);
  sp = fma_d(sp, r2, 1.0 / 6227020800.0);
  sp = fma_d(sp, r2, -1.0 / 39916800.0);
  sp = fma_d(sp, r2, 1.0 / 362880.0);
  sp = fma_d(sp, r2, -1.0 / 5040.0);
  sp = fma_d(sp, r2, 1.0 / 120.0);
  sp = fma_d(sp, r2, -1.0 / 6.0);
  const double s = fma_d(sp * r2, r, r);
  double cp = 1.0 / 6402373705728000.0;  // 1/18!
  cp = fma_d(cp, r2, -1.0 / 20922789888000.0);
  cp = fma_d(cp, r2, 1.0 / 87178291200.0);
  cp = fma_d(cp, r2, -1.0 / 479001600.0);
  cp = fma_d(cp, r2, 1.0 / 3628800.0);
  cp = fma_d(cp, r2, -1.0 / 40320.0);
  cp = fma_d(cp, r2, 1.0 / 720.0);
  cp = fma_d(cp, r2, -1.0 / 24.0);
  cp = fma_d(cp, r2, 0.5);
  const double c = fma_d(-cp, r2, 1.0);
  const int quadrant = static_cast<int>(static_cast<int64_t>(k) & 3);
  switch (quadrant) {
    case 0:
      *sin_out = s;
      *cos_out = c;
      break;
    case 1:
      *sin_out = c;
      *cos_out = -s;
      break;
    case 2:
      *sin_out = -s;
      *cos_out = -c;
      break;
    default:
      *sin_out = -c;
      *cos_out = s;
      break;
  }
}

struct CartPole {
  static constexpr int kObsSize = 4;
  static constexpr int kNumActions = 2;
  static constexpr int kDefaultMaxEpisodeSteps = 500;
  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kLength = 0.5;  // half the pole's length
  static constexpr double kPoleMassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;
  static constexpr double kThetaThreshold = 12 * 2 * 3.141592653589793 / 360;
  static constexpr double kXThreshold = 2.4;

  struct State {
    double x, x_dot, theta, theta_dot;
    uint8_t terminal;
    uint8_t pad[7];
  };

  // Gymnasium: uniform(-0.05, 0.05) for each of the four state variables.
  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& rng) {
    s.x = -0.05 + 0.1 * rng.uniform_double();
    s.x_dot = -0.05 + 0.1 * rng.uniform_double();
    s.theta = -0.05 + 0.1 * rng.uniform_double();
    s.theta_dot = -0.05 + 0.1 * rng.uniform_double();
    s.terminal = 0;
    for (int i = 0; i < 7; ++i) s.pad[i] = 0;
  }

  // Action 1 pushes right, 0 pushes left. Reward 1 on every step, the terminal one included.
  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool /*ramping*/, Rng& /*rng*/) {
    const double force = action == 1 ? kForceMag : -kForceMag;
    double sintheta, costheta;
    portable_sincos(s.theta, &sintheta, &costheta);
    const double temp =
        (force + kPoleMassLength * (s.theta_dot * s.theta_dot) * sintheta) / kTotalMass;
    const double thetaacc =
        (kGravity * sintheta - costheta * temp) /
        (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
    s.x = s.x + kTau * s.x_dot;
    s.x_dot = s.x_dot + kTau * xacc;
    s.theta = s.theta + kTau * s.theta_dot;
    s.theta_dot = s.theta_dot + kTau * thetaacc;
    const bool terminal = s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold ||
                          s.theta > kThetaThreshold;
    s.terminal = terminal ? 1 : 0;
    return {1, terminal};
  }

  REDLINE_HD static void observe(const State& s, float* out) {
    out[0] = static_cast<float>(s.x);
    out[1] = static_cast<float>(s.x_dot);
    out[2] = static_cast<float>(s.theta);
    out[3] = static_cast<float>(s.theta_dot);
  }
};

}  // namespace redline::rl
