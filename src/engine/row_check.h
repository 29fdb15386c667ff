#pragma once
#include <cstdint>
#include <vector>

namespace tf {

class Model;
struct RowCheckReport;

// The load-time row check (ARCHITECTURE §4). Decodes a short sequence serially, then
//  - feeds the same tokens as verify windows of each width 2..max_window and compares the logits bit for
//    bit: the report's max_window is the widest width up to which every width matched (wider windows are
//    never served);
//  - with shared_rows >= 2, runs six streams at different positions with windows of 1 to 5 rows
//    (shared_rows in all) in one forward pass (Model::forward_parts) and compares every row with serial
//    decoding: report.shared_rows is shared_rows when all matched, else 0 (one forward per stream).
RowCheckReport check_rows(Model& model, int max_window, std::int64_t shared_rows);

}  // namespace tf
