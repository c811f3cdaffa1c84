// Calls a functor with the rules type of a game: with_game(Game::breakout, f) calls
// f(Breakout{}). The one place that maps the Game enum to rule types.
#pragma once

#include "redline/core/error.h"
#include "redline/rl/vec_env.h"
#include "rl/env/driver.h"

namespace redline::rl {

template <typename F>
decltype(auto) with_game(Game game, F&& f) {
  switch (game) {
    case Game::cartpole:
      return f(CartPole{});
    case Game::breakout:
      return f(Breakout{});
    case Game::space_invaders:
      return f(SpaceInvaders{});
    case Game::freeway:
      return f(Freeway{});
    case Game::asterix:
      return f(Asterix{});
    case Game::seaquest:
      return f(Seaquest{});
  }
  REDLINE_FAIL("game id {} is not a known game", static_cast<int>(game));
}

template <typename F>
decltype(auto) with_minatar_game(Game game, F&& f) {
  switch (game) {
    case Game::breakout:
      return f(Breakout{});
    case Game::space_invaders:
      return f(SpaceInvaders{});
    case Game::freeway:
      return f(Freeway{});
    case Game::asterix:
      return f(Asterix{});
    case Game::seaquest:
      return f(Seaquest{});
    default:
      break;
  }
  REDLINE_FAIL(
      "{} is not a MinAtar game (expected one of breakout, space_invaders, freeway, "
      "asterix, seaquest)",
      game_name(game));
}

}  // namespace redline::rl
