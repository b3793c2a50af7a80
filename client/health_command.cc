// textgen health: grpc.health.v1.Health/Check.
//
// The health messages are tiny, so instead of generating stubs from health.proto this sends
// the request through grpc::GenericStub and decodes the reply by hand:
//   HealthCheckRequest  { string service = 1; }          (empty service = the whole server)
//   HealthCheckResponse { ServingStatus status = 1; }    (UNKNOWN 0, SERVING 1, NOT_SERVING 2,
//                                                         SERVICE_UNKNOWN 3)

#include <future>
#include <ostream>

#include "client/commands.h"
#include "client/health_codec.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace textgen::client {

constexpr CommandUsage kHealthUsage = {
    "health", "--addr HOST:PORT [--service NAME]",
    "Calls grpc.health.v1.Health/Check and prints the serving status.\n"
    "Exits 0 when SERVING, 1 otherwise (including RPC errors)."};

int RunHealth(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  std::string service;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  specs.push_back(
      StringFlag("service", &service, "NAME", "service to ask about (default: server)"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kHealthUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (!parsed->positional.empty()) {
    return UsageError(kHealthUsage, "unexpected argument '" + parsed->positional[0] + "'", io);
  }
  if (!connection.timeout) connection.timeout = absl::Seconds(10);  // a probe must not hang

  std::string request_bytes = EncodeHealthCheckRequest(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::GenericStub stub(MakeChannel(connection));
  grpc::ClientContext context;
  ConfigureCall(connection, &context);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status status = done.get_future().get();
  if (!status.ok()) return RpcError(kHealthUsage, "Health/Check", status, io);

  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  absl::StatusOr<int> serving = DecodeHealthCheckResponse(bytes);
  if (!serving.ok()) {
    io.err << "textgen health: " << serving.status().message() << "\n";
    return kExitRpcError;
  }
  io.out << ServingStatusName(*serving) << "\n";
  return *serving == kServingStatusServing ? kExitOk : kExitRpcError;
}

}  // namespace textgen::client
