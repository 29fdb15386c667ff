#pragma once
// One call written as a JSON object, {"name": NAME, "arguments": {...}} ("parameters" also names the
// arguments), read incrementally: the formats that wrap such objects (Hermes, Nemotron, Llama 3) frame it.
// When the object starts with "name" and then the arguments object, the call starts as soon as the name is
// read and the arguments stream byte by byte while they are still JSON. Any other shape (keys in another
// order, arguments as a JSON string) is read whole and then started.
#include <string>

#include "text/tool_calls/json_scanner.h"
#include "text/tool_calls/parser_base.h"

namespace tf::tools {

class JsonCallParser : public ParserBase {
 public:
  using ParserBase::ParserBase;

 protected:
  enum class Read { More, Done, Failed };
  // With the read position at the object's first byte (whitespace before it skipped by the caller) and a
  // call begun (begin_call): reads on. Done: the call ended (CallEnd sent); Failed: fail_call() was done.
  Read read_call_object();
  void reset_call_object();
  // For formats that frame the name themselves: after start_call(), with the read position at the arguments
  // object, streams it. Done: the object is complete (the call is not ended); Failed: fail_call() was done.
  Read read_bare_arguments();
  // Past the header: the object's bytes are being read (whitespace is then part of it).
  bool reading_object() const { return phase_ != Phase::Header; }

 private:
  enum class Phase { Header, Arguments, Tail, Whole };
  Phase phase_ = Phase::Header;
  JsonScanner outer_{true};
  JsonScanner inner_{true};
  std::string whole_;
  Read read_header();
  Read read_arguments();
  Read read_tail();
  Read read_whole();
};

}  // namespace tf::tools
