#pragma once
// The parser of each format (one file each); make_tool_call_parser() picks among them.
#include <memory>
#include <vector>

#include "text/tool_calls/tool_call_parser.h"

namespace tf::tools {

std::unique_ptr<ToolCallParser> make_hermes_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_xml_function_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_llama3_json_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_glm_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_gemma4_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_deepseek_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_nemotron_parser(std::vector<ToolSpec> tools);
std::unique_ptr<ToolCallParser> make_dsml_parser(std::vector<ToolSpec> tools);

}  // namespace tf::tools
