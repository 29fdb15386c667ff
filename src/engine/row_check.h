#pragma once
#include <vector>

namespace tf {

class Model;
struct RowCheckReport;

// The load-time row check (ARCHITECTURE §4): decodes a short sequence serially, then feeds the same tokens
// as verify windows of each width 2..max_window, and compares the logits bit for bit. The report's
// max_window is the widest width up to which every width matched; wider windows are never served.
RowCheckReport check_verify_rows(Model& model, int max_window);

}  // namespace tf
