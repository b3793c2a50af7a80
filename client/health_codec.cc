#include "client/health_codec.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace textgen::client {

using google::protobuf::internal::WireFormatLite;

std::string EncodeHealthCheckRequest(absl::string_view service) {
  std::string out;
  if (service.empty()) return out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    coded.WriteVarint32(static_cast<uint32_t>(service.size()));
    coded.WriteRaw(service.data(), static_cast<int>(service.size()));
  }
  return out;
}

absl::StatusOr<int> DecodeHealthCheckResponse(absl::string_view bytes) {
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  int status = 0;
  while (uint32_t tag = coded.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == 1 &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      uint32_t value;
      if (!coded.ReadVarint32(&value)) break;
      status = static_cast<int>(value);
    } else if (!WireFormatLite::SkipField(&coded, tag)) {
      return absl::InvalidArgumentError("malformed HealthCheckResponse");
    }
  }
  if (!coded.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed HealthCheckResponse (", bytes.size(), " bytes)"));
  }
  return status;
}

std::string ServingStatusName(int status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return absl::StrCat("STATUS_", status);
  }
}

}  // namespace textgen::client
