#include "model/chat/harmony_reply_parser.h"

#include <algorithm>

namespace textgen::model {
namespace {

constexpr std::string_view kStart = HarmonyTags::kStart;
constexpr std::string_view kChannel = HarmonyTags::kChannel;
constexpr std::string_view kMessage = HarmonyTags::kMessage;
constexpr std::string_view kEnd = HarmonyTags::kEnd;
// A header longer than this is not one (the model is writing text without the format).
constexpr size_t kMaxHeaderBytes = 512;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The word at the start of `text` (up to whitespace or the next tag).
std::string_view Word(std::string_view text) {
  size_t end = 0;
  while (end < text.size() && !IsSpace(text[end]) && text[end] != '<') ++end;
  return text.substr(0, end);
}

}  // namespace

HarmonyReplyParser::HarmonyReplyParser(const ChatOutputOptions& options, uint64_t id_state)
    : options_(options), id_state_(id_state) {}

ChatOutputDelta HarmonyReplyParser::Feed(std::string_view text) {
  pending_.append(text);
  ChatOutputDelta out;
  Process(out, /*final=*/false);
  return out;
}

ChatOutputDelta HarmonyReplyParser::Finish() {
  ChatOutputDelta out;
  Process(out, /*final=*/true);
  return out;
}

bool HarmonyReplyParser::CouldBeHeader(std::string_view text) {
  size_t first = 0;
  while (first < text.size() && IsSpace(text[first])) ++first;
  const std::string_view rest = text.substr(first);
  if (rest.empty()) return true;
  // A header opens with a tag, or (right after the prompt's "<|start|>assistant") with the
  // recipient.
  for (std::string_view opening : {kStart, kChannel, std::string_view("to=")}) {
    const size_t n = std::min(rest.size(), opening.size());
    if (rest.substr(0, n) == opening.substr(0, n)) return true;
  }
  return false;
}

void HarmonyReplyParser::StartMessage(std::string_view header, ChatOutputDelta& out) {
  std::string_view channel, recipient;
  if (const size_t at = header.find(kChannel); at != std::string_view::npos) {
    channel = Word(header.substr(at + kChannel.size()));
  }
  // " to=functions.NAME" before or after the channel.
  for (size_t at = header.find("to="); at != std::string_view::npos;
       at = header.find("to=", at + 1)) {
    if (at == 0 || IsSpace(header[at - 1]) || header[at - 1] == '>') {
      recipient = Word(header.substr(at + 3));
      break;
    }
  }
  if (recipient.empty()) {
    sink_ = channel == "analysis" ? Sink::kReasoning : Sink::kContent;
    return;
  }
  constexpr std::string_view kFunctions = "functions.";
  const std::string name(recipient.starts_with(kFunctions) ? recipient.substr(kFunctions.size())
                                                           : recipient);
  const bool declared = options_.parse_tool_calls &&
                        std::find(options_.tool_names.begin(), options_.tool_names.end(), name) !=
                            options_.tool_names.end();
  if (!declared) {
    ++malformed_;
    sink_ = Sink::kDropped;
    return;
  }
  sink_ = Sink::kCall;
  calls_.push_back({NextToolCallId(options_.format, id_state_), name, ""});
  out.tool_calls.push_back(
      {static_cast<int>(calls_.size()) - 1, calls_.back().id, calls_.back().name, ""});
}

void HarmonyReplyParser::Emit(std::string_view text, ChatOutputDelta& out) {
  if (text.empty()) return;
  switch (sink_) {
    case Sink::kReasoning:
      reasoning_.append(text);
      out.reasoning.append(text);
      break;
    case Sink::kContent:
      content_.append(text);
      out.content.append(text);
      break;
    case Sink::kCall:
      calls_.back().arguments.append(text);
      out.tool_calls.push_back({static_cast<int>(calls_.size()) - 1, "", "", std::string(text)});
      break;
    case Sink::kDropped:
      break;
  }
}

void HarmonyReplyParser::Process(ChatOutputDelta& out, bool final) {
  while (true) {
    switch (mode_) {
      case Mode::kPlain:
        Emit(pending_, out);
        pending_.clear();
        return;
      case Mode::kHeader: {
        // A header starts like one and ends with <|message|> within kMaxHeaderBytes. Each test
        // reads only the text up to where it decides, so the reply is read the same whatever
        // pieces it comes in.
        const size_t at = pending_.find(kMessage);
        const bool header =
            CouldBeHeader(pending_) &&
            (at != std::string::npos ? at <= kMaxHeaderBytes
                                     : pending_.size() < kMaxHeaderBytes + kMessage.size());
        if (!header) {
          // Text outside the format (from the start, or after a message): content.
          sink_ = Sink::kContent;
          mode_ = Mode::kPlain;
          continue;
        }
        if (at != std::string::npos) {
          StartMessage(std::string_view(pending_).substr(0, at), out);
          pending_.erase(0, at + kMessage.size());
          mode_ = Mode::kBody;
          continue;
        }
        // A header cut off by the end of the reply carries no text.
        if (final) pending_.clear();
        return;
      }
      case Mode::kBody: {
        // The message ends at <|end|> (or, if the model leaves that out, the next <|start|>).
        const size_t end = pending_.find(kEnd);
        const size_t start = pending_.find(kStart);
        const size_t stop = std::min(end, start);
        if (stop != std::string::npos) {
          Emit(std::string_view(pending_).substr(0, stop), out);
          pending_.erase(0, stop == end ? end + kEnd.size() : start);
          mode_ = Mode::kHeader;
          continue;
        }
        const size_t settled =
            final ? pending_.size()
                  : std::min(HoldBackFrom(pending_, kEnd), HoldBackFrom(pending_, kStart));
        Emit(std::string_view(pending_).substr(0, settled), out);
        pending_.erase(0, settled);
        return;
      }
    }
  }
}

}  // namespace textgen::model
