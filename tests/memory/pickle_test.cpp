// The restricted unpickler: plain data read as Python writes it, code-running opcodes refused,
// every declared length checked against the bytes present.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "memory_test_util.hpp"
#include "stepscope/error.hpp"
#include "stepscope/memory/pickle.hpp"
#include "stepscope/memory/snapshot.hpp"

namespace stepscope::memory {
namespace {

using pickle::Kind;

std::string refusal(const std::string& bytes) {
  try {
    (void)pickle::parse(bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Pickle, ReadsWhatPythonWrites) {
  // pickle.dumps({'a': [1, -2, 3.5, None, True], 'b': (b'xy', 'é' * 300), 'n': 2**40}, protocol=4)
  const std::string bytes = python_pickle(
      "{'a': [1, -2, 3.5, None, True, 70000, -(2**40)], 'b': (b'xy', '\\u00e9' * 300), 'n': 2**63 + 5}");
  pickle::Document doc = pickle::parse(bytes);
  ASSERT_EQ(doc.kind(doc.root()), Kind::dict);
  const auto* a = doc.find(doc.root(), "a");
  ASSERT_NE(a, nullptr);
  const auto& items = doc.items(*a);
  ASSERT_EQ(items.size(), 7u);
  EXPECT_EQ(doc.node(items[0]).integer, 1);
  EXPECT_EQ(doc.node(items[1]).integer, -2);
  EXPECT_DOUBLE_EQ(doc.node(items[2]).floating, 3.5);
  EXPECT_EQ(doc.kind(items[3]), Kind::none);
  EXPECT_EQ(doc.kind(items[4]), Kind::boolean);
  EXPECT_EQ(doc.node(items[5]).integer, 70000);
  EXPECT_EQ(doc.node(items[6]).integer, -(std::int64_t{1} << 40));
  const auto& b = doc.items(*doc.find(doc.root(), "b"));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(doc.kind(b[0]), Kind::bytes);
  EXPECT_EQ(doc.text(b[0]), "xy");
  EXPECT_EQ(doc.text(b[1]).size(), 600u);  // UTF-8 bytes
  EXPECT_EQ(doc.kind(*doc.find(doc.root(), "n")), Kind::big_integer);
}

TEST(Pickle, SharedReferencesThroughTheMemo) {
  const std::string bytes = python_pickle("(lambda f: [{'frames': f}, {'frames': f}])([{'name': 'x'}])");
  pickle::Document doc = pickle::parse(bytes);
  const auto& items = doc.items(doc.root());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(*doc.find(items[0], "frames"), *doc.find(items[1], "frames"));
}

TEST(Pickle, RefusesGlobalAndReduceNamingOpcodeAndOffset) {
  // os.system('true') as pickle protocol 2 writes it: GLOBAL, then REDUCE.
  std::string global = "\x80\x02" "cposix\nsystem\n" "q\x00" "X\x04\x00\x00\x00true" "\x85" "R" ".";
  std::string why = refusal(global);
  EXPECT_NE(why.find("GLOBAL"), std::string::npos) << why;
  EXPECT_NE(why.find("byte 2"), std::string::npos) << why;
  // REDUCE alone on plain values: refused where it stands.
  std::string reduce = "\x80\x02" "N" ")" "R" ".";
  why = refusal(reduce);
  EXPECT_NE(why.find("REDUCE"), std::string::npos) << why;
  EXPECT_NE(why.find("byte 4"), std::string::npos) << why;
  for (const char* op : {"\x93", "b", "\x81", "\x92", "i", "o", "Q", "\x82"}) {
    std::string bytes = std::string("\x80\x04" "N" "N") + op + ".";
    EXPECT_NE(refusal(bytes).find("imports or calls"), std::string::npos) << pickle::opcode_name(static_cast<std::uint8_t>(op[0]));
  }
  // The real opcodes of a torch pickle (a tensor's STACK_GLOBAL) are refused the same way.
  EXPECT_NE(refusal(python_pickle("__import__('collections').OrderedDict(a=1)")).find("imports or calls"), std::string::npos);
}

TEST(Pickle, TruncatedAndMalformedInputIsRefusedOnOneLine) {
  const std::string good = python_pickle("{'segments': [], 'device_traces': [[]]}");
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::string why = refusal(good.substr(0, n));
    EXPECT_FALSE(why.empty()) << n;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  EXPECT_NE(refusal("\x80\x02" "a" ".").find("empty"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02" "\xff").find("not a pickle opcode"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02" "N" "N" ".").find("STOP"), std::string::npos);
  EXPECT_NE(refusal("\x80\x02" "h\x05").find("never stored"), std::string::npos);
}

// A BINUNICODE8 that declares an exabyte: refused from the bytes present, nothing reserved for it.
TEST(Pickle, HostileDeclaredLengthIsBoundedByTheBytesPresent) {
  std::string bytes = "\x80\x04\x8d";
  bytes += std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8);
  bytes += "abc.";
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::string why = refusal(bytes);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_NE(why.find("declares 1152921504606846976 bytes but only 4 remain"), std::string::npos) << why;
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // kB: no allocation of the declared size
  // FRAME and LONG4 likewise.
  std::string frame = std::string("\x80\x04\x95", 3) + std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "N.";
  EXPECT_NE(refusal(frame).find("FRAME declares"), std::string::npos);
  std::string long4 = std::string("\x80\x04\x8b", 3) + std::string("\xff\xff\xff\x7f", 4) + ".";
  EXPECT_NE(refusal(long4).find("declares 2147483647 bytes"), std::string::npos);
}

TEST(Pickle, CyclesAndDeepMarksAreBounded) {
  // l = []; l.append(l): a cycle built through the memo holds no memory of its own.
  pickle::Document doc = pickle::parse(python_pickle("(lambda l: (l.append(l), l)[1])([])"));
  ASSERT_EQ(doc.items(doc.root()).size(), 1u);
  EXPECT_EQ(doc.items(doc.root())[0], doc.root());
  std::string marks = "\x80\x02" + std::string(100000, '(');
  EXPECT_NE(refusal(marks).find("MARKs nest"), std::string::npos);
}

TEST(Snapshot, NotASnapshotIsRefusedNamingTheField) {
  auto why = [](const std::string& expr) {
    try {
      (void)read_snapshot(python_pickle(expr), "x.pickle");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(why("3").find("x.pickle: the pickle is neither"), std::string::npos);
  EXPECT_NE(why("{'a': 1}").find("not a memory snapshot"), std::string::npos);
  EXPECT_NE(why("{'segments': [{'total_size': 'big'}]}").find("total_size is not an integer"), std::string::npos);
}

}  // namespace
}  // namespace stepscope::memory
