// MinAtar Seaquest rules (spec section 7), written once for the CPU and the GPU.
//
// The original's unbounded lists become fixed-capacity arrays in creation order (spec 7.10 gives
// the bounds: at most 2 torpedoes, 2 divers, 60 fish + enemy subs, about 70 enemy bullets). Fish
// and enemy subs share one list with a flag; iterating it newest-first while skipping the other
// kind, and searching it oldest-first, is exactly the original's pair of lists.
#pragma once

#include <cstdint>

#include "rl/env/grid.h"

namespace redline::rl {

struct Seaquest {
  static constexpr int kChannels = 10;
  static constexpr int kNumMinimalActions = 6;
  REDLINE_HD static constexpr int minimal_action(int i) { return i; }

  static constexpr int kMaxOxygen = 200;
  static constexpr int kInitialSpawnInterval = 20;
  static constexpr int kDiverSpawnInterval = 30;
  static constexpr int kInitialMoveInterval = 5;
  static constexpr int kShotCooldown = 5;
  static constexpr int kEnemyShotInterval = 10;
  static constexpr int kDiverMoveInterval = 5;
  static constexpr int kMaxDivers = 6;

  static constexpr int kMaxFriendly = 4;
  static constexpr int kMaxDiverObjects = 4;
  static constexpr int kMaxEnemies = 64;
  static constexpr int kMaxEnemyBullets = 80;

  static constexpr uint8_t kFlagRight = 1, kFlagSub = 2;

  // List items are 4-byte aligned (the layout is unchanged) so that the rules read and write an
  // item as one 32-bit word; on a GPU, where the state stays in global memory, that is one load
  // instead of four.
  struct alignas(4) Bullet {
    int8_t x, y;
    uint8_t right, pad;
  };
  struct alignas(4) Diver {
    int8_t x, y;
    uint8_t right, move_timer;
  };
  struct alignas(4) Enemy {
    int8_t x, y;
    uint8_t flags;       // kFlagRight | kFlagSub
    uint8_t move_timer;  // low nibble move timer (0..5), high nibble shot timer (0..10)
  };

  struct State {
    int32_t oxygen, diver_count;
    int8_t sub_x, sub_y;
    uint8_t facing_right, surfaced, terminal;
    int8_t enemy_spawn_interval, enemy_spawn_timer, diver_spawn_timer;
    int8_t move_interval, ramp_index, shot_timer;
    uint8_t n_friendly, n_divers, n_enemies, n_enemy_bullets;
    uint8_t pad;
    Bullet friendly[kMaxFriendly];
    Diver divers[kMaxDiverObjects];
    Enemy enemies[kMaxEnemies];
    Bullet enemy_bullets[kMaxEnemyBullets];
  };
  static_assert(sizeof(State) == 632, "24 bytes of scalars, then the four lists");

  REDLINE_HD static int move_timer_of(const Enemy& e) { return e.move_timer & 0xF; }
  REDLINE_HD static int shot_timer_of(const Enemy& e) { return e.move_timer >> 4; }
  REDLINE_HD static void set_timers(Enemy& e, int move, int shot) {
    e.move_timer = static_cast<uint8_t>(move | (shot << 4));
  }

  template <typename T>
  REDLINE_HD static void remove_at(T* items, uint8_t& n, int i) {
    for (int j = i; j + 1 < n; ++j) items[j] = items[j + 1];
    --n;
  }

  template <typename Rng>
  REDLINE_HD static void reset(State& s, Rng& /*rng*/) {
    s.oxygen = kMaxOxygen;
    s.diver_count = 0;
    s.sub_x = 5;
    s.sub_y = 0;
    s.facing_right = 0;
    s.surfaced = 1;
    s.terminal = 0;
    s.enemy_spawn_interval = kInitialSpawnInterval;
    s.enemy_spawn_timer = kInitialSpawnInterval;
    s.diver_spawn_timer = kDiverSpawnInterval;
    s.move_interval = kInitialMoveInterval;
    s.ramp_index = 0;
    s.shot_timer = 0;
    s.n_friendly = s.n_divers = s.n_enemies = s.n_enemy_bullets = 0;
    s.pad = 0;
  }

  template <typename Rng>
  REDLINE_HD static void spawn_enemy(State& s, Rng& rng) {
    const bool right = rng.uniform_double() < 0.5;
    const bool is_sub = rng.uniform_double() < 1.0 / 3.0;
    const int row = rng.randint(1, 9);
    for (int i = 0; i < s.n_enemies; ++i) {
      const Enemy e = s.enemies[i];
      if (e.y == row && ((e.flags & kFlagRight) != 0) != right) return;  // cancelled
    }
    if (s.n_enemies >= kMaxEnemies) return;  // unreachable (spec 7.10 bound: 60)
    Enemy e;
    e.x = right ? 0 : 9;
    e.y = static_cast<int8_t>(row);
    e.flags = static_cast<uint8_t>((right ? kFlagRight : 0) | (is_sub ? kFlagSub : 0));
    set_timers(e, s.move_interval, is_sub ? kEnemyShotInterval : 0);
    s.enemies[s.n_enemies++] = e;
  }

  template <typename Rng>
  REDLINE_HD static void spawn_diver(State& s, Rng& rng) {
    const bool right = rng.uniform_double() < 0.5;
    const int row = rng.randint(1, 9);
    if (s.n_divers >= kMaxDiverObjects) return;  // unreachable (spec 7.10 bound: 2)
    s.divers[s.n_divers++] =
        Diver{static_cast<int8_t>(right ? 0 : 9), static_cast<int8_t>(row),
              static_cast<uint8_t>(right ? 1 : 0), static_cast<uint8_t>(kDiverMoveInterval)};
  }

  // Index of the oldest enemy of the given kind at (y, x), or -1.
  REDLINE_HD static int oldest_enemy_at(const State& s, int y, int x, bool sub) {
    for (int i = 0; i < s.n_enemies; ++i) {
      const Enemy e = s.enemies[i];
      if (e.x == x && e.y == y && ((e.flags & kFlagSub) != 0) == sub) return i;
    }
    return -1;
  }

  REDLINE_HD static int oldest_friendly_at(const State& s, int y, int x) {
    for (int i = 0; i < s.n_friendly; ++i) {
      const Bullet b = s.friendly[i];
      if (b.x == x && b.y == y) return i;
    }
    return -1;
  }

  REDLINE_HD static int surface(State& s, bool ramping) {
    s.surfaced = 1;
    int bonus = 0;
    if (s.diver_count == kMaxDivers) {
      s.diver_count = 0;
      bonus = s.oxygen * 10 / kMaxOxygen;
    }
    s.oxygen = kMaxOxygen;
    s.diver_count -= 1;
    if (ramping && (s.enemy_spawn_interval > 1 || s.move_interval > 2)) {
      if (s.move_interval > 2 && (s.ramp_index & 1)) --s.move_interval;
      if (s.enemy_spawn_interval > 1) --s.enemy_spawn_interval;
      ++s.ramp_index;
    }
    return bonus;
  }

  // Steps every enemy of one kind, newest first (spec 7.6 steps 6 and 8).
  REDLINE_HD static void move_enemies(State& s, bool subs, int& reward, bool& terminal) {
    for (int i = s.n_enemies - 1; i >= 0; --i) {
      Enemy e = s.enemies[i];
      if (((e.flags & kFlagSub) != 0) != subs) continue;
      if (e.x == s.sub_x && e.y == s.sub_y) terminal = true;
      int move = move_timer_of(e);
      int shot = shot_timer_of(e);
      bool removed = false;
      int x = e.x;
      const int y = e.y;
      const bool right = (e.flags & kFlagRight) != 0;
      if (move == 0) {
        move = s.move_interval;
        x += right ? 1 : -1;
        e.x = static_cast<int8_t>(x);
        if (x < 0 || x > 9) {
          removed = true;
        } else if (x == s.sub_x && y == s.sub_y) {
          terminal = true;
        } else {
          const int b = oldest_friendly_at(s, y, x);
          if (b >= 0) {
            remove_at(s.friendly, s.n_friendly, b);
            removed = true;
            reward += 1;
          }
        }
      } else {
        --move;
      }
      if (subs) {  // even a sub removed above runs its shot timer (spec 7.9)
        if (shot == 0) {
          shot = kEnemyShotInterval;
          if (s.n_enemy_bullets < kMaxEnemyBullets) {
            s.enemy_bullets[s.n_enemy_bullets++] =
                Bullet{static_cast<int8_t>(x), static_cast<int8_t>(y),
                       static_cast<uint8_t>(right ? 1 : 0), 0};
          }
        } else {
          --shot;
        }
      }
      set_timers(e, move, shot);
      s.enemies[i] = e;
      if (removed) remove_at(s.enemies, s.n_enemies, i);
    }
  }

  template <typename Rng>
  REDLINE_HD static StepOutcome step(State& s, int action, bool ramping, Rng& rng) {
    if (s.terminal) return {0, true};
    int reward = 0;
    bool terminal = false;

    if (s.enemy_spawn_timer == 0) {
      spawn_enemy(s, rng);
      s.enemy_spawn_timer = s.enemy_spawn_interval;
    }
    if (s.diver_spawn_timer == 0) {
      spawn_diver(s, rng);
      s.diver_spawn_timer = kDiverSpawnInterval;
    }

    if (action == kFire && s.shot_timer == 0) {
      if (s.n_friendly < kMaxFriendly) {
        s.friendly[s.n_friendly++] = Bullet{s.sub_x, s.sub_y, s.facing_right, 0};
      }
      s.shot_timer = kShotCooldown;
    } else if (action == kLeft) {
      s.sub_x = static_cast<int8_t>(max_int(0, s.sub_x - 1));
      s.facing_right = 0;
    } else if (action == kRight) {
      s.sub_x = static_cast<int8_t>(min_int(9, s.sub_x + 1));
      s.facing_right = 1;
    } else if (action == kUp) {
      s.sub_y = static_cast<int8_t>(max_int(0, s.sub_y - 1));
    } else if (action == kDown) {
      s.sub_y = static_cast<int8_t>(min_int(8, s.sub_y + 1));
    }
    const int sx = s.sub_x, sy = s.sub_y;

    // Torpedoes, newest first.
    for (int i = s.n_friendly - 1; i >= 0; --i) {
      Bullet b = s.friendly[i];
      const int x = b.x + (b.right ? 1 : -1);
      b.x = static_cast<int8_t>(x);
      s.friendly[i] = b;
      if (x < 0 || x > 9) {
        remove_at(s.friendly, s.n_friendly, i);
        continue;
      }
      int target = oldest_enemy_at(s, b.y, x, false);
      if (target < 0) target = oldest_enemy_at(s, b.y, x, true);
      if (target >= 0) {
        remove_at(s.enemies, s.n_enemies, target);
        remove_at(s.friendly, s.n_friendly, i);
        reward += 1;
      }
    }

    // Divers, newest first.
    for (int i = s.n_divers - 1; i >= 0; --i) {
      Diver d = s.divers[i];
      if (d.x == sx && d.y == sy && s.diver_count < kMaxDivers) {
        remove_at(s.divers, s.n_divers, i);
        s.diver_count += 1;
      } else if (d.move_timer == 0) {
        d.move_timer = kDiverMoveInterval;
        const int x = d.x + (d.right ? 1 : -1);
        d.x = static_cast<int8_t>(x);
        s.divers[i] = d;
        if (x < 0 || x > 9) {
          remove_at(s.divers, s.n_divers, i);
        } else if (x == sx && d.y == sy && s.diver_count < kMaxDivers) {
          remove_at(s.divers, s.n_divers, i);
          s.diver_count += 1;
        }
      } else {
        --d.move_timer;
        s.divers[i] = d;
      }
    }

    move_enemies(s, true, reward, terminal);

    // Enemy bullets, newest first.
    for (int i = s.n_enemy_bullets - 1; i >= 0; --i) {
      Bullet b = s.enemy_bullets[i];
      if (b.x == sx && b.y == sy) terminal = true;
      const int x = b.x + (b.right ? 1 : -1);
      b.x = static_cast<int8_t>(x);
      s.enemy_bullets[i] = b;
      if (x < 0 || x > 9) {
        remove_at(s.enemy_bullets, s.n_enemy_bullets, i);
      } else if (x == sx && b.y == sy) {
        terminal = true;
      }
    }

    move_enemies(s, false, reward, terminal);

    if (s.enemy_spawn_timer > 0) --s.enemy_spawn_timer;
    if (s.diver_spawn_timer > 0) --s.diver_spawn_timer;
    if (s.shot_timer > 0) --s.shot_timer;

    if (s.oxygen <= 0) terminal = true;
    if (sy > 0) {
      s.oxygen -= 1;
      s.surfaced = 0;
    } else if (!s.surfaced) {
      if (s.diver_count == 0) {
        terminal = true;
      } else {
        reward += surface(s, ramping);
      }
    }
    if (terminal) s.terminal = 1;
    return {reward, s.terminal != 0};
  }

  REDLINE_HD static void observe(const State& s, Grid* out) {
    Grid front, back, friendly, trail, enemy_bullet, fish, subs, oxygen, diver_gauge, divers;
    front.set(s.sub_y, s.sub_x);
    back.set_if_inside(s.sub_y, s.facing_right ? s.sub_x - 1 : s.sub_x + 1);
    for (int i = 0; i < s.n_friendly; ++i) {
      const Bullet b = s.friendly[i];
      friendly.set(b.y, b.x);
    }
    for (int i = 0; i < s.n_enemy_bullets; ++i) {
      const Bullet b = s.enemy_bullets[i];
      enemy_bullet.set(b.y, b.x);
    }
    for (int i = 0; i < s.n_enemies; ++i) {
      const Enemy e = s.enemies[i];
      if (e.flags & kFlagSub) {
        subs.set(e.y, e.x);
      } else {
        fish.set(e.y, e.x);
      }
      trail.set_if_inside(e.y, (e.flags & kFlagRight) ? e.x - 1 : e.x + 1);
    }
    for (int i = 0; i < s.n_divers; ++i) {
      const Diver d = s.divers[i];
      divers.set(d.y, d.x);
      trail.set_if_inside(d.y, d.right ? d.x - 1 : d.x + 1);
    }
    const int oxygen_cells = (s.oxygen > 0 ? s.oxygen : 0) * 10 / kMaxOxygen;
    for (int x = 0; x < oxygen_cells; ++x) oxygen.set(9, x);
    for (int x = 9 - s.diver_count; x < 9 && s.diver_count > 0; ++x) diver_gauge.set(9, x);
    out[0] = front;
    out[1] = back;
    out[2] = friendly;
    out[3] = trail;
    out[4] = enemy_bullet;
    out[5] = fish;
    out[6] = subs;
    out[7] = oxygen;
    out[8] = diver_gauge;
    out[9] = divers;
  }
};

}  // namespace redline::rl
