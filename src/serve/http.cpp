// Our side of the HTTP interface, and the loading of the server plugin.
#include "serve/http.hpp"

#include <strings.h>

#include "stepscope/plugin.hpp"

#ifndef STEPSCOPE_HTTP_PLUGIN_FROM_BIN
#define STEPSCOPE_HTTP_PLUGIN_FROM_BIN "../lib/stepscope"
#endif

namespace stepscope::http {

std::string Request::get_header_value(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (::strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  return {};
}

std::string Request::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

void Response::set_content(const std::string& text, const std::string& content_type) {
  body = text;
  headers.erase("Content-Type");
  set_header("Content-Type", content_type);
}

void Response::set_content_provider(std::size_t size, const std::string& content_type, ContentProvider p) {
  provided_size = size;
  provider = std::move(p);
  headers.erase("Content-Type");
  set_header("Content-Type", content_type);
}

namespace {

MakeServerFn load_plugin() {
  return reinterpret_cast<MakeServerFn>(plugin_entry("libstepscope_http.so", STEPSCOPE_HTTP_PLUGIN_FROM_BIN, kMakeServerSymbol,
                                                     RTLD_NOW | RTLD_LOCAL, "serve: cannot load the HTTP server"));
}

}  // namespace

std::unique_ptr<Server> make_server(const Settings& s, Routes routes) {
  static const MakeServerFn make = load_plugin();
  return std::unique_ptr<Server>(make(s, std::move(routes)));
}

}  // namespace stepscope::http
