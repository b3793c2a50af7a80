#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace textgen::test_support {

// Runs the real textgen-server binary for end-to-end tests: starts it with the given flags,
// reads its stderr (echoed to the test's stderr) until the startup line reports grpc_port=,
// and stops it with SIGTERM; Start again restarts it. Not thread-safe; one per test suite.
class ServerProcess {
 public:
  ~ServerProcess() { Stop(); }

  // Starts `binary args...`; waits up to `timeout` for the startup line. False on failure
  // (the server's own error lines are on stderr).
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             std::chrono::seconds timeout) {
    Stop();  // a restart: the last process is gone and its lines read
    {
      std::lock_guard<std::mutex> lock(mu_);
      port_ = 0;
      eof_ = false;
      log_.clear();
    }
    int fds[2];
    if (pipe(fds) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> argv_strings = {binary};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const int error = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (error != 0) {
      close(fds[0]);
      pid_ = -1;
      return false;
    }
    reader_ = std::thread([this, fd = fds[0]] { ReadLines(fd); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return port_ > 0 || eof_; });
    return port_ > 0;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then waits for exit; returns the exit status (-1 if it had to be killed).
  int Stop(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    if (pid_ <= 0) return exit_status_;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    if (reader_.joinable()) reader_.join();
    exit_status_ = status == -1 ? -1 : (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return exit_status_;
  }

  std::string log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  void ReadLines(int fd) {
    std::string line;
    char c;
    while (read(fd, &c, 1) == 1) {
      if (c != '\n') {
        line += c;
        continue;
      }
      std::fprintf(stderr, "[server] %s\n", line.c_str());
      std::lock_guard<std::mutex> lock(mu_);
      log_ += line + "\n";
      if (const size_t at = line.find("grpc_port="); at != std::string::npos && port_ == 0) {
        port_ = std::atoi(line.c_str() + at + 10);
        cv_.notify_all();
      }
      line.clear();
    }
    close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  int port_ = 0;
  bool eof_ = false;
  std::string log_;
};

}  // namespace textgen::test_support
