// The chunker finds each event's end by following strings, escapes and brackets only. Names full
// of quotes, backslash runs and brackets, at every offset against the scan's 64-byte blocks and
// against the read blocks, must cut the text exactly where a real JSON parser ends each event.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ingest/byte_source.hpp"
#include "ingest/json_chunker.hpp"
#include "stepscope/error.hpp"

namespace stepscope::ingest {
namespace {

// JSON string bodies that trip a scanner: escaped quotes after odd and even backslash runs,
// brackets inside strings, \u escapes of brackets and quotes.
const std::vector<std::string> kTricky = {
    R"(a\"b)",          R"(\\)",         R"(\\\")",      R"(\\\\)",         R"({[}])",
    R"(x\\\"}]{)",      R"(\u007b\u0022)", R"(\"\"\"\")", R"(\\\\\\\\\\\")", R"(]}]}\\)",
};

// Events whose names mix the tricky bodies with padding of every length, so that each body
// lands on every offset of a 64-byte block; some carry nested args with tricky values too.
std::vector<std::string> tricky_events() {
  std::vector<std::string> events;
  for (int pad = 0; pad < 130; ++pad)
    for (std::size_t k = 0; k < kTricky.size(); ++k) {
      std::string name = std::string(static_cast<std::size_t>(pad), 'p') + kTricky[k] + kTricky[(k + pad) % kTricky.size()];
      std::string e = R"({"ph": "X", "name": ")" + name + R"(", "ts": 1, "dur": 2, "pid": 1, "tid": 1)";
      if (pad % 3 == 0) e += R"(, "args": {"v": [")" + kTricky[k] + R"(", {"w": "]"}], "n": ")" + name + "\"}";
      events.push_back(e + "}");
    }
  return events;
}

// Every event text the chunker hands out, in order, reading `json` in blocks of `block` bytes.
std::vector<std::string> chunked(const std::string& json, std::size_t block) {
  auto src = memory_byte_source(json);
  JsonChunker chunker(*src, "tricky.json", block);
  std::vector<std::string> out;
  EventBatch batch;
  while (chunker.next(batch) == ChunkState::Found) {
    // The batch is one JSON array of exactly its events, framed in place in the read block.
    EXPECT_EQ(batch.json()[0], '[');
    EXPECT_EQ(batch.json()[batch.text_size - 1], ']');
    EXPECT_EQ(nlohmann::json::parse(batch.json_view(0, batch.text_size)).size(), batch.count());
    EXPECT_GE(batch.json_capacity(), batch.text_size + 64);  // simdjson's padding
    for (std::size_t i = 0; i < batch.count(); ++i) {
      const std::size_t start = batch.starts[i];
      const std::size_t end = i + 1 < batch.count() ? batch.starts[i + 1] : batch.text_size - 1;
      std::string text(batch.json_view(start, end - start));
      while (!text.empty() && text.back() != '}') text.pop_back();  // the comma and spaces between
      out.push_back(text);
    }
    // A batch moved away leaves an empty one that the chunker fills again.
    if (batch.first_index % 2 == 1) EventBatch gone = std::move(batch);
  }
  return out;
}

TEST(Chunker, EscapesAndBracketsInStringsAtEveryBlockOffset) {
  const std::vector<std::string> events = tricky_events();
  std::string json = R"({"schemaVersion": 1, "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ", " : "") + events[i];
  json += "]}";
  // The reference: a real parser reads the same document and finds every event and name.
  const auto doc = nlohmann::json::parse(json);
  ASSERT_EQ(doc["traceEvents"].size(), events.size());
  for (std::size_t block : {std::size_t{7}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{129},
                            std::size_t{4096}, std::size_t{1} << 20}) {
    SCOPED_TRACE(block);
    const std::vector<std::string> got = chunked(json, block);
    ASSERT_EQ(got.size(), events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      ASSERT_EQ(got[i], events[i]) << "event " << i;
      ASSERT_EQ(nlohmann::json::parse(got[i])["name"], doc["traceEvents"][i]["name"]) << "event " << i;
    }
  }
}

TEST(Chunker, OneHugeEventStopsAtTheBoundNamingItsOffset) {
  // 65 MiB of one name: the chunker stops instead of holding all of it.
  const std::string json = R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1}, {"name": ")" +
                           std::string(std::size_t{65} << 20, ' ') + "\"}]}";
  try {
    chunked(json, 1 << 20);
    FAIL() << "a 65 MiB event was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 69: one event runs past 64 MiB"), std::string::npos) << e.what();
  }
  const std::string value = R"({"deviceProperties": ")" + std::string(std::size_t{65} << 20, 'x') + R"(", "traceEvents": []})";
  EXPECT_THROW(chunked(value, 1 << 20), InputError);
}

}  // namespace
}  // namespace stepscope::ingest
