//===- Templates.h - device code templates embedded at build time -*- C++ -*-===//
//
// Every file under templates/kernels and templates/prelude is compiled into
// the library, so a JIT needs no files on disk.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEMPLATES_TEMPLATES_H
#define MLAGEN_TEMPLATES_TEMPLATES_H

#include <optional>
#include <string_view>
#include <vector>

namespace mlagen::templates {

// The content of a template by its path under templates/, such as
// "kernels/prefill.hip" or "prelude/nvidia.h".
std::optional<std::string_view> lookup(std::string_view path);

// Every template's path, sorted.
std::vector<std::string_view> paths();

// SHA-256 (hex) over all template paths and contents.
std::string_view contentHash();

} // namespace mlagen::templates

#endif // MLAGEN_TEMPLATES_TEMPLATES_H
