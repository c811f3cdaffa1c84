// The subcommands of the redline program; each parses its own arguments and returns an exit code.
#pragma once

namespace redline::tools {

// argv[0] is the subcommand name; the rest are its arguments.
int run_doctor(int argc, char** argv);
int run_play(int argc, char** argv);

}  // namespace redline::tools
