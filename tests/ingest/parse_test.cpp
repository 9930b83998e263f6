// The number parsers every reader shares, and the one way rows enter the event table.
#include <gtest/gtest.h>

#include <limits>

#include "stepscope/parse.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {
namespace {

TEST(ParseInt, WholeTextInRangeOnly) {
  EXPECT_EQ(parse_int("42"), 42);
  EXPECT_EQ(parse_int("-7"), -7);
  EXPECT_EQ(parse_int("007"), 7);
  EXPECT_EQ(parse_int("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_int("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parse_int<int>("2147483647"), 2147483647);
  EXPECT_EQ(parse_int<int>("4294967280"), std::nullopt);  // SLURM's batch step id
  EXPECT_EQ(parse_int<unsigned>("-1"), std::nullopt);
  EXPECT_EQ(parse_int<std::uint64_t>("fffffffffffffffe", 16), 0xfffffffffffffffeULL);
  EXPECT_EQ(parse_int("FF", 16), 255);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "12abc", "1.0", "1e3", "0x10", "--1", "1,000"})
    EXPECT_EQ(parse_int(bad), std::nullopt) << bad;
}

TEST(ParseDouble, FiniteDecimalTextOnly) {
  EXPECT_EQ(parse_double("1.5"), 1.5);
  EXPECT_EQ(parse_double("-2"), -2.0);
  EXPECT_EQ(parse_double("1e-3"), 1e-3);
  EXPECT_EQ(parse_double("1E+3"), 1000.0);
  EXPECT_EQ(parse_double(".5"), 0.5);
  EXPECT_EQ(parse_double("1."), 1.0);
  EXPECT_EQ(parse_double("0.1"), 0.1);  // correctly rounded, as strtod
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "1.5x", "1,5", "0x10", "inf", "-inf", "nan", "1e400", "1e-400", "1e"})
    EXPECT_EQ(parse_double(bad), std::nullopt) << bad;
}

TEST(ParsePrefix, NumberAtTheStartAndItsLength) {
  auto i = parse_int_prefix("12#3");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->value, 12);
  EXPECT_EQ(i->used, 2u);
  EXPECT_EQ(parse_int_prefix("-7")->used, 2u);
  for (const char* bad : {"", "#3", "+1", " 1", "99999999999999999999x"})
    EXPECT_EQ(parse_int_prefix(bad), std::nullopt) << bad;

  auto d = parse_double_prefix("1.5GiB");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->value, 1.5);
  EXPECT_EQ(d->used, 3u);
  EXPECT_EQ(parse_double_prefix("250.00 W")->used, 6u);
  EXPECT_EQ(parse_double_prefix("1e")->used, 1u);  // an exponent needs digits: "e" is the rest
  EXPECT_EQ(parse_double_prefix("2")->used, 1u);
  for (const char* bad : {"", "W", "+1", " 1", "inf", "nan W", "1e400", "1e-400"})
    EXPECT_EQ(parse_double_prefix(bad), std::nullopt) << bad;
}

TEST(ParseUsToNs, MicrosecondsTextToNanoseconds) {
  EXPECT_EQ(parse_us_to_ns("1.5"), 1500);
  EXPECT_EQ(parse_us_to_ns("4000123.456"), 4000123456);
  // Absolute epoch µs with a ns fraction: beyond double precision, exact here.
  EXPECT_EQ(parse_us_to_ns("1708722576381804.123"), 1708722576381804123);
  EXPECT_EQ(parse_us_to_ns("10.12345"), 10123);  // the first digit past the ns rounds
  EXPECT_EQ(parse_us_to_ns("10.1235"), 10124);
  EXPECT_EQ(parse_us_to_ns("-10.1235"), -10124);
  EXPECT_EQ(parse_us_to_ns("0.9995"), 1000);
  EXPECT_EQ(parse_us_to_ns("10.12345678901234567890123"), 10123);
  EXPECT_EQ(parse_us_to_ns("-2"), -2000);
  EXPECT_EQ(parse_us_to_ns("0000000000000001"), 1000);
  EXPECT_EQ(parse_us_to_ns("9223372036854774.9995"), 9223372036854775000);
  EXPECT_EQ(parse_us_to_ns("1.5e3"), 1500000);
  EXPECT_EQ(parse_us_to_ns("15E-1"), 1500);
  EXPECT_EQ(parse_us_to_ns("1e-5000"), 0);  // below long double: zero, as strtold reads it
  for (const char* bad : {"", "-", "\"12\"", "1.", ".5", "1.e3", "--1", "+1", "1 ", " 1", "1.-5", "12abc",
                          "99999999999999999999", "00000000000000001", "9223372036854775", "1e5000", "9.1e15", "1e"})
    EXPECT_EQ(parse_us_to_ns(bad), std::nullopt) << bad;
}

TEST(EventTable, AppendPutsEachFieldInItsColumn) {
  EventTable t;
  EventRow r;
  r.ts = 1500;
  r.dur = 2250;
  r.name = 3;
  r.category = 4;
  r.kind = Kind::Memcpy;
  r.phase = Phase::Instant;
  r.copy_kind = CopyKind::HtoD;
  r.host_mem = HostMem::Pageable;
  r.pid = 5;
  r.tid = 6;
  r.correlation = 7;
  r.external_id = 8;
  r.stream = 9;
  r.device = 10;
  r.kernel_args = 11;
  r.extra = 12;
  EXPECT_EQ(t.append(EventRow{}), 0u);
  EXPECT_EQ(t.append(r), 1u);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.ts[1], 1500);
  EXPECT_EQ(t.dur[1], 2250);
  EXPECT_EQ(t.end(1), 3750);
  EXPECT_EQ(t.name[1], 3u);
  EXPECT_EQ(t.category[1], 4u);
  EXPECT_EQ(t.kind[1], Kind::Memcpy);
  EXPECT_EQ(t.phase[1], Phase::Instant);
  EXPECT_EQ(t.copy_kind[1], CopyKind::HtoD);
  EXPECT_EQ(t.host_mem[1], HostMem::Pageable);
  EXPECT_EQ(t.pid(1), 5);
  EXPECT_EQ(t.tid(1), 6);
  EXPECT_EQ(t.correlation[1], 7);
  EXPECT_EQ(t.external_id[1], 8);
  EXPECT_EQ(t.stream[1], 9);
  EXPECT_EQ(t.device[1], 10);
  EXPECT_EQ(t.kernel_args[1], 11);
  EXPECT_EQ(t.extra[1], 12);
  // A row its source says nothing about.
  EXPECT_EQ(t.name[0], kNoStr);
  EXPECT_EQ(t.kind[0], Kind::Other);
  EXPECT_EQ(t.phase[0], Phase::Complete);
  EXPECT_EQ(t.copy_kind[0], CopyKind::None);
  EXPECT_EQ(t.host_mem[0], HostMem::Unknown);
  EXPECT_EQ(t.correlation[0], kNone);
  EXPECT_EQ(t.external_id[0], kNone);
  EXPECT_EQ(t.stream[0], -1);
  EXPECT_EQ(t.device[0], -1);
  EXPECT_EQ(t.kernel_args[0], -1);
  EXPECT_EQ(t.extra[0], -1);
}

TEST(EventTable, AppendTableKeepsEveryColumnAligned) {
  EventTable a, b;
  EventRow r;
  for (int i = 0; i < 3; ++i) {
    r.ts = i;
    r.stream = 10 + i;
    (i < 1 ? a : b).append(r);
  }
  a.append(b);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.ts[2], 2);
  EXPECT_EQ(a.stream[2], 12);
  EXPECT_EQ(a.extra.size(), 3u);
  EXPECT_EQ(a.track.size(), 3u);
  a.reserve(5);
  EXPECT_GE(a.kind.capacity(), 5u);
  EXPECT_GE(a.external_id.capacity(), 5u);
}

// Many distinct configurations, each added again later: every one keeps its first number, and
// one that differs only in a double's sign (0.0 against -0.0) is a configuration of its own.
TEST(RankTrace, KernelArgsAreStoredOncePerDistinctConfiguration) {
  const auto config = [](int k) {
    KernelArgs a;
    a.grid[0] = k % 97, a.grid[1] = k / 97, a.registers_per_thread = k % 3;
    return a;
  };
  RankTrace t;
  std::vector<std::int32_t> first;
  for (int k = 0; k < 5000; ++k) first.push_back(t.add_kernel_args(config(k)));
  for (int k = 4999; k >= 0; --k) EXPECT_EQ(t.add_kernel_args(config(k)), first[static_cast<std::size_t>(k)]) << k;
  EXPECT_EQ(t.kernel_args.size(), 5000u);
  KernelArgs zero, negative_zero;
  zero.warps_per_sm = 0.0, negative_zero.warps_per_sm = -0.0;
  EXPECT_NE(t.add_kernel_args(zero), t.add_kernel_args(negative_zero));
}

// Kernel args are numbered in order of first appearance, an equal configuration sharing its
// number; an extra record's reference (which also names the shape it is stored in) reads back
// the record it was given, for the row that holds it.
TEST(RankTrace, SideRecordsAreFoundFromTheirRows) {
  RankTrace t;
  EventExtra x, y;
  x.bytes = 64;
  y.bytes = 128;
  y.total_allocated = 1 << 20;
  const std::int32_t rx = t.add_extra(x), ry = t.add_extra(y);
  EXPECT_NE(rx, ry);
  KernelArgs wide;
  wide.grid[0] = 4096;
  EXPECT_EQ(t.add_kernel_args(KernelArgs{}), 0);
  EXPECT_EQ(t.add_kernel_args(wide), 1);
  EXPECT_EQ(t.add_kernel_args(KernelArgs{}), 0);  // an equal configuration is stored once
  EXPECT_EQ(t.kernel_args.size(), 2u);
  EXPECT_EQ(t.kernel_args[1].grid[0], 4096);
  EventRow r;
  r.extra = ry;
  t.events.append(r);
  r.extra = rx;
  t.events.append(r);
  EXPECT_EQ(t.bytes_of(0), 128);
  EXPECT_EQ(t.extra_of(0)->total_allocated, 1 << 20);
  EXPECT_EQ(t.bytes_of(1), 64);
}

}  // namespace
}  // namespace stepscope
