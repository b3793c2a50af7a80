#pragma once

#include <string>

namespace textgen::test_support {

// A certificate and its private key, PEM.
struct PemPair {
  std::string cert;
  std::string key;
};

// A throwaway PKI made in memory for TLS tests (EC P-256, valid for a day): a CA, a server
// certificate for localhost / 127.0.0.1, two client certificates it signed, and one client
// certificate from a CA nobody trusts.
struct TestPki {
  std::string ca_cert;
  PemPair server;
  PemPair alice;     // subject CN=alice,O=textgen test
  PemPair bob;       // subject CN=bob,O=textgen test
  PemPair stranger;  // subject CN=mallory, signed by another CA
};

const TestPki& GetTestPki();  // made once per process

}  // namespace textgen::test_support
