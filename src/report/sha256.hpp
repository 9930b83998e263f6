// SHA-256 (FIPS 180-4) and standard base64, for the HTML report's Content-Security-Policy hash
// of its inline script. Small enough to keep here rather than link a crypto library for.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope::html {

// The 32-byte digest of `data`.
//   sha256("abc") -> ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
std::array<std::uint8_t, 32> sha256(std::string_view data);

// RFC 4648 base64 with padding.   base64("ab") -> "YWI="
std::string base64(std::string_view bytes);

}  // namespace stepscope::html
