// No request field is dropped in silence: every top-level field of a completion or chat
// request is one the route reads, an annotation it accepts as OpenAI and vLLM do, or a 400
// that names it (a field of a feature not built here, or one neither API has).
#pragma once

#include <nlohmann/json.hpp>

namespace tessera::server {

enum class RequestRoute { kCompletion, kChat };

// Throws the 400 ApiError for the first field that is unknown, or known but refused with the
// value given (null always passes: as absent).
void check_request_fields(const nlohmann::ordered_json& body, RequestRoute route);

}  // namespace tessera::server
