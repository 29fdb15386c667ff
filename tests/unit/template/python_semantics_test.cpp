// Python semantics the interpreter reproduces: repr, float formatting, Unicode case mapping, number
// parsing, json.dumps.
#include <gtest/gtest.h>

#include <cmath>

#include "text/template/pyformat.h"
#include "text/template/unicode.h"
#include "text/template/value.h"

namespace tf::jinja {
namespace {

TEST(PythonFloatRepr, ShortestRoundTripWithPythonLayout) {
  EXPECT_EQ(float_repr(0.0), "0.0");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00001), "1e-05");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(123.456), "123.456");
  EXPECT_EQ(float_repr(INFINITY), "inf");
  EXPECT_EQ(float_repr(NAN), "nan");
}

TEST(PythonRepr, StringsChooseQuotesAndEscapeLikePython) {
  EXPECT_EQ(py_repr(Value("it's")), "\"it's\"");
  EXPECT_EQ(py_repr(Value("both ' and \"")), "'both \\' and \"'");
  EXPECT_EQ(py_repr(Value("tab\tnl\n\x01\x7f\\")), "'tab\\tnl\\n\\x01\\x7f\\\\'");
  EXPECT_EQ(py_repr(Value("é日😀")), "'é日😀'");
  EXPECT_EQ(py_repr(Value("\xC2\xA0\xC2\xAD\xE2\x80\xA8")), "'\\xa0\\xad\\u2028'");  // not printable
  EXPECT_EQ(py_repr(Value::markup("<b>")), "Markup('<b>')");
  EXPECT_EQ(py_repr(Value::tuple({Value(1)})), "(1,)");
}

TEST(PythonEquality, NumbersCompareExactlyAcrossTypes) {
  EXPECT_TRUE(py_eq(Value(1), Value(1.0)));
  EXPECT_TRUE(py_eq(Value(true), Value(1)));
  EXPECT_FALSE(py_eq(Value(std::int64_t{9007199254740993}), Value(9007199254740992.0)));
  EXPECT_FALSE(py_eq(Value("1"), Value(1)));
  EXPECT_FALSE(py_eq(Value::list({Value(1)}), Value::tuple({Value(1)})));
  EXPECT_TRUE(py_eq(Value::undefined("a"), Value::undefined("b")));
  EXPECT_TRUE(py_compare(Value::list({Value(1), Value(2)}), Value::list({Value(1), Value(3)}), "lt"));
}

TEST(PythonUnicode, CaseMappingsAreFullAndContextual) {
  EXPECT_EQ(uni::upper("straße ǆ ﬁ"), "STRASSE Ǆ FI");
  EXPECT_EQ(uni::lower("ΣΑΣ ΟΔΟΣ."), "σας οδος.");
  EXPECT_EQ(uni::lower("İ"), "i\xCC\x87");
  EXPECT_EQ(uni::title("hello wORLD ǆx"), "Hello World ǅx");
  EXPECT_EQ(uni::capitalize("ǆUNGLE"), "ǅungle");
  EXPECT_TRUE(uni::is_space(0x3000));
  EXPECT_FALSE(uni::is_space(0x200B));
  EXPECT_EQ(uni::length("a😀é"), 3u);
}

TEST(PythonNumbers, IntAndFloatParsing) {
  EXPECT_EQ(parse_py_int(" 42 ", 10), 42);
  EXPECT_EQ(parse_py_int("-1_000", 10), -1000);
  EXPECT_EQ(parse_py_int("0x1f", 16), 31);
  EXPECT_EQ(parse_py_int("0x1f", 0), 31);
  EXPECT_EQ(parse_py_int("٤٢", 10), 42);  // Unicode decimal digits
  EXPECT_FALSE(parse_py_int("1__0", 10).has_value());
  EXPECT_FALSE(parse_py_int("010", 0).has_value());
  EXPECT_FALSE(parse_py_int("", 10).has_value());
  EXPECT_EQ(parse_py_float("1e3"), 1000.0);
  EXPECT_EQ(parse_py_float(" -2.5 "), -2.5);
  EXPECT_TRUE(std::isinf(*parse_py_float("Infinity")));
  EXPECT_FALSE(parse_py_float("1.2.3").has_value());
  EXPECT_FALSE(parse_py_float("_1").has_value());
}

}  // namespace
}  // namespace tf::jinja
