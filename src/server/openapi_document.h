#pragma once
// The OpenAPI 3.1 document of this server's API, served at GET /openapi.json. Its source is
// src/server/openapi.json, compiled in; tests/unit/server/openapi_test.cpp keeps its paths and methods equal
// to the router's routes, and tests/e2e/test_openapi_schemathesis.py fuzzes the server against it.
#include <string_view>

#include <nlohmann/json.hpp>

namespace tf::server {

// The document as written in openapi.json.
std::string_view openapi_document_text();
// The document with info.version set to this build's version.
const nlohmann::ordered_json& openapi_document();

}  // namespace tf::server
