#include "server/core/preparation_pool.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;

// Holds pool threads inside a task until Release().
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void AwaitWaiters(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return waiting_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

class CountingObserver : public PreparationObserver {
 public:
  void OnPreparationQueued(int queued) override { last_queued = queued; }
  void OnPreparationStarted(double wait_seconds) override {
    EXPECT_GE(wait_seconds, 0);
    ++started;
  }
  void OnPreparationDone(double run_seconds) override {
    EXPECT_GE(run_seconds, 0);
    ++done;
  }
  std::atomic<int> last_queued{-1};
  std::atomic<int> started{0};
  std::atomic<int> done{0};
};

TEST(PreparationPoolTest, RunsEveryTaskOnItsOwnNamedThreads) {
  CountingObserver observer;
  std::atomic<int> ran{0};
  std::atomic<int> on_pool_threads{0};
  {
    PreparationPool pool({.threads = 2, .max_queue = 1000, .observer = &observer});
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(pool.Post([&] {
                        char name[16] = {};
                        pthread_getname_np(pthread_self(), name, sizeof(name));
                        if (std::string(name) == "textgen-prep") ++on_pool_threads;
                        ++ran;
                      })
                      .ok());
    }
    EXPECT_TRUE(pool.WaitUntilIdle(absl::Now() + absl::Seconds(30)));
    EXPECT_EQ(ran.load(), 200);
  }
  EXPECT_EQ(on_pool_threads.load(), 200);
  EXPECT_EQ(observer.started.load(), 200);
  EXPECT_EQ(observer.done.load(), 200);
  EXPECT_EQ(observer.last_queued.load(), 0);
}

TEST(PreparationPoolTest, RefusesBeyondItsQueueNamingTheFlag) {
  Gate gate;
  PreparationPool pool({.threads = 1, .max_queue = 2});
  ASSERT_TRUE(pool.Post([&] { gate.Wait(); }).ok());
  gate.AwaitWaiters(1);  // the one thread is busy; now fill the queue
  ASSERT_TRUE(pool.Post([] {}).ok());
  ASSERT_TRUE(pool.Post([] {}).ok());
  bool refused_task_ran = false;
  const absl::Status refused = pool.Post([&] { refused_task_ran = true; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("--max-queue"));
  EXPECT_FALSE(pool.WaitUntilIdle(absl::Now() + absl::Milliseconds(20))) << "a task is held";
  gate.Release();
  EXPECT_TRUE(pool.WaitUntilIdle(absl::Now() + absl::Seconds(30)));
  EXPECT_FALSE(refused_task_ran);
}

TEST(PreparationPoolTest, DestructionRunsWhatWasAccepted) {
  Gate gate;
  std::atomic<int> ran{0};
  {
    PreparationPool pool({.threads = 1, .max_queue = 100});
    ASSERT_TRUE(pool.Post([&] {
                      gate.Wait();
                      ++ran;
                    })
                    .ok());
    gate.AwaitWaiters(1);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Post([&] { ++ran; }).ok());
    gate.Release();
  }  // the destructor runs the 50 queued tasks before joining
  EXPECT_EQ(ran.load(), 51);
}

TEST(PreparationPoolTest, TasksRunConcurrentlyOnSeveralThreads) {
  Gate gate;
  PreparationPool pool({.threads = 3, .max_queue = 10});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.Post([&] { gate.Wait(); }).ok());
  gate.AwaitWaiters(3);  // would hang if the pool ran them one at a time
  gate.Release();
  EXPECT_TRUE(pool.WaitUntilIdle(absl::Now() + absl::Seconds(30)));
}

}  // namespace
}  // namespace textgen::server
