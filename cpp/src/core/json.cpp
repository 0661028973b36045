#include "core/json.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace hetnn::json {

const Value* Value::get(const std::string& key) const {
  const Object* o = object();
  if (!o) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &it->second;
}

namespace {

struct Parser {
  const std::string& s;
  std::size_t i = 0;
  int max_depth;

  [[noreturn]] void fail(const std::string& what) const {
    throw ValueError("JSON: " + what + " at offset " + std::to_string(i));
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  void expect(const char* word) {
    for (const char* p = word; *p; ++p, ++i)
      if (i >= s.size() || s[i] != *p) fail(std::string("expected '") + word + "'");
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  unsigned hex4() {
    if (i + 4 > s.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k, ++i) {
      const char c = s[i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string str() {
    if (!eat('"')) fail("expected a string");
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      const char c = s[i++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      switch (s[i++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') {
            i += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  double num() {
    const std::size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' ||
                            s[i] == 'E' || s[i] == '+' || s[i] == '-'))
      ++i;
    const std::string text = s.substr(start, i - start);
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(d)) fail("bad number");
    return d;
  }
  Value value(int depth) {
    if (depth > max_depth) fail("nested deeper than " + std::to_string(max_depth));
    ws();
    if (i >= s.size()) fail("unexpected end");
    const char c = s[i];
    if (c == '{') {
      ++i;
      Object o;
      if (eat('}')) return o;
      do {
        std::string k = str();
        if (!eat(':')) fail("expected ':'");
        o[std::move(k)] = value(depth + 1);
      } while (eat(','));
      if (!eat('}')) fail("expected ',' or '}'");
      return o;
    }
    if (c == '[') {
      ++i;
      Array a;
      if (eat(']')) return a;
      do a.push_back(value(depth + 1));
      while (eat(','));
      if (!eat(']')) fail("expected ',' or ']'");
      return a;
    }
    if (c == '"') return str();
    if (c == 't') return expect("true"), Value(true);
    if (c == 'f') return expect("false"), Value(false);
    if (c == 'n') return expect("null"), Value(nullptr);
    return num();
  }
};

void dump_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void dump_to(std::string& out, const Value& v) {
  if (std::holds_alternative<std::nullptr_t>(v.v)) {
    out += "null";
  } else if (const bool* b = std::get_if<bool>(&v.v)) {
    out += *b ? "true" : "false";
  } else if (const double* d = v.number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    out += buf;
  } else if (const std::string* s = v.string()) {
    dump_string(out, *s);
  } else if (const Array* a = std::get_if<Array>(&v.v)) {
    out += '[';
    for (std::size_t k = 0; k < a->size(); ++k) {
      if (k) out += ", ";
      dump_to(out, (*a)[k]);
    }
    out += ']';
  } else {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : *v.object()) {
      if (!first) out += ", ";
      first = false;
      dump_string(out, k);
      out += ": ";
      dump_to(out, x);
    }
    out += '}';
  }
}

}  // namespace

Value parse(const std::string& text, int max_depth) {
  Parser p{text, 0, max_depth};
  Value v = p.value(0);
  p.ws();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

std::string dump(const Value& value) {
  std::string out;
  dump_to(out, value);
  return out;
}

}  // namespace hetnn::json
