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
struct SortPart {
    std::string from;
    std::string condition;
    std::vector<SqlValue> conditionValues;
    std::string order;
};

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
