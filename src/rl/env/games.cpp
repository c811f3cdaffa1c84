// Game names, channel counts and minimal action sets.
#include "rl/env/games.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace redline::rl {

Game parse_game(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (key == "cartpole" || key == "cartpolev1") return Game::cartpole;
  if (key == "breakout") return Game::breakout;
  if (key == "spaceinvaders") return Game::space_invaders;
  if (key == "freeway") return Game::freeway;
  if (key == "asterix") return Game::asterix;
  if (key == "seaquest") return Game::seaquest;
  REDLINE_FAIL(
      "unknown game '{}' (expected one of cartpole, breakout, space_invaders, freeway, "
      "asterix, seaquest)",
      name);
}

std::string_view game_name(Game game) {
  switch (game) {
    case Game::cartpole:
      return "cartpole";
    case Game::breakout:
      return "breakout";
    case Game::space_invaders:
      return "space_invaders";
    case Game::freeway:
      return "freeway";
    case Game::asterix:
      return "asterix";
    case Game::seaquest:
      return "seaquest";
  }
  return "unknown";
}

bool is_minatar(Game game) { return game != Game::cartpole; }

int game_channels(Game game) {
  if (!is_minatar(game)) return 0;
  return with_minatar_game(game, [](auto g) { return decltype(g)::kChannels; });
}

std::vector<int> minimal_action_set(Game game) {
  if (!is_minatar(game)) return {0, 1};
  return with_minatar_game(game, [](auto g) {
    using G = decltype(g);
    std::vector<int> actions;
    for (int i = 0; i < G::kNumMinimalActions; ++i) actions.push_back(G::minimal_action(i));
    return actions;
  });
}

}  // namespace redline::rl
