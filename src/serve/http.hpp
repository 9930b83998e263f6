// The HTTP side of `stepscope serve`, behind an interface of our own: the server (cpp-httplib) is
// a plugin, libstepscope_http.so, loaded when `serve` starts. Linked into the binary, cpp-httplib
// brought OpenSSL's libssl and libcrypto into every command and initialised them before main
// (3.5 MiB of the resident size of `analyze`, 8% of its peak on a 107 MB trace) for a server
// that speaks plain HTTP.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stepscope::http {

struct Request {
  std::string method, path, target, remote_addr;
  std::multimap<std::string, std::string> headers, params;
  std::vector<std::string> matches;  // the route pattern's groups, [0] the whole path

  // The first value of a header (names compared without case), or "".
  std::string get_header_value(const std::string& name) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name) const;
};

// Writes `length` bytes of a streamed body from `offset` through `write`; false ends the response.
using Writer = std::function<void(const char* data, std::size_t size)>;
using ContentProvider = std::function<bool(std::size_t offset, std::size_t length, const Writer& write)>;

struct Response {
  int status = -1;  // -1: no handler set one (200 once a route answered)
  std::string body;
  std::multimap<std::string, std::string> headers;
  std::size_t provided_size = 0;
  ContentProvider provider;  // a streamed body of provided_size bytes, instead of body

  void set_header(const std::string& name, const std::string& value) { headers.emplace(name, value); }
  void set_content(const std::string& text, const std::string& content_type);
  void set_content_provider(std::size_t size, const std::string& content_type, ContentProvider p);
};

using Handler = std::function<void(const Request&, Response&)>;

struct Settings {
  std::size_t threads = 8;
  std::size_t max_payload = 4096;
  long read_timeout_s = 5, write_timeout_s = 30;
};

struct Routes {
  std::function<bool(const Request&, Response&)> before;  // false: answered already, no route runs
  std::vector<std::pair<std::string, Handler>> gets;       // path pattern (a regex), handler
  Handler error;                                            // a status of 400 and up
  std::function<void(const Request&, Response&, std::exception_ptr)> exception;
  std::function<void(const Request&, const Response&)> log;
};

class Server {
 public:
  virtual ~Server() = default;
  // Binds `host`:`port` (0: any free port) with TCP_NODELAY and a full listen backlog; the port,
  // or -1 when it cannot.
  virtual int bind(const std::string& host, int port) = 0;
  virtual void listen() = 0;  // until stop()
  virtual void stop() = 0;
};

// The server of the plugin beside the binary (or in its library folder once installed); an
// InputError naming the file when it cannot be loaded.
std::unique_ptr<Server> make_server(const Settings& s, Routes routes);

// The plugin's one entry point.
using MakeServerFn = Server* (*)(const Settings&, Routes&&);
inline constexpr const char* kMakeServerSymbol = "stepscope_http_make_server";

}  // namespace stepscope::http
