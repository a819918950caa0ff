#include "llm/prompt_files.h"

#include <cctype>
#include <memory>

#include <fmt/format.h>

#include "util/error.h"

namespace kf::llm {
namespace {

// Parses "<!-- kforge prompt NAME, version N ... -->\n" off the front of an embedded file.
prompt_file parse(const embedded_prompt& e) {
  const std::string_view text = e.text;
  const std::string_view lead = "<!-- kforge prompt ";
  KF_ASSERT(text.starts_with(lead), "{}: does not open with `{}NAME, version N`", e.path, lead);
  const size_t comma = text.find(", version ");
  const size_t close = text.find("-->\n");
  KF_ASSERT(comma != std::string_view::npos && close != std::string_view::npos && comma < close,
            "{}: its opening comment lacks `, version N` or `-->`", e.path);
  prompt_file f;
  f.name = std::string(text.substr(lead.size(), comma - lead.size()));
  size_t at = comma + std::string_view(", version ").size();
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) f.version = f.version * 10 + (text[at++] - '0');
  KF_ASSERT(f.version > 0, "{}: version must be a positive number", e.path);
  f.text = std::string(text.substr(close + 4));
  return f;
}

const std::vector<std::unique_ptr<prompt_file>>& parsed() {
  static const auto table = [] {
    std::vector<std::unique_ptr<prompt_file>> out;
    for (auto& e : embedded_prompt_table()) out.push_back(std::make_unique<prompt_file>(parse(e)));
    return out;
  }();
  return table;
}

bool blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t') return false;
  return true;
}

// Drops the line around each section tag that stands alone on its line (indentation, the tag, the newline).
std::string drop_standalone_tags(std::string_view t) {
  std::string out;
  size_t pos = 0;
  while (pos < t.size()) {
    size_t nl = t.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? t.size() : nl + 1;
    std::string_view line = t.substr(pos, end - pos);
    std::string_view body = line;
    if (body.ends_with('\n')) body.remove_suffix(1);
    const size_t open = body.find("{{"), close = body.find("}}");
    const bool section = open != std::string_view::npos && close != std::string_view::npos && close > open + 2 &&
                         (body[open + 2] == '#' || body[open + 2] == '^' || body[open + 2] == '/');
    if (section && blank(body.substr(0, open)) && blank(body.substr(close + 2)) &&
        body.find("{{", open + 2) == std::string_view::npos)
      out += body.substr(open, close + 2 - open);  // the tag alone, without its line
    else
      out += line;
    pos = end;
  }
  return out;
}

std::string render_part(std::string_view t, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t pos = 0;
  auto value = [&](const std::string& name) -> const std::string& {
    auto it = vars.find(name);
    KF_ASSERT(it != vars.end(), "prompt template names {{{{{}}}}}, which the request does not fill", name);
    return it->second;
  };
  for (;;) {
    const size_t open = t.find("{{", pos);
    if (open == std::string_view::npos) {
      out += t.substr(pos);
      return out;
    }
    out += t.substr(pos, open - pos);
    const size_t close = t.find("}}", open);
    KF_ASSERT(close != std::string_view::npos, "prompt template: `{{{{` without `}}}}`");
    const std::string tag(t.substr(open + 2, close - open - 2));
    KF_ASSERT(!tag.empty() && tag[0] != '/', "prompt template: `{{{{{}}}}}` closes no section", tag);
    if (tag[0] == '#' || tag[0] == '^') {
      const std::string name = tag.substr(1);
      const std::string end_tag = "{{/" + name + "}}";
      const size_t end = t.find(end_tag, close + 2);
      KF_ASSERT(end != std::string_view::npos, "prompt template: section {} is not closed", name);
      const bool show = (tag[0] == '#') != value(name).empty();
      if (show) out += render_part(t.substr(close + 2, end - close - 2), vars);
      pos = end + end_tag.size();
    } else {
      out += value(tag);
      pos = close + 2;
    }
  }
}

}  // namespace

const prompt_file& prompt(std::string_view name) {
  for (auto& p : parsed())
    if (p->name == name) return *p;
  KF_ASSERT(false, "no prompt {} is embedded (CMakeLists.txt: add prompts/{}.md to KF_EMBEDDED_PROMPTS)", name, name);
}

std::vector<const prompt_file*> prompts() {
  std::vector<const prompt_file*> out;
  for (auto& p : parsed()) out.push_back(p.get());
  return out;
}

std::string prompt_versions(const std::vector<std::string_view>& names) {
  std::string s;
  for (auto n : names) s += fmt::format("{}{}:{}", s.empty() ? "" : " ", n, prompt(n).version);
  return s;
}

std::string render(std::string_view tmpl, const std::map<std::string, std::string>& vars) {
  return render_part(drop_standalone_tags(tmpl), vars);
}

}  // namespace kf::llm
