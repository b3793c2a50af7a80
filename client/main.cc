// textgen: command-line client of the textgen server. See docs/cli.md.

#include <unistd.h>

#include <iostream>

#include "client/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  textgen::client::CommandIo io{std::cin, std::cout, std::cerr,
                                /*interactive=*/isatty(STDIN_FILENO) != 0};
  return textgen::client::RunTextgen(args, io);
}
