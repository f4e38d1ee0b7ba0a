#pragma once

// The SQL a RunQuery becomes (run_query.cpp), for RunStore's list and count (run_store.cpp).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runs/run_store.h"

namespace ensemble::runs::detail {

enum class FieldKind { Number, Date, Text, State, Tag, Figure, Config };

// A filter or sort field: for a column its SQL ("r.started"), for a figure or config key its
// name; unknown when `known` is false.
struct ResolvedField {
    FieldKind kind = FieldKind::Text;
    std::string name;
    bool sortable = false;
    bool known = false;
};
ResolvedField resolveField(const std::string& field);

using SqlValue = std::variant<std::int64_t, double, std::string>;

// One stretch of the sort order: the ids `SELECT r.id FROM <from> WHERE <condition> AND <the
// filters> ORDER BY <order>` gives. A sort is one stretch, or several one after another where
// values may be missing (they come last) or mix numbers and text: each stretch then reads an
// index in its order and a page stops early, where one ORDER BY over a LEFT JOIN would sort the
// whole store.
//
// The order is `key, tie` (or `tie` alone where `key` is empty), both in the sort's direction;
// `tie` is the entry's id as the stretch's table holds it (sf.run, r.id), so that a seek
// (`(key, tie) > (?, ?)`, keyset paging) reads the same index the order does.
struct SortPart {
    std::string from;
    std::string condition;
    std::vector<SqlValue> conditionValues;
    std::string key;
    std::string tie = "r.id";
    bool descending = false;
};

// "key DESC, tie DESC"; `reversed` turns the direction (reading backwards from an entry).
std::string sortPartOrder(const SortPart& part, bool reversed);

// Where a read of a stretch starts: at its beginning, or just past an entry (keyset paging,
// RunQuery::after / before): first its ties (`key = ? AND tie > ?`), then the keys past it
// (`key > ?`). Two ranges, as SQLite seeks an index of a rowid table by the first column of a
// row value only: `(key, tie) > (?, ?)` would step over every tie of a key 20,000 entries share.
enum class Seek { None, Ties, Past };

// The SQL of one stretch (`where`: the filters): its ids in order, `LIMIT ? OFFSET ?` last, or
// how many there are (`count`). A seek's values are bound after the stretch's condition values
// (Ties: the key, the id; Past: the key, or the id where the stretch has no key), before the
// filters'; `reversed` reads the stretch backwards (the entries before one).
std::string sortPartSql(const SortPart& part, const std::string& where, bool count,
                        Seek seek = Seek::None, bool reversed = false);

// The filters (`where`, its parameters written as ? in `whereValues`' order) and the sort.
struct QuerySql {
    std::string where;
    std::vector<SqlValue> whereValues;
    std::vector<SortPart> parts;
};

// Each throws ConfigError naming the term and why (unknown field, a value that is not a number
// or a date, an operator the field does not take).
void appendFilterSql(const RunFilter& filter, QuerySql& sql);
void appendTextSql(const std::string& text, QuerySql& sql);
void appendSortSql(const RunSort& sort, QuerySql& sql);
QuerySql buildQuerySql(const RunQuery& query, bool withOrder);

}  // namespace ensemble::runs::detail
