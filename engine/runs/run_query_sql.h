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

// The pieces of `SELECT ... FROM runs r <joins> WHERE <where> ORDER BY <order>`, with the values
// of their parameters (written as ?) in the order they appear.
struct QuerySql {
    std::string joins;
    std::vector<SqlValue> joinValues;
    std::string where;
    std::vector<SqlValue> whereValues;
    std::string order;
};

// Each throws ConfigError naming the term and why (unknown field, a value that is not a number
// or a date, an operator the field does not take).
void appendFilterSql(const RunFilter& filter, QuerySql& sql);
void appendTextSql(const std::string& text, QuerySql& sql);
void appendSortSql(const RunSort& sort, QuerySql& sql);
QuerySql buildQuerySql(const RunQuery& query, bool withOrder);

}  // namespace ensemble::runs::detail
