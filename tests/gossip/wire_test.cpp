// The wire header, as a specification: the golden bytes of docs/wire.md, then one case per way a
// header can be wrong, each saying which check rejects it and what the message names.
#include "gossip/wire.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

using namespace qgossip;

namespace {

std::vector<std::byte> from_hex(const char* hex) {
  std::vector<std::byte> out;
  for (const char* p = hex; *p;) {
    if (*p == ' ' || *p == '\n') {
      ++p;
      continue;
    }
    out.push_back(std::byte(static_cast<unsigned char>(std::stoul(std::string(p, 2), nullptr, 16))));
    p += 2;
  }
  return out;
}

// docs/wire.md, "Golden bytes": this header and payload, byte for byte.
const std::vector<std::byte> kGoldenHeader = from_hex(
    "51 47 53 50 08 00 01 00 ef cd ab 89 67 45 23 01"
    "03 00 00 00 02 00 00 00 04 00 00 00 00 00 00 00"
    "11 00 00 00 00 00 00 00 10 00 00 00 00 00 00 00"
    "ef be ad de b4 12 34 3f");
// docs/wire.md, "Golden bytes": rank 3's finished message after its last round, 17.
const std::vector<std::byte> kGoldenFinished = from_hex(
    "51 47 53 50 08 00 04 00 ef cd ab 89 67 45 23 01"
    "03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "11 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "00 00 00 00 88 f1 77 b1");
// docs/wire.md, "Golden bytes": a neighbour's acknowledgement, as rank 3, of a finished message of 17.
const std::vector<std::byte> kGoldenFinishedAck = from_hex(
    "51 47 53 50 08 00 05 00 ef cd ab 89 67 45 23 01"
    "03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "11 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "00 00 00 00 c1 07 8b 50");
// docs/wire.md, "Golden bytes": rank 3 asking to rejoin (payload "join 41\n"), its model 4 values.
const std::vector<std::byte> kGoldenJoin = from_hex(
    "51 47 53 50 08 00 06 00 ef cd ab 89 67 45 23 01"
    "03 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00"
    "29 00 00 00 00 00 00 00 08 00 00 00 00 00 00 00"
    "00 00 00 00 b7 96 c3 ba");
// docs/wire.md, "Golden bytes": rank 3's state (its 4-value model, one chunk) for an edge restarting at 17.
const std::vector<std::byte> kGoldenJoinState = from_hex(
    "51 47 53 50 08 00 07 00 ef cd ab 89 67 45 23 01"
    "03 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00"
    "11 00 00 00 00 00 00 00 28 00 00 00 00 00 00 00"
    "00 00 00 00 e7 7b f1 2f");
// Its payload: the chunk header (docs/wire.md, "Chunked states": the state's 16 bytes, from byte 0,
// their hash64 0xce46fbe03f046727), then the 4 values.
const std::vector<std::byte> kGoldenJoinStatePayload = from_hex(
    "10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "27 67 04 3f e0 fb 46 ce 00 00 80 3f 00 00 00 c0"
    "00 00 00 3f 00 00 00 00");
const std::vector<std::byte> kGoldenPayload = from_hex("00 00 80 3f 00 00 00 c0 00 00 00 3f 00 00 00 00");

wire_header golden() {
  wire_header h;
  h.kind = message_kind::train;
  h.run_id = 0x0123456789ABCDEFull;
  h.sender = 3;
  h.count = 4;
  h.iteration = 17;
  h.codec = 2;
  h.codec_tag = 0xDEADBEEF;
  h.payload_bytes = 16;
  return h;
}

// The receiver of the golden message: rank 3 is one of its neighbours, it expects this run, and
// for train messages codec 2 with tag 0xDEADBEEF and 4 elements.
struct receiver {
  std::array<int, 2> neighbours = {1, 3};
  wire_expectations expect;
  receiver() {
    expect.run_id = 0x0123456789ABCDEFull;
    expect.senders = neighbours;
    expect.max_payload_bytes = 1024;
    expect.train = codec_expectation{2, 0xDEADBEEF, 4};
    expect.probe = codec_expectation{1, 0, 4};
  }
};

struct verdict {
  status st;
  wire_check check = wire_check::ok;
  wire_header header;
  bool names(const std::string& text) const { return st.message().find(text) != std::string::npos; }
};

std::array<std::byte, kWireHeaderBytes> encode(const wire_header& h, std::span<const std::byte> payload) {
  std::array<std::byte, kWireHeaderBytes> out;
  encode_header(h, payload, out);
  return out;
}

verdict parse(std::span<const std::byte> header, std::span<const std::byte> payload, const receiver& r = {}) {
  verdict v;
  v.st = parse_header(header, payload, r.expect, v.header, &v.check);
  return v;
}

// Encodes a header that differs from the golden one by `change`, with a valid checksum, so only
// the changed field can be what the receiver objects to.
template <class F>
verdict parse_changed(F change) {
  wire_header h = golden();
  change(h);
  auto bytes = encode(h, kGoldenPayload);
  return parse(bytes, kGoldenPayload);
}

void flip_bit(std::span<std::byte> s, std::size_t bit) { s[bit / 8] ^= std::byte(1u << (bit % 8)); }

}  // namespace

TEST_CASE("wire: the header is 56 bytes and the version is 8") {
  CHECK(kWireHeaderBytes == 56);
  CHECK(kWireVersion == 8);  // changing the layout? bump this, then update docs/wire.md and the golden bytes
  CHECK(static_cast<int>(message_kind::train) == 1);
  CHECK(static_cast<int>(message_kind::probe) == 2);
  CHECK(static_cast<int>(message_kind::notice) == 3);
  CHECK(static_cast<int>(message_kind::finished) == 4);
  CHECK(static_cast<int>(message_kind::finished_ack) == 5);
  CHECK(static_cast<int>(message_kind::join) == 6);
  CHECK(static_cast<int>(message_kind::join_state) == 7);
}

TEST_CASE("wire: encode_header writes the golden bytes of docs/wire.md") {
  auto bytes = encode(golden(), kGoldenPayload);
  CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == kGoldenHeader);
}

TEST_CASE("wire: parse_header reads the golden bytes back field by field") {
  verdict v = parse(kGoldenHeader, kGoldenPayload);
  REQUIRE(v.st.is_ok());
  CHECK(v.check == wire_check::ok);
  CHECK(v.header.version == 8);
  CHECK(v.header.kind == message_kind::train);
  CHECK(v.header.run_id == 0x0123456789ABCDEFull);
  CHECK(v.header.sender == 3);
  CHECK(v.header.count == 4);
  CHECK(v.header.iteration == 17);
  CHECK(v.header.codec == 2);
  CHECK(v.header.skipped == 0);
  CHECK(v.header.codec_tag == 0xDEADBEEF);
  CHECK(v.header.payload_bytes == 16);
  CHECK(v.header.crc32c == 0x3F3412B4u);
}

TEST_CASE("wire: every field round-trips at its extreme values") {
  wire_header h;
  h.kind = message_kind::probe;
  h.run_id = ~0ull;
  h.sender = 0;
  h.count = kWireMaxCount;
  h.iteration = ~0ull;
  h.codec = 0xFFFF;
  h.codec_tag = ~0u;
  h.payload_bytes = 0;
  receiver r;
  r.neighbours = {0, 5};
  r.expect.senders = r.neighbours;
  r.expect.run_id = ~0ull;
  r.expect.max_payload_bytes = ~0ull;
  r.expect.probe = codec_expectation{0xFFFF, ~0u, kWireMaxCount};
  auto bytes = encode(h, {});
  verdict v = parse(bytes, {}, r);
  REQUIRE(v.st.is_ok());
  CHECK(v.header.kind == message_kind::probe);
  CHECK(v.header.run_id == ~0ull);
  CHECK(v.header.count == kWireMaxCount);
  CHECK(v.header.iteration == ~0ull);
  CHECK(v.header.codec == 0xFFFF);
  CHECK(v.header.codec_tag == ~0u);
}

TEST_CASE("wire: a header that is not exactly 56 bytes is truncated") {
  for (std::size_t size : {0, 1, 5, 6, 48, 55, 57, 112}) {
    CAPTURE(size);
    std::vector<std::byte> h(kGoldenHeader);
    h.resize(size);
    verdict v = parse(h, kGoldenPayload);
    CHECK(v.st.code() == errc::corrupt);
    CHECK(v.check == wire_check::truncated);
    CHECK(v.names("header: expected 56 bytes, received " + std::to_string(size)));
  }
}

TEST_CASE("wire: bytes that do not start with QGSP are not ours (magic)") {
  auto h = kGoldenHeader;
  std::memcpy(h.data(), "GET ", 4);
  verdict v = parse(h, kGoldenPayload);
  CHECK(v.check == wire_check::magic);
  CHECK(v.names("magic: expected \"QGSP\", received \"GET \""));
  h[0] = std::byte{0};  // binary junk shows as hex
  CHECK(parse(h, kGoldenPayload).names("received bytes 00 45 54 20"));
}

TEST_CASE("wire: another wire version is rejected before its layout is trusted") {
  verdict v = parse_changed([](wire_header& h) { h.version = 1; });
  CHECK(v.check == wire_check::version);
  CHECK(v.names("version: expected 8, received 1"));
}

TEST_CASE("wire: a node of the previous format (version 7, a 48-byte header) is refused by its version") {
  // Version 7's golden train message: magic, version 7, and a 48-byte header.
  const std::vector<std::byte> v7 = from_hex(
      "51 47 53 50 07 00 01 00 ef cd ab 89 67 45 23 01"
      "03 00 00 00 04 00 00 00 11 00 00 00 00 00 00 00"
      "02 00 00 00 ef be ad de 10 00 00 00 e5 9a e5 38");
  verdict v = parse(v7, kGoldenPayload);
  CHECK(v.check == wire_check::version);
  CHECK(v.names("version: expected 8, received 7 (a node of another qgossip wire format"));
}

TEST_CASE("wire: count and payload_bytes are 64-bit; a count above 2^40 is refused") {
  wire_header h = golden();
  h.kind = message_kind::probe;
  h.codec = 1;
  h.codec_tag = 0;
  h.count = (std::uint64_t{1} << 33) + 4;  // above the former 32-bit field
  receiver r;
  r.expect.probe = codec_expectation{1, 0, h.count};
  verdict big = parse(encode(h, kGoldenPayload), kGoldenPayload, r);
  REQUIRE(big.st.is_ok());
  CHECK(big.header.count == (std::uint64_t{1} << 33) + 4);
  h.count = kWireMaxCount + 1;
  r.expect.probe = codec_expectation{1, 0, h.count};
  verdict over = parse(encode(h, kGoldenPayload), kGoldenPayload, r);
  CHECK(over.check == wire_check::count);
  CHECK(over.names("count: expected at most 2^40 (1099511627776), received 1099511627777"));
  // A payload_bytes above 2^32 is announced and refused by the receiver's maximum, not wrapped.
  std::array<std::byte, kWireHeaderBytes> bytes = encode(golden(), kGoldenPayload);
  bytes[44] = std::byte{1};  // payload_bytes += 2^32
  verdict huge = parse(bytes, kGoldenPayload);
  CHECK(huge.check == wire_check::payload_size);
  CHECK(huge.names("payload_bytes: expected at most 1024, received 4294967312"));
}

TEST_CASE("wire: a payload of another size than the header says") {
  SUBCASE("shorter (truncated payload)") {
    verdict v = parse(kGoldenHeader, std::span(kGoldenPayload).first(15));
    CHECK(v.check == wire_check::payload_size);
    CHECK(v.names("payload: expected 16 bytes (the header's payload_bytes), received 15"));
  }
  SUBCASE("longer") {
    auto longer = kGoldenPayload;
    longer.push_back(std::byte{0});
    verdict v = parse(kGoldenHeader, longer);
    CHECK(v.check == wire_check::payload_size);
    CHECK(v.names("expected 16 bytes"));
    CHECK(v.names("received 17"));
  }
  SUBCASE("announcing more than the receiver accepts") {
    receiver r;
    r.expect.max_payload_bytes = 15;
    verdict v = parse(kGoldenHeader, kGoldenPayload, r);
    CHECK(v.check == wire_check::payload_size);
    CHECK(v.names("payload_bytes: expected at most 15, received 16"));
  }
}

TEST_CASE("wire: a flipped bit is a checksum failure") {
  SUBCASE("in a header field no other check looks at (iteration)") {
    auto h = kGoldenHeader;
    flip_bit(h, 32 * 8 + 3);
    verdict v = parse(h, kGoldenPayload);
    CHECK(v.check == wire_check::crc);
    CHECK(v.names("crc32c: expected 0x"));
    CHECK(v.names("received 0x3f3412b4"));
  }
  SUBCASE("in the crc field itself") {
    auto h = kGoldenHeader;
    flip_bit(h, kWireCrcOffset * 8);
    verdict v = parse(h, kGoldenPayload);
    CHECK(v.check == wire_check::crc);
    CHECK(v.names("crc32c: expected 0x3f3412b4 (computed), received 0x3f3412b5"));
  }
  SUBCASE("in the payload") {
    auto p = kGoldenPayload;
    flip_bit(p, 77);
    verdict v = parse(kGoldenHeader, p);
    CHECK(v.check == wire_check::crc);
  }
  SUBCASE("anywhere: each of the 576 single-bit flips of header and payload is rejected") {
    for (std::size_t bit = 0; bit < (kWireHeaderBytes + 16) * 8; ++bit) {
      auto h = kGoldenHeader;
      auto p = kGoldenPayload;
      if (bit < kWireHeaderBytes * 8)
        flip_bit(h, bit);
      else
        flip_bit(p, bit - kWireHeaderBytes * 8);
      CAPTURE(bit);
      REQUIRE(parse(h, p).st.code() == errc::corrupt);
    }
  }
}

TEST_CASE("wire: a train message may count skipped rounds; no other kind may") {
  verdict train = parse_changed([](wire_header& h) { h.skipped = 0xFFFF; });
  REQUIRE(train.st.is_ok());
  CHECK(train.header.skipped == 0xFFFF);
  verdict finished = parse(kGoldenFinished, {});
  REQUIRE(finished.st.is_ok());
  wire_header h = finished.header;
  h.skipped = 5;
  verdict v = parse(encode(h, {}), {});
  CHECK(v.check == wire_check::skipped);
  CHECK(v.names("skipped: expected 0 on a message of kind 4, received 5"));
}

TEST_CASE("wire: an unknown message kind") {
  verdict v = parse_changed([](wire_header& h) { h.kind = static_cast<message_kind>(8); });
  CHECK(v.check == wire_check::kind);
  CHECK(v.names("kind: expected 1 (train), 2 (probe), 3 (notice), 4 (finished), 5 (finished_ack), 6 (join) or 7 (join_state), received 8"));
  verdict zero = parse_changed([](wire_header& h) { h.kind = static_cast<message_kind>(0); });
  CHECK(zero.check == wire_check::kind);
}

TEST_CASE("wire: a notice carries no codec") {
  wire_header h = golden();
  h.kind = message_kind::notice;
  h.codec = 0;
  h.codec_tag = 0;
  h.count = 0;
  verdict ok = parse(encode(h, kGoldenPayload), kGoldenPayload);
  CHECK(ok.st.is_ok());
  CHECK(ok.header.kind == message_kind::notice);
  verdict coded = parse_changed([](wire_header& w) { w.kind = message_kind::notice; });
  CHECK(coded.check == wire_check::codec);
  CHECK(coded.names("a notice message carries no codec"));
}

TEST_CASE("wire: a finished message is the golden bytes of docs/wire.md, and carries no codec and no payload") {
  wire_header h;
  h.kind = message_kind::finished;
  h.run_id = 0x0123456789ABCDEFull;
  h.sender = 3;
  h.iteration = 17;
  auto bytes = encode(h, {});
  CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == kGoldenFinished);
  verdict ok = parse(kGoldenFinished, {});
  REQUIRE(ok.st.is_ok());
  CHECK(ok.header.kind == message_kind::finished);
  CHECK(ok.header.iteration == 17);
  h.payload_bytes = 16;
  verdict with_payload = parse(encode(h, kGoldenPayload), kGoldenPayload);
  CHECK(with_payload.check == wire_check::payload_size);
  CHECK(with_payload.names("a finished message has no payload"));
  h.payload_bytes = 0;
  h.codec = 2;
  verdict coded = parse(encode(h, {}), {});
  CHECK(coded.check == wire_check::codec);
  CHECK(coded.names("a finished message carries no codec"));
}

TEST_CASE("wire: a finished_ack is the golden bytes of docs/wire.md, and carries no codec and no payload") {
  wire_header h;
  h.kind = message_kind::finished_ack;
  h.run_id = 0x0123456789ABCDEFull;
  h.sender = 3;
  h.iteration = 17;
  auto bytes = encode(h, {});
  CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == kGoldenFinishedAck);
  verdict ok = parse(kGoldenFinishedAck, {});
  REQUIRE(ok.st.is_ok());
  CHECK(ok.header.kind == message_kind::finished_ack);
  CHECK(ok.header.iteration == 17);
  h.payload_bytes = 16;
  verdict with_payload = parse(encode(h, kGoldenPayload), kGoldenPayload);
  CHECK(with_payload.check == wire_check::payload_size);
  CHECK(with_payload.names("a finished_ack message has no payload"));
  h.payload_bytes = 0;
  h.count = 4;
  verdict coded = parse(encode(h, {}), {});
  CHECK(coded.check == wire_check::codec);
  CHECK(coded.names("a finished_ack message carries no codec"));
}

TEST_CASE("wire: a message of another run (run id)") {
  verdict v = parse_changed([](wire_header& h) { h.run_id = 0x42; });
  CHECK(v.check == wire_check::run_id);
  CHECK(v.names("run_id: expected 0x0123456789abcdef, received 0x0000000000000042"));
}

TEST_CASE("wire: a sender that is not a neighbour") {
  verdict v = parse_changed([](wire_header& h) { h.sender = 2; });
  CHECK(v.check == wire_check::sender);
  CHECK(v.names("sender: expected a neighbour (one of 1, 3), received 2"));
  // A rank that does not fit an int must not wrap onto a neighbour (0xFFFFFFFF is not -1 here).
  CHECK(parse_changed([](wire_header& h) { h.sender = 0xFFFFFFFFu; }).check == wire_check::sender);
}

TEST_CASE("wire: codec, codec tag and count must be what this kind expects") {
  verdict codec = parse_changed([](wire_header& h) { h.codec = 1; });
  CHECK(codec.check == wire_check::codec);
  CHECK(codec.names("codec: expected 2, received 1"));

  verdict tag = parse_changed([](wire_header& h) { h.codec_tag = 0xDEADBEEE; });
  CHECK(tag.check == wire_check::codec_tag);
  CHECK(tag.names("codec_tag: expected 0xdeadbeef, received 0xdeadbeee"));

  verdict count = parse_changed([](wire_header& h) { h.count = 5; });
  CHECK(count.check == wire_check::count);
  CHECK(count.names("count: expected 4, received 5"));

  // A probe is checked against the probe expectation (codec 1, tag 0), not the train one.
  verdict probe = parse_changed([](wire_header& h) { h.kind = message_kind::probe; });
  CHECK(probe.check == wire_check::codec);
  CHECK(probe.names("codec: expected 1, received 2"));
}

TEST_CASE("wire: without an expectation for a kind the codec fields are left to check_codec") {
  receiver r;
  r.expect.train.reset();
  wire_header h = golden();
  h.codec = 9;
  auto bytes = encode(h, kGoldenPayload);
  verdict v = parse(bytes, kGoldenPayload, r);
  REQUIRE(v.st.is_ok());
  wire_check c = wire_check::ok;
  status s = check_codec(v.header, codec_expectation{2, 0xDEADBEEF, 4}, &c);
  CHECK(s.code() == errc::corrupt);
  CHECK(c == wire_check::codec);
  CHECK(check_codec(golden(), codec_expectation{2, 0xDEADBEEF, 4}).is_ok());
}

TEST_CASE("wire: checks run in the documented order, so junk reads as junk") {
  // A wrong magic and a wrong crc: the magic is reported (it says "not ours", the crc would not).
  auto h = kGoldenHeader;
  h[0] = std::byte{'X'};
  CHECK(parse(h, kGoldenPayload).check == wire_check::magic);
  // A bit flip in the run id: the checksum fails first, so corruption is never blamed on the config.
  h = kGoldenHeader;
  flip_bit(h, 8 * 8);
  CHECK(parse(h, kGoldenPayload).check == wire_check::crc);
}

TEST_CASE("wire: encode_header refuses a payload_bytes that is not the payload's size") {
  wire_header h = golden();
  h.payload_bytes = 15;
  std::array<std::byte, kWireHeaderBytes> out;
  CHECK_THROWS_WITH(encode_header(h, kGoldenPayload, out), doctest::Contains("payload_bytes=15"));
}

TEST_CASE("wire: join and join_state are the golden bytes of docs/wire.md; their count is the model size, no codec") {
  const std::string text = "join 41\n";
  const auto join_payload = std::as_bytes(std::span(text.data(), text.size()));
  wire_header h;
  h.kind = message_kind::join;
  h.run_id = 0x0123456789ABCDEFull;
  h.sender = 3;
  h.count = 4;
  h.iteration = 41;
  h.payload_bytes = text.size();
  auto bytes = encode(h, join_payload);
  CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == kGoldenJoin);
  verdict join = parse(kGoldenJoin, join_payload);
  REQUIRE(join.st.is_ok());
  CHECK(join.header.kind == message_kind::join);
  CHECK(join.header.count == 4);

  h.kind = message_kind::join_state;
  h.iteration = 17;
  h.payload_bytes = kGoldenJoinStatePayload.size();
  bytes = encode(h, kGoldenJoinStatePayload);
  CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == kGoldenJoinState);
  verdict state = parse(kGoldenJoinState, kGoldenJoinStatePayload);
  REQUIRE(state.st.is_ok());
  CHECK(state.header.kind == message_kind::join_state);
  CHECK(state.header.iteration == 17);

  h.codec = 2;
  verdict coded = parse(encode(h, kGoldenJoinStatePayload), kGoldenJoinStatePayload);
  CHECK(coded.check == wire_check::codec);
  CHECK(coded.names("a join_state message carries no codec: codec and codec_tag must be 0"));
}
