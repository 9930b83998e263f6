// libstepscope_http.so: cpp-httplib behind `stepscope serve`'s own HTTP interface (serve/http.hpp).
// Each callback sees the library's request and response as ours and writes ours back, so the
// server's code holds no type of the library.
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "serve/http.hpp"

namespace stepscope::http {
namespace {

Request ours(const httplib::Request& r) {
  Request q;
  q.method = r.method;
  q.path = r.path;
  q.target = r.target;
  q.remote_addr = r.remote_addr;
  q.headers.insert(r.headers.begin(), r.headers.end());
  q.params.insert(r.params.begin(), r.params.end());
  for (const auto& m : r.matches) q.matches.push_back(m.str());
  return q;
}

Response ours(const httplib::Response& r) {
  Response s;
  s.status = r.status;
  s.body = r.body;
  s.headers.insert(r.headers.begin(), r.headers.end());
  return s;
}

void write_back(Response&& s, httplib::Response& r) {
  r.status = s.status;
  r.headers.clear();
  r.headers.insert(s.headers.begin(), s.headers.end());
  r.body = std::move(s.body);
  if (!s.provider) return;
  // set_content_provider sets the Content-Type again: the one ours holds is taken out first.
  std::string type;
  if (auto it = r.headers.find("Content-Type"); it != r.headers.end()) type = it->second, r.headers.erase(it);
  r.set_content_provider(s.provided_size, type,
                         [p = std::move(s.provider)](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                           return p(offset, length, [&sink](const char* d, std::size_t n) { sink.write(d, n); });
                         });
}

// Runs `f` on our view of (req, res) and writes the response back.
template <class F>
auto through(const httplib::Request& req, httplib::Response& res, F&& f) {
  const Request q = ours(req);
  Response s = ours(res);
  if constexpr (std::is_void_v<decltype(f(q, s))>) {
    f(q, s);
    write_back(std::move(s), res);
  } else {
    auto out = f(q, s);
    write_back(std::move(s), res);
    return out;
  }
}

class HttplibServer final : public Server {
 public:
  HttplibServer(const Settings& s, Routes&& r) : routes_(std::move(r)) {
    const std::size_t threads = s.threads;
    svr_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    svr_.set_payload_max_length(s.max_payload);
    svr_.set_read_timeout(s.read_timeout_s, 0);
    svr_.set_write_timeout(s.write_timeout_s, 0);
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const bool go_on = through(req, res, routes_.before);
      return go_on ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
    });
    for (const auto& [pattern, handler] : routes_.gets)
      svr_.Get(pattern, [&h = handler](const httplib::Request& req, httplib::Response& res) { through(req, res, h); });
    svr_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) { through(req, res, routes_.error); });
    svr_.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      through(req, res, [&](const Request& q, Response& out) { routes_.exception(q, out, ep); });
    });
    svr_.set_logger([this](const httplib::Request& req, const httplib::Response& res) { routes_.log(ours(req), ours(res)); });
    svr_.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      // Accepted sockets inherit it: without it a keep-alive client waits out Nagle against its
      // delayed ACK (~40 ms) on every response, which the library sends in two writes.
      const int on = 1;
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      listener_ = sock;
    });
  }

  int bind(const std::string& host, int port) override {
    const int bound = port == 0 ? svr_.bind_to_any_port(host) : (svr_.bind_to_port(host, port) ? port : -1);
    // The library listens with a backlog of 5: a page that opens many connections at once (or a
    // burst of clients) would have some of them dropped by the kernel and stall for seconds.
    // Calling listen() again on the socket raises the backlog.
    if (bound >= 0 && listener_ >= 0) ::listen(listener_, SOMAXCONN);
    return bound;
  }
  void listen() override { svr_.listen_after_bind(); }
  void stop() override { svr_.stop(); }

 private:
  Routes routes_;  // the library's handlers call these: declared before the server
  httplib::Server svr_;
  int listener_ = -1;
};

}  // namespace
}  // namespace stepscope::http

extern "C" __attribute__((visibility("default"))) stepscope::http::Server* stepscope_http_make_server(
    const stepscope::http::Settings& s, stepscope::http::Routes&& routes) {
  return new stepscope::http::HttplibServer(s, std::move(routes));
}
