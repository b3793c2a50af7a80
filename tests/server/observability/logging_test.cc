// Log levels and the asynchronous logger.
#include "server/observability/logging.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(LoggingTest, ParsesLevels) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_THAT(std::string(ParseLogLevel("loud").status().message()),
              HasSubstr("debug, info, warning, error"));
}

TEST(LoggingTest, WritesTimestampedLinesAtOrAboveTheLevel) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    Logger logger(LogLevel::kInfo, file);
    logger.Debug("hidden");
    logger.Info("hello");
    logger.Error("bad");
  }  // the destructor flushes the queue
  std::rewind(file);
  std::string contents;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), file) != nullptr) contents += buffer;
  std::fclose(file);
  EXPECT_THAT(contents, Not(HasSubstr("hidden")));
  EXPECT_THAT(contents, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z I hello\n"
                                     "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z E bad\n"));
}

}  // namespace
}  // namespace textgen::server
