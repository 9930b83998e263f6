// Units shared by the planning calculators: data types, counts ("7B") and sizes ("14GB").
// Sizes are decimal (1 GB = 1e9 bytes) throughout, as vendors quote HBM and link bandwidth; the
// one exception is a GPU's memory capacity, which datasheets write "GB" but mean GiB.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::plan {

inline constexpr double kGB = 1e9;
// Device memory is built from DRAM chips of binary capacity: an "80GB" H100 has 80 GiB.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

enum class Dtype { fp32, tf32, bf16, fp16, fp8, int8, int4 };

Dtype parse_dtype(std::string_view text);       // throws InputError on an unknown name
std::string_view dtype_name(Dtype d);
double dtype_bytes(Dtype d);                     // bytes per element (int4 = 0.5)

// "7B", "1.5b", "350M", "7e9", "70000000000" -> number. Throws InputError if not a positive number.
double parse_count(std::string_view text, std::string_view what);
// "14GB", "14 GiB", "512MB", "1e9" (bytes) -> bytes. Decimal units unless the suffix has an "i".
double parse_bytes(std::string_view text, std::string_view what);
// Sizes and lengths, as every integer option of the command line takes them: "4096", "8K" (8192),
// "1.5M" (1,572,864), "2G", "1e4". K, M, G, T are powers of 1024: lengths in tokens, hidden sizes
// and element counts are powers of two in practice ("8K context" is 8192). Throws InputError
// naming `what` unless the text is a whole number, optionally negative.
std::int64_t parse_size(std::string_view text, std::string_view what);
// Durations: "250us", "1.5ms", "2s", "5m", "1h" (also "ns", "µs", "min") -> seconds; a bare number
// is in `bare_unit_s` seconds (0.001: the option counts milliseconds). Throws InputError naming
// `what` unless it is a finite number of a known unit.
double parse_duration_s(std::string_view text, double bare_unit_s, std::string_view what);
// "4096,4096,8192", "4096x4096x8192" or "4096 4096 8192" -> exactly `count` integers.
std::vector<std::int64_t> parse_dims(std::string_view text, std::size_t count, std::string_view what);
// Context lengths: each item "2048" or "2048,4096,8K" (parse_size) -> token counts in order.
std::vector<std::int64_t> parse_seq_list(const std::vector<std::string>& items);

// Throw InputError("<what> must be positive ...") unless value > 0 (resp. >= 0, or in [0, 1]).
void require_positive(double value, std::string_view what);
void require_non_negative(double value, std::string_view what);
void require_fraction(double value, std::string_view what);

}  // namespace stepscope::plan
