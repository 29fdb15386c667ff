#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace tf {

class Model;

// What the load-time row check found: the widest verify window (1 + drafts) whose logits equal serial
// decoding bit for bit, per tested width.
struct RowCheckReport {
  int max_window = 1;
  std::vector<std::pair<int, bool>> widths;  // (window width, bit-identical)
  // Wall time of a forward of w rows over one of 1 row, for w = 2..max_window (index w - 2), measured after
  // the check on a backend whose 1-row forward is fast (empty otherwise: timing would slow startup).
  std::vector<double> costs;
  bool shared_checked = false;    // the shared-round check ran
  std::int64_t shared_rows = 0;   // rows a shared round may hold (0: the check failed or did not run)
};

// The load-time row check (ARCHITECTURE §4). Decodes a short sequence serially, then
//  - feeds the same tokens as verify windows of each width 2..max_window and compares the logits bit for
//    bit: the report's max_window is the widest width up to which every width matched (wider windows are
//    never served);
//  - with shared_rows >= 2, runs six streams at different positions with windows of 1 to 5 rows
//    (shared_rows in all) in one forward pass (Model::forward_parts) and compares every row with serial
//    decoding: report.shared_rows is shared_rows when all matched, else 0 (one forward per stream).
RowCheckReport check_rows(Model& model, int max_window, std::int64_t shared_rows);

}  // namespace tf
