// Lookups shared by the registries (trust codes, levers, footguns): each is a constexpr table of
// rows in id order, every row with its stable string in `name`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

// The enum of a registry from its X-macro list, whose rows start with the id:
//   STEPSCOPE_REGISTRY_ENUM(LeverId, STEPSCOPE_LEVERS) -> enum class LeverId : std::uint8_t { NumWorkers, ... };
#define STEPSCOPE_REGISTRY_ENUM_ID(id, ...) id,
#define STEPSCOPE_REGISTRY_ENUM(Enum, LIST) \
  enum class Enum : std::uint8_t { LIST(STEPSCOPE_REGISTRY_ENUM_ID) }

namespace stepscope {

// The row of an id: the tables list their rows in the order of the enum.
template <class Row, std::size_t N, class Id>
constexpr const Row& registry_row(const Row (&rows)[N], Id id) {
  return rows[static_cast<std::size_t>(id)];
}

// The id whose stable string is `name`; nullopt for a string no row holds.
template <auto Field, class Row, std::size_t N>
constexpr auto registry_find(const Row (&rows)[N], std::string_view name)
    -> std::optional<std::remove_cvref_t<decltype(rows[0].*Field)>> {
  for (const Row& row : rows)
    if (row.name == name) return row.*Field;
  return std::nullopt;
}

}  // namespace stepscope
