#include "server/scheduler/session_store.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "model/runtime/kv_cache.h"

namespace textgen::server {
namespace {

constexpr int kBlock = model::KvCache::kBlockTokens;

class SessionStoreTest : public ::testing::Test {
 protected:
  // 1 layer, 1 head, head_dim 4, f32: 512 bytes per block; 8 blocks.
  model::KvCache cache_{{1, 1, 4, 4}, 8 * 512};
  absl::Time t0_ = absl::FromUnixSeconds(1000);

  Session* Add(SessionStore& store, const std::string& id, int tokens, absl::Time when) {
    int evicted = 0;
    absl::StatusOr<Session*> s = store.Create(id, when, &evicted);
    EXPECT_TRUE(s.ok()) << s.status();
    (*s)->kv = KvSequence(&cache_);
    EXPECT_TRUE(cache_.Reserve((*s)->kv.id(), tokens).ok());
    EXPECT_TRUE(cache_.Append((*s)->kv.id(), tokens).ok());
    return *s;
  }
};

TEST_F(SessionStoreTest, FindCreateErase) {
  SessionStore store(4, absl::Minutes(1));
  EXPECT_EQ(store.Find("a"), nullptr);
  Add(store, "a", 20, t0_);
  ASSERT_NE(store.Find("a"), nullptr);
  EXPECT_EQ(cache_.bytes_in_use(), 2 * 512);
  absl::StatusOr<int> freed = store.Erase("a");
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 20);
  EXPECT_EQ(cache_.bytes_in_use(), 0);  // the KV handle freed the blocks
  EXPECT_EQ(store.Erase("a").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SessionStoreTest, BusySessionCannotBeErasedEvictedOrExpired) {
  SessionStore store(1, absl::Seconds(10));
  Session* s = Add(store, "a", 5, t0_);
  s->busy = true;
  EXPECT_EQ(store.Erase("a").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(store.EvictLru(""));
  EXPECT_EQ(store.ExpireIdle(t0_ + absl::Hours(1)), 0);
  int evicted = 0;
  EXPECT_EQ(store.Create("b", t0_, &evicted).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.NextExpiry(), std::nullopt);
}

// A principal at its own limit loses its own least recently used idle session, never another
// principal's; with all of its sessions busy it is refused, naming the limit.
TEST_F(SessionStoreTest, PrincipalLimitEvictsItsOwnSessions) {
  SessionStore store(/*max_sessions=*/8, /*max_per_principal=*/2, absl::Minutes(1));
  int evicted = 0;
  ASSERT_TRUE(store.Create("bob/x", t0_, &evicted, "bob").ok());
  ASSERT_TRUE(store.Create("alice/a", t0_ + absl::Seconds(1), &evicted, "alice").ok());
  ASSERT_TRUE(store.Create("alice/b", t0_ + absl::Seconds(2), &evicted, "alice").ok());
  ASSERT_TRUE(store.Create("alice/c", t0_ + absl::Seconds(3), &evicted, "alice").ok());
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(store.Find("alice/a"), nullptr);  // alice's oldest
  EXPECT_NE(store.Find("bob/x"), nullptr);    // older, but bob's
  store.Find("alice/b")->busy = true;
  store.Find("alice/c")->busy = true;
  absl::StatusOr<Session*> refused = store.Create("alice/d", t0_, &evicted, "alice");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "principal alice keeps 2 sessions, all busy (max_sessions_per_principal 2)");
  EXPECT_TRUE(store.Create("no-principal", t0_, &evicted).ok());  // not counted
}

TEST_F(SessionStoreTest, TtlExpiry) {
  SessionStore store(4, absl::Seconds(10));
  Add(store, "old", 5, t0_);
  Add(store, "new", 5, t0_ + absl::Seconds(5));
  EXPECT_EQ(store.NextExpiry(), t0_ + absl::Seconds(10));
  EXPECT_EQ(store.ExpireIdle(t0_ + absl::Seconds(9)), 0);
  EXPECT_EQ(store.ExpireIdle(t0_ + absl::Seconds(10)), 1);
  EXPECT_EQ(store.Find("old"), nullptr);
  EXPECT_NE(store.Find("new"), nullptr);
}

TEST_F(SessionStoreTest, LruEvictionSkipsKeptAndBusy) {
  SessionStore store(8, absl::Hours(1));
  Add(store, "a", kBlock, t0_);
  Session* b = Add(store, "b", kBlock, t0_ + absl::Seconds(1));
  Add(store, "c", kBlock, t0_ + absl::Seconds(2));
  b->busy = true;
  EXPECT_EQ(store.IdleBytes(cache_, /*keep=*/"c"), 512);  // only "a"
  EXPECT_TRUE(store.EvictLru(/*keep=*/"a"));              // "b" busy, "a" kept -> "c"
  EXPECT_EQ(store.Find("c"), nullptr);
  EXPECT_TRUE(store.EvictLru(""));
  EXPECT_EQ(store.Find("a"), nullptr);
  EXPECT_FALSE(store.EvictLru(""));
  EXPECT_EQ(cache_.bytes_in_use(), 512);
}

TEST_F(SessionStoreTest, MaxSessionsEvictsLeastRecentlyUsed) {
  SessionStore store(2, absl::Hours(1));
  Add(store, "a", 1, t0_ + absl::Seconds(2));
  Add(store, "b", 1, t0_ + absl::Seconds(1));
  int evicted = 0;
  ASSERT_TRUE(store.Create("c", t0_ + absl::Seconds(3), &evicted).ok());
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(store.Find("b"), nullptr);
  EXPECT_NE(store.Find("a"), nullptr);
  EXPECT_EQ(store.size(), 2);
}

}  // namespace
}  // namespace textgen::server
