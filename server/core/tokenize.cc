#include "server/core/tokenize.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

// Far above any model's context; the bound keeps one request's work small.
constexpr size_t kMaxTokenizeBytes = 1 << 20;
constexpr int kMaxDetokenizeIds = 1 << 18;

}  // namespace

absl::Status Tokenize(const model::Tokenizer& tokenizer, bool default_add_bos,
                      const v1::TokenizeRequest& request, v1::TokenizeResponse& response) {
  const std::string& text = request.text();
  if (text.size() > kMaxTokenizeBytes) {
    return InvalidField("text", absl::StrCat("is ", text.size(), " bytes; at most ",
                                             kMaxTokenizeBytes, " are allowed"));
  }
  if (absl::Status status = model::CheckUtf8(text, "text"); !status.ok()) return status;
  const bool add_bos = request.has_add_bos() ? request.add_bos() : default_add_bos;
  const std::vector<int> ids = request.parse_special()
                                   ? tokenizer.EncodeWithSpecialTokens(text, add_bos, {})
                                   : tokenizer.Encode(text, add_bos);
  for (int id : ids) {
    response.add_ids(id);
    response.add_tokens(model::SanitizeUtf8(tokenizer.TokenText(id)));
  }
  return absl::OkStatus();
}

absl::Status Detokenize(const model::Tokenizer& tokenizer, const v1::DetokenizeRequest& request,
                        v1::DetokenizeResponse& response) {
  if (request.ids_size() > kMaxDetokenizeIds) {
    return InvalidField("ids", absl::StrCat("has ", request.ids_size(), " entries; at most ",
                                            kMaxDetokenizeIds, " are allowed"));
  }
  if (absl::Status status = ValidateTokenIds(request.ids(), tokenizer.vocab_size(), "ids");
      !status.ok()) {
    return status;
  }
  const std::string text = tokenizer.Decode(
      std::vector<int>(request.ids().begin(), request.ids().end()), request.render_control());
  // Ids may split a UTF-8 character; a proto3 string must stay valid.
  response.set_text(model::SanitizeUtf8(text));
  return absl::OkStatus();
}

}  // namespace textgen::server
