#include "server/http/openai/response_store.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server::http {
namespace {

ResponseStore::Entry MakeEntry(const std::string& text, size_t padding = 0) {
  ResponseStore::Entry entry;
  entry.response_json = std::string(padding, 'x');
  v1::ChatMessage m;
  m.set_role("user");
  m.set_content(text);
  entry.conversation.push_back(m);
  return entry;
}

class ResponseStoreTest : public ::testing::Test {
 protected:
  ResponseStore MakeStore(size_t max_bytes, absl::Duration ttl) {
    return ResponseStore({.max_bytes = max_bytes, .ttl = ttl}, [this] { return now_; });
  }
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(ResponseStoreTest, AnEntryBelongsToItsPrincipal) {
  ResponseStore store = MakeStore(1 << 20, absl::Hours(1));
  store.Put("alice", "resp_1", MakeEntry("hi"));
  absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> found = store.Get("alice", "resp_1");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->conversation[0].content(), "hi");
  // Another principal cannot see it, nor delete it.
  absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> other = store.Get("bob", "resp_1");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(other.status().message(), ::testing::HasSubstr("resp_1"));
  EXPECT_FALSE(store.Delete("bob", "resp_1"));
  EXPECT_TRUE(store.Delete("alice", "resp_1"));
  EXPECT_FALSE(store.Get("alice", "resp_1").ok());
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST_F(ResponseStoreTest, EntriesExpireAfterTheTtl) {
  ResponseStore store = MakeStore(1 << 20, absl::Minutes(10));
  store.Put("", "resp_old", MakeEntry("old"));
  now_ += absl::Minutes(6);
  store.Put("", "resp_new", MakeEntry("new"));
  now_ += absl::Minutes(5);  // 11 min after the first, 5 after the second
  EXPECT_EQ(store.Get("", "resp_old").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("", "resp_new").ok());
  EXPECT_EQ(store.size(), 1u);
}

TEST_F(ResponseStoreTest, TheByteBudgetEvictsOldestFirst) {
  ResponseStore store = MakeStore(10'000, absl::Hours(1));
  for (int i = 0; i < 10; ++i) store.Put("", "resp_" + std::to_string(i), MakeEntry("m", 2'000));
  EXPECT_LE(store.bytes(), 10'000u);
  EXPECT_GE(store.size(), 3u);
  EXPECT_FALSE(store.Get("", "resp_0").ok());
  EXPECT_TRUE(store.Get("", "resp_9").ok());
  // An entry over the whole budget is not kept (and evicts nothing).
  const size_t kept = store.size();
  store.Put("", "resp_huge", MakeEntry("m", 20'000));
  EXPECT_FALSE(store.Get("", "resp_huge").ok());
  EXPECT_EQ(store.size(), kept);
  // Replacing an id keeps one entry.
  store.Put("", "resp_9", MakeEntry("again"));
  EXPECT_EQ((*store.Get("", "resp_9"))->conversation[0].content(), "again");
  EXPECT_EQ(store.size(), kept);
}

TEST_F(ResponseStoreTest, AnEntryHandedOutOutlivesItsEviction) {
  ResponseStore store = MakeStore(1 << 20, absl::Hours(1));
  store.Put("", "resp_1", MakeEntry("kept"));
  std::shared_ptr<const ResponseStore::Entry> held = *store.Get("", "resp_1");
  EXPECT_TRUE(store.Delete("", "resp_1"));
  EXPECT_EQ(held->conversation[0].content(), "kept");
}

}  // namespace
}  // namespace textgen::server::http
