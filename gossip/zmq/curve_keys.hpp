#pragma once
// CURVE keys of the ZeroMQ transport (docs/security.md). A keypair is two 40-character Z85 strings
// (ZeroMQ's text form of a 32-byte Curve25519 key). On disk, in a keys directory:
//   node-<r>.key   rank r's secret key, mode 0600: only rank r's host needs it
//   node-<r>.pub   rank r's public key: every host needs every rank's
// Each file holds the key on one line, after optional '#' comment lines.
#include <filesystem>
#include <string>
#include <string_view>

namespace qgossip {

struct curve_keypair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// True when this libzmq can do CURVE (built with libsodium or its own tweetnacl).
[[nodiscard]] bool curve_available();
// A fresh keypair from the system's random source. Throws config_error when CURVE is unavailable.
[[nodiscard]] curve_keypair generate_curve_keypair();
// The public key that goes with a secret key (both Z85). Throws config_error for a malformed one.
[[nodiscard]] std::string curve_public_key(const std::string& secret_key);
// True for 40 Z85 characters (which always decode to 32 bytes).
[[nodiscard]] bool is_curve_key(std::string_view z85);

[[nodiscard]] std::filesystem::path secret_key_path(const std::filesystem::path& dir, int rank);  // node-<r>.key
[[nodiscard]] std::filesystem::path public_key_path(const std::filesystem::path& dir, int rank);  // node-<r>.pub

// Writes node-<r>.key (mode 0600) and node-<r>.pub (0644) into dir, creating dir (0700) when
// missing. Each file is written whole under a temporary name, then renamed over the old one.
// Throws config_error naming the file that could not be written.
void write_curve_keypair(const std::filesystem::path& dir, int rank, const curve_keypair& keys);
// Writes node-<r>.pub alone (as write_curve_keypair does).
void write_curve_public_key(const std::filesystem::path& dir, int rank, const std::string& public_key);

// Reads a secret key file. Throws config_error naming the file when it is missing or unreadable,
// when group or others may read or write it ("chmod 600 FILE"), or when it does not hold exactly
// one Z85 key.
[[nodiscard]] std::string read_curve_secret_key(const std::filesystem::path& file);
// Reads a public key file: config_error as above (no mode check: public keys are public).
[[nodiscard]] std::string read_curve_public_key(const std::filesystem::path& file);

}  // namespace qgossip
