// Our side of the HTTP interface, and the loading of the server plugin.
#include "serve/http.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <strings.h>

#include "stepscope/error.hpp"

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

constexpr const char* kPlugin = "libstepscope_http.so";

// Beside the binary (the build folder), then in the library folder an install puts it in.
std::vector<std::filesystem::path> plugin_candidates() {
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {kPlugin};
  return {bin / kPlugin, bin / STEPSCOPE_HTTP_PLUGIN_FROM_BIN / kPlugin};
}

MakeServerFn load_plugin() {
  std::string why;
  for (const auto& path : plugin_candidates()) {
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process's life
    if (!lib) {
      if (why.empty() || std::filesystem::exists(path)) why = ::dlerror();
      continue;
    }
    if (auto* make = reinterpret_cast<MakeServerFn>(::dlsym(lib, kMakeServerSymbol))) return make;
    why = path.string() + ": no " + kMakeServerSymbol;
  }
  throw InputError("serve: cannot load the HTTP server (" + std::string(kPlugin) + ", beside the binary or in " +
                   STEPSCOPE_HTTP_PLUGIN_FROM_BIN + " from it): " + why);
}

}  // namespace

std::unique_ptr<Server> make_server(const Settings& s, Routes routes) {
  static const MakeServerFn make = load_plugin();
  return std::unique_ptr<Server>(make(s, std::move(routes)));
}

}  // namespace stepscope::http
