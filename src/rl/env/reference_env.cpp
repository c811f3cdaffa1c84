// The original MinAtar wrapper driven by MT19937 (spec 2.2-2.4), on the shared rule code.
#include "redline/rl/reference_env.h"

#include "rl/env/games.h"
#include "rl/env/rng.h"

namespace redline::rl {

class ReferenceMinAtar::Impl {
 public:
  virtual ~Impl() = default;
  virtual void reset() = 0;
  virtual ActResult act(int action) = 0;
  virtual std::vector<uint8_t> observation() const = 0;
  virtual int channels() const = 0;
  Game game;
};

namespace {

template <typename G>
class ReferenceGame final : public ReferenceMinAtar::Impl {
 public:
  ReferenceGame(uint32_t seed, double sticky, bool ramping)
      : rng_(seed), sticky_(sticky), ramping_(ramping) {
    reset();
  }

  void reset() override { G::reset(state_, rng_); }

  ReferenceMinAtar::ActResult act(int action) override {
    if (rng_.uniform_double() < sticky_) action = last_action_;
    last_action_ = action;
    const StepOutcome out = G::step(state_, action, ramping_, rng_);
    return {action, out.reward, out.terminal};
  }

  std::vector<uint8_t> observation() const override {
    Grid grids[G::kChannels];
    G::observe(state_, grids);
    std::vector<uint8_t> bytes(static_cast<size_t>(G::kChannels) * kCells);
    grids_to_bytes(grids, G::kChannels, bytes.data());
    return bytes;
  }

  int channels() const override { return G::kChannels; }

 private:
  Mt19937Source rng_;
  typename G::State state_{};
  double sticky_;
  bool ramping_;
  int last_action_ = 0;
};

}  // namespace

ReferenceMinAtar::ReferenceMinAtar(Game game, uint32_t seed, double sticky_action_prob,
                                   bool difficulty_ramping) {
  REDLINE_CHECK(sticky_action_prob >= 0.0 && sticky_action_prob <= 1.0,
                "sticky_action_prob is {} but must be in [0, 1]", sticky_action_prob);
  impl_ = with_minatar_game(game, [&](auto g) -> std::unique_ptr<Impl> {
    return std::make_unique<ReferenceGame<decltype(g)>>(seed, sticky_action_prob,
                                                        difficulty_ramping);
  });
  impl_->game = game;
}

ReferenceMinAtar::~ReferenceMinAtar() = default;
ReferenceMinAtar::ReferenceMinAtar(ReferenceMinAtar&&) noexcept = default;
ReferenceMinAtar& ReferenceMinAtar::operator=(ReferenceMinAtar&&) noexcept = default;

void ReferenceMinAtar::reset() { impl_->reset(); }

ReferenceMinAtar::ActResult ReferenceMinAtar::act(int action) {
  REDLINE_CHECK(action >= 0 && action < kNumRawActions,
                "action {} is out of range: MinAtar actions are 0..5", action);
  return impl_->act(action);
}

std::vector<uint8_t> ReferenceMinAtar::observation() const { return impl_->observation(); }
int ReferenceMinAtar::channels() const { return impl_->channels(); }
Game ReferenceMinAtar::game() const { return impl_->game; }

struct ReferencePolicy::State {
  explicit State(uint32_t seed) : rng(seed) {}
  Mt19937Source rng;
};

ReferencePolicy::ReferencePolicy(uint32_t seed) : state_(std::make_unique<State>(seed)) {}
ReferencePolicy::~ReferencePolicy() = default;

int ReferencePolicy::next(int num_actions) {
  REDLINE_CHECK(num_actions >= 1, "num_actions is {} but must be at least 1", num_actions);
  return state_->rng.randint(0, num_actions);
}

}  // namespace redline::rl
