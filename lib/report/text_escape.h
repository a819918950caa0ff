// Escaping for the report formats. Reports carry untrusted text (compiler output, kernel sources, worker
// messages): every byte that reaches XML, HTML or Markdown goes through one of these.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kf {

// Replaces invalid UTF-8 sequences with U+FFFD; keeps valid text as is.
std::string valid_utf8(std::string_view s);
// XML 1.0 text and attribute values: & < > " ' escaped, characters XML forbids (most C0 controls)
// replaced by U+FFFD, invalid UTF-8 repaired. Newlines and tabs kept (as &#10; / &#9; in attributes).
std::string xml_escape(std::string_view s, bool attribute = false);
// HTML text and attributes (same rules as xml_escape for attributes).
std::string html_escape(std::string_view s);
// Text inside a Markdown table cell: pipes, backticks and angle brackets neutralized, newlines folded.
std::string md_cell(std::string_view s);
// JSON embedded in a <script> element: "</" and U+2028/9 escaped so the text cannot close the element.
std::string script_safe_json(std::string_view json);

// JSON text that never throws on invalid UTF-8 inside strings (replaced by U+FFFD).
std::string safe_dump(const nlohmann::json& j, int indent = -1);

// Duration for people: "3.52", "41.7", "1 204" (microseconds; unit added by the caller).
std::string format_us(double us);

}  // namespace kf
