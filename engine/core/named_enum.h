#pragma once

// Kinds as one table (ggml's type traits, LLVM's .def files): every enum a config names has one
// table of rows, EnumNames<E>::table, each row at least {value, name, label}. Parsing, printing,
// the schema's choices, the app's combo boxes and the docs read the rows, so a kind is spelled
// once. A registry (data/dataset_kinds.h, model/model_kinds.h) makes its richer rows the table:
// the functions below only need `value`, `name` and `label`.

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace ensemble {

// One accepted value of a choice key: its name in JSON and a label for people (the app).
struct Choice {
    const char* name;
    const char* label;
};

// The plain row: {value, name, label}.
template <typename E>
struct EnumName {
    E value;
    const char* name;
    const char* label;
};

template <typename E>
struct EnumNames;

template <typename E>
concept NamedEnum = requires {
    EnumNames<E>::table[0].name;
};

template <NamedEnum E>
const char* toString(E value) {
    for (const auto& entry : EnumNames<E>::table) {
        if (entry.value == value) {
            return entry.name;
        }
    }
    return "?";
}

// The value named `name`; false when no entry has that name.
template <NamedEnum E>
bool enumFromName(std::string_view name, E& out) {
    for (const auto& entry : EnumNames<E>::table) {
        if (name == entry.name) {
            out = entry.value;
            return true;
        }
    }
    return false;
}

template <NamedEnum E>
std::vector<Choice> choicesOf() {
    std::vector<Choice> out;
    for (const auto& entry : EnumNames<E>::table) {
        out.push_back({entry.name, entry.label});
    }
    return out;
}

// "a, b or c": the names of the rows that satisfy `keep` (every row by default), for messages.
template <NamedEnum E, typename Keep>
std::string namesText(Keep keep) {
    std::size_t count = 0;
    for (const auto& entry : EnumNames<E>::table) {
        count += keep(entry) ? 1 : 0;
    }
    std::string out;
    std::size_t i = 0;
    for (const auto& entry : EnumNames<E>::table) {
        if (keep(entry)) {
            out += i == 0 ? "" : (i + 1 == count ? " or " : ", ");
            out += entry.name;
            ++i;
        }
    }
    return out;
}

template <NamedEnum E>
std::string namesText() {
    return namesText<E>([](const auto&) { return true; });
}

// Whether row i of the table holds the enum's value i and the table has `count` rows: lets a
// registry index its table by the enum (static_assert beside the table), so a kind added to the
// enum without a row, or rows out of order, fail to compile.
template <NamedEnum E>
constexpr bool tableMatchesEnum(std::size_t count) {
    std::size_t i = 0;
    for (const auto& entry : EnumNames<E>::table) {
        if (static_cast<std::size_t>(entry.value) != i) {
            return false;
        }
        ++i;
    }
    return i == count;
}

// The row of `value` in a table checked by tableMatchesEnum.
template <NamedEnum E>
constexpr const auto& enumRow(E value) {
    return EnumNames<E>::table[static_cast<std::size_t>(value)];
}

}  // namespace ensemble
