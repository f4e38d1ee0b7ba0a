#include "core/json_message.h"

namespace ensemble {

std::string jsonForMessage(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ensemble
