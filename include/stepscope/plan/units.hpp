// Units shared by the planning calculators: data types, counts ("7B") and sizes ("14GB").
// Sizes are decimal (1 GB = 1e9 bytes) throughout, as vendors quote HBM and link bandwidth.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::plan {

inline constexpr double kGB = 1e9;

enum class Dtype { fp32, tf32, bf16, fp16, fp8, int8, int4 };

Dtype parse_dtype(std::string_view text);       // throws InputError on an unknown name
std::string_view dtype_name(Dtype d);
double dtype_bytes(Dtype d);                     // bytes per element (int4 = 0.5)

// "7B", "1.5b", "350M", "7e9", "70000000000" -> number. Throws InputError if not a positive number.
double parse_count(std::string_view text, std::string_view what);
// "14GB", "14 GiB", "512MB", "1e9" (bytes) -> bytes. Decimal units unless the suffix has an "i".
double parse_bytes(std::string_view text, std::string_view what);
// "4096,4096,8192", "4096x4096x8192" or "4096 4096 8192" -> exactly `count` integers.
std::vector<std::int64_t> parse_dims(std::string_view text, std::size_t count, std::string_view what);
// Context lengths: each item "2048" or "2048,4096,8K" (K = 1024 tokens) -> token counts in order.
std::vector<std::int64_t> parse_seq_list(const std::vector<std::string>& items);

// Throw InputError("<what> must be positive ...") unless value > 0 (resp. >= 0, or in [0, 1]).
void require_positive(double value, std::string_view what);
void require_non_negative(double value, std::string_view what);
void require_fraction(double value, std::string_view what);

}  // namespace stepscope::plan
