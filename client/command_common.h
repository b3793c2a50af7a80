#pragma once

// What every textgen subcommand shares: its I/O streams, exit codes, connection flags and
// error reporting. Commands write only to the streams in CommandIo so tests can capture them.

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/flag_parser.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace textgen::client {

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;  // the server answered with an error (or was unreachable)
inline constexpr int kExitUsage = 2;     // bad command line; nothing was sent

// The streams a command uses. `interactive` is true when `in` is a terminal (chat prompts).
struct CommandIo {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  bool interactive = false;
};

// A subcommand's entry point: `args` excludes the program and subcommand names.
using CommandFn = int (*)(const std::vector<std::string>& args, CommandIo& io);

// Help text pieces of one subcommand.
struct CommandUsage {
  absl::string_view name;         // "generate"
  absl::string_view synopsis;     // "--addr HOST:PORT [flags] [PROMPT | -]"
  absl::string_view description;  // one paragraph
};

// --addr, --timeout, the API key and TLS, present on every command that talks to a server.
// Files are read while the flags are parsed, so a bad path is a usage error naming the flag.
struct ConnectionFlags {
  std::string addr = "localhost:50051";
  std::optional<absl::Duration> timeout;  // per RPC; none = no deadline
  std::string api_key;                    // --api-key-file, else $TEXTGEN_API_KEY; empty = none
  bool tls = false;                       // --tls, or implied by any --tls-* file
  std::string tls_ca_pem;                 // --tls-ca: roots to trust (empty: the system's)
  std::string tls_cert_pem;               // --tls-cert / --tls-key: client certificate (mTLS)
  std::string tls_key_pem;
};

// Appends --addr, --timeout, --api-key-file, --tls, --tls-ca, --tls-cert and --tls-key specs
// writing into `flags`, whose api_key starts as $TEXTGEN_API_KEY.
void AddConnectionFlags(ConnectionFlags* flags, std::vector<FlagSpec>* specs);

// A channel to flags.addr: TLS when asked for (with the client certificate, if any), else plain;
// UNAVAILABLE is retried (retry_policy.h).
std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionFlags& flags);

// Per call: the deadline from --timeout, "authorization: Bearer KEY" when there is a key, and
// "x-session-id: ID" for a call on a session, the key load balancers keep a session's turns on
// one replica by (the server refuses a value that differs from the request's session_id).
void ConfigureCall(const ConnectionFlags& flags, grpc::ClientContext* context,
                   absl::string_view session_id = {});

// Parses flags; on --help prints usage to io.out and sets *exit_code = 0, on a bad command line
// prints the error to io.err and sets *exit_code = kExitUsage. Returns nullopt in both cases.
std::optional<ParsedArgs> ParseCommandLine(const std::vector<std::string>& args,
                                           const std::vector<FlagSpec>& specs,
                                           const CommandUsage& usage, CommandIo& io,
                                           int* exit_code);

// Prints "textgen <command>: <message>" and a --help hint to io.err; returns kExitUsage.
int UsageError(const CommandUsage& usage, absl::string_view message, CommandIo& io);

// Prints "textgen <command>: <message>" to io.err for input the command cannot send (not UTF-8,
// too large); returns kExitUsage. No --help hint: the command line itself was fine.
int InputError(const CommandUsage& usage, absl::string_view message, CommandIo& io);

// "OK", "CANCELLED", ..., "UNAUTHENTICATED"; "CODE_<n>" for anything else.
std::string StatusCodeName(grpc::StatusCode code);

// Prints "textgen <command>: <rpc> failed: <CODE>: <message>" to io.err; returns kExitRpcError.
int RpcError(const CommandUsage& usage, absl::string_view rpc, const grpc::Status& status,
             CommandIo& io);

}  // namespace textgen::client
