//===- TemplateLintTest.cpp - patterns the device compilers get wrong ----===//
//
// CUDA 13.0's compilers (NVRTC and nvcc V13.0.88) initialise only the first
// inner array of a multi-dimensional array of a struct with default member
// initializers and zero the rest: `struct S { float m = -3.0f; }; S r[4][2];`
// starts r[1..3][*].m at 0. The sm_80 decode's RowState rows[kRowTiles][2]
// gave wrong outputs that way (bench/notes/portable-nvidia.md). Structs in
// templates that need an array of more than one dimension take a
// constructor; this test keeps it so.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Templates/Templates.h"

#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Structs whose members have default initializers ("float max = kNegInf;"
// or "int n{3};" at the struct's member indentation).
std::set<std::string> structsWithDefaultInitializers(const std::string &text) {
  static const std::regex head(R"(^( *)struct (?:alignas\(\d+\) )?(\w+) \{)");
  static const std::regex member(
      R"(^ *(?!static|constexpr|using|typedef|return)[A-Za-z_][\w:<>, ]*[\w>] +[A-Za-z_]\w*(\[[^\]]*\])* *(=|\{)[^;]*;)");
  std::set<std::string> found;
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, head))
      continue;
    const std::string indent = m[1], name = m[2];
    const std::string memberIndent = indent + "  ";
    for (size_t j = i + 1; j < lines.size(); ++j) {
      if (lines[j].rfind(indent + "};", 0) == 0)
        break;
      const bool atMemberLevel =
          lines[j].rfind(memberIndent, 0) == 0 &&
          lines[j].size() > memberIndent.size() &&
          lines[j][memberIndent.size()] != ' ';
      if (atMemberLevel && std::regex_search(lines[j], member))
        found.insert(name);
    }
  }
  return found;
}

// "path: declaration" for each array of two or more dimensions of one of
// `structs` in `text`.
std::vector<std::string> multiDimensionalArrays(const std::string &path,
                                                const std::string &text,
                                                const std::set<std::string> &structs) {
  static const std::regex comment("//[^\n]*");
  const std::string code = std::regex_replace(text, comment, "");
  std::vector<std::string> found;
  for (const std::string &name : structs) {
    const std::regex array("\\b" + name + R"(\s+\w+\s*\[[^\]]+\]\s*\[)");
    for (std::sregex_iterator it(code.begin(), code.end(), array), end;
         it != end; ++it)
      found.push_back(path + ": " + it->str());
  }
  return found;
}

std::vector<std::string> lint(const std::map<std::string, std::string> &files) {
  std::set<std::string> structs;
  for (const auto &[path, text] : files)
    for (const std::string &name : structsWithDefaultInitializers(text))
      structs.insert(name);
  std::vector<std::string> found;
  for (const auto &[path, text] : files)
    for (const std::string &hit : multiDimensionalArrays(path, text, structs))
      found.push_back(hit);
  return found;
}

} // namespace

TEST_CASE("the lint finds a 2-D array of a struct with default member "
          "initializers",
          "[templates]") {
  const std::string bad = "struct RowState {\n"
                          "  float max = kNegInf;\n"
                          "  float sum = 0.0f;\n"
                          "  MLAGEN_DEVICE float update(float x) {\n"
                          "    float m = x;\n"
                          "    return m;\n"
                          "  }\n"
                          "};\n"
                          "void f() {\n"
                          "  RowState rows[kRowTiles][2];\n"
                          "  RowState one[4];\n"
                          "  // RowState commented[4][2];\n"
                          "}\n";
  std::vector<std::string> found = lint({{"bad.hip", bad}});
  REQUIRE(found.size() == 1);
  CHECK(found[0] == "bad.hip: RowState rows[kRowTiles][");

  // A constructor instead: nothing to find (a local in a member function
  // is not a default member initializer).
  const std::string good = "struct RowState {\n"
                           "  float max;\n"
                           "  MLAGEN_DEVICE RowState() : max(kNegInf) {}\n"
                           "  MLAGEN_DEVICE float update(float x) {\n"
                           "    float m = x;\n"
                           "    return m;\n"
                           "  }\n"
                           "};\n"
                           "RowState rows[kRowTiles][2];\n";
  CHECK(lint({{"good.hip", good}}).empty());
}

TEST_CASE("no template declares a multi-dimensional array of a struct with "
          "default member initializers",
          "[templates]") {
  std::map<std::string, std::string> files;
  for (std::string_view path : mlagen::templates::paths())
    files[std::string(path)] = std::string(*mlagen::templates::lookup(path));
  REQUIRE(files.count("kernels/mla_decode.hip") == 1);
  REQUIRE(files.count("kernels/prefill.hip") == 1);
  std::vector<std::string> found = lint(files);
  std::string report;
  for (const std::string &hit : found)
    report += hit + "\n";
  INFO(report);
  CHECK(found.empty());
}

TEST_CASE("every part a kernel template splices in is embedded and holds no "
          "placeholder",
          "[templates]") {
  // templates/CONTRACT.md: @@MLAGEN_PART_NAME@@ in kernels/T.hip stands for
  // kernels/T/name.hip.
  static const std::regex part(R"(@@MLAGEN_PART_([A-Z0-9_]+)@@)");
  static const std::regex placeholder(R"(@@[A-Za-z0-9_]+@@)");
  std::set<std::string> parts, spliced;
  for (std::string_view view : mlagen::templates::paths()) {
    const std::string path(view);
    const std::string text(*mlagen::templates::lookup(view));
    const size_t slash = path.rfind('/');
    if (path.rfind("kernels/", 0) == 0 && slash != std::string("kernels").size())
      parts.insert(path); // a file in a template's folder
    for (std::sregex_iterator it(text.begin(), text.end(), part), end; it != end; ++it) {
      std::string name = (*it)[1];
      for (char &c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::string file = path.substr(0, path.rfind('.')) + "/" + name + ".hip";
      INFO(path << " names " << it->str());
      CHECK(mlagen::templates::lookup(file).has_value());
      spliced.insert(file);
    }
  }
  // Each part is spliced by its template, and has no placeholder itself.
  REQUIRE(parts.count("kernels/mla_decode/warpgroup_consume_rows.hip") == 1);
  CHECK(parts == spliced);
  for (const std::string &path : parts) {
    const std::string text(*mlagen::templates::lookup(path));
    INFO(path);
    CHECK_FALSE(std::regex_search(text, placeholder));
  }
}
