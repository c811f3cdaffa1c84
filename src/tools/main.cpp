// The redline command-line program: dispatches to a subcommand.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "redline/core/error.h"
#include "tools/commands.h"

namespace {

constexpr const char* kUsage =
    "redline: train deep RL agents and deep networks on NVIDIA GPUs, AMD GPUs and the CPU\n"
    "\n"
    "usage: redline COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  doctor    what hardware and software this machine has and whether redline can use it\n"
    "  play      run a random (or trained) policy on an environment and report returns\n"
    "\n"
    "Run 'redline COMMAND --help' for a command's options.\n";

struct Command {
  const char* name;
  int (*run)(int, char**);
};

constexpr Command kCommands[] = {
    {"doctor", redline::tools::run_doctor},
    {"play", redline::tools::run_play},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  for (const Command& command : kCommands) {
    if (name == command.name) {
      try {
        return command.run(argc - 1, argv + 1);
      } catch (const redline::Error& e) {
        std::fprintf(stderr, "redline %s: %s\n", command.name, e.what());
        return 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "redline %s: internal error: %s\n", command.name, e.what());
        return 70;
      }
    }
  }
  std::fprintf(stderr, "redline: unknown command '%s' (expected one of: doctor, play)\n", argv[1]);
  return 2;
}
