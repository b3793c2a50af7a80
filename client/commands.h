#pragma once

// Entry points of the textgen subcommands, one per file (<name>_command.cc). Each takes the
// arguments after the subcommand name and returns the process exit code (see command_common.h).

#include <string>
#include <vector>

#include "client/command_common.h"

namespace textgen::client {

int RunGenerate(const std::vector<std::string>& args, CommandIo& io);
int RunChat(const std::vector<std::string>& args, CommandIo& io);
int RunTokenize(const std::vector<std::string>& args, CommandIo& io);
int RunDetokenize(const std::vector<std::string>& args, CommandIo& io);
int RunEmbed(const std::vector<std::string>& args, CommandIo& io);
int RunInfo(const std::vector<std::string>& args, CommandIo& io);
int RunHealth(const std::vector<std::string>& args, CommandIo& io);
int RunDeleteSession(const std::vector<std::string>& args, CommandIo& io);
int RunBench(const std::vector<std::string>& args, CommandIo& io);

// Dispatches argv-style `args` (args[0] = subcommand) to the right Run* function and handles
// `textgen --help`, no command and unknown commands.
int RunTextgen(const std::vector<std::string>& args, CommandIo& io);

}  // namespace textgen::client
