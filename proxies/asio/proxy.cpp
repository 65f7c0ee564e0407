// proxies/asio/proxy.cpp - stackmeter's own TCP proxy on Boost.Asio, built
// to race SolidFrame's relay (proxies/solidframe) fairly, so that a
// comparison of the two measures the libraries and not two designs.
//
// It copies the relay's design: one event loop per thread (an io_context
// each, one thread each, N = the CPUs by default, like SolidFrame's reactor
// per core), the listener on the first loop and each accepted connection
// handed to the next loop in turn, where it lives with its upstream
// connection until both close (no locks, no strands); two 4 KiB buffers
// per pair, one per direction (the relay's BufferCapacity); TCP_NODELAY
// on both sides; in each direction read some, write it all, read again.
//
// Beyond the relay: a half-close is forwarded (end of stream from one side
// shuts down writes to the other; the pair closes when both directions
// ended), an error on either side resets both, the upstream connect is
// bounded by a timeout, an accept failure (e.g. out of file descriptors)
// is retried instead of stopping the listener, and SIGINT/SIGTERM stop it
// cleanly.
//
// Usage: asio --listen HOST:PORT --forward HOST:PORT [--threads N]
//             [--connect-timeout SECONDS]
//
// SPDX-License-Identifier: MIT OR Apache-2.0

#include <boost/asio.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// The SolidFrame relay's buffer: 4 KiB per direction.
constexpr std::size_t kBufferSize = 4 * 1024;
// How long an accept failure (e.g. EMFILE) waits before the next accept.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

struct Options {
    std::string listen;
    std::string forward;
    unsigned threads = 0;
    int connect_timeout_s = 5;
};

// Counters printed when the proxy stops, and for rate-limited warnings.
std::atomic<unsigned long> g_accepted{0};
std::atomic<unsigned long> g_connect_failures{0};

[[noreturn]] void die(const std::string& message)
{
    std::fprintf(stderr, "asio: %s\n", message.c_str());
    std::exit(2);
}

// resolve("HOST:PORT") - the first address HOST:PORT resolves to; an IPv6
// host is written in brackets ("[::1]:8080").
tcp::endpoint resolve(asio::io_context& ctx, const std::string& what, const std::string& flag)
{
    const auto colon = what.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == what.size())
        die(flag + " " + what + ": expected HOST:PORT, e.g. 127.0.0.1:8080");
    std::string host = what.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    tcp::resolver resolver(ctx);
    error_code ec;
    const auto results = resolver.resolve(host, what.substr(colon + 1), ec);
    if (ec || results.empty())
        die(flag + " " + what + ": cannot resolve it (" + ec.message() + ")");
    return results.begin()->endpoint();
}

// A client connection and its upstream connection, relayed both ways.
// Every handler runs on the pair's one io_context thread.
class Pair : public std::enable_shared_from_this<Pair> {
public:
    Pair(tcp::socket client, const tcp::endpoint& upstream, std::chrono::seconds timeout)
        : client_(std::move(client))
        , upstream_(client_.get_executor())
        , timer_(client_.get_executor())
        , target_(upstream)
        , timeout_(timeout)
        , up_{&client_, &upstream_, {}, false}
        , down_{&upstream_, &client_, {}, false}
    {
    }

    // The loop the pair lives on.
    tcp::socket::executor_type executor() { return client_.get_executor(); }

    // Connects upstream within the timeout, then relays both ways.
    void start()
    {
        timer_.expires_after(timeout_);
        timer_.async_wait([self = shared_from_this()](error_code ec) {
            // The wait may end at the moment the connect succeeded: then the
            // cancel in connected() came too late, and the pair stays.
            if (!ec && self->connecting_) {
                self->warn_connect_failure(asio::error::timed_out);
                self->reset();
            }
        });
        upstream_.async_connect(target_, [self = shared_from_this()](error_code ec) {
            self->connected(ec);
        });
    }

private:
    // One direction: what it reads from, what it writes to, its buffer,
    // and whether its end of stream was forwarded.
    struct Direction {
        tcp::socket* from;
        tcp::socket* to;
        std::array<char, kBufferSize> buf;
        bool ended;
    };

    void connected(error_code ec)
    {
        connecting_ = false;
        timer_.cancel();
        if (closed_)
            return;
        if (ec) {
            warn_connect_failure(ec);
            reset();
            return;
        }
        upstream_.set_option(tcp::no_delay(true), ec);
        read(up_);
        read(down_);
    }

    void read(Direction& d)
    {
        d.from->async_read_some(asio::buffer(d.buf),
            [self = shared_from_this(), &d](error_code ec, std::size_t n) { self->got(d, ec, n); });
    }

    void got(Direction& d, error_code ec, std::size_t n)
    {
        if (closed_)
            return;
        if (ec == asio::error::eof) {
            end(d);
            return;
        }
        if (ec) {
            reset();
            return;
        }
        asio::async_write(*d.to, asio::buffer(d.buf.data(), n),
            [self = shared_from_this(), &d](error_code ec, std::size_t) { self->sent(d, ec); });
    }

    void sent(Direction& d, error_code ec)
    {
        if (closed_)
            return;
        if (ec) {
            reset();
            return;
        }
        read(d);
    }

    // End of stream on d.from: forward it as a shutdown of d.to's writes;
    // close the pair once both directions ended.
    void end(Direction& d)
    {
        error_code ec;
        d.to->shutdown(tcp::socket::shutdown_send, ec);
        d.ended = true;
        if (ec) {
            reset();
            return;
        }
        if (up_.ended && down_.ended)
            close();
    }

    // A clean close of both connections (both ended their streams).
    void close()
    {
        closed_ = true;
        error_code ec;
        timer_.cancel();
        client_.close(ec);
        upstream_.close(ec);
    }

    // An error on either side: both connections are reset (SO_LINGER 0),
    // so the other peer sees the failure and not a clean end of stream.
    void reset()
    {
        if (closed_)
            return;
        error_code ec;
        for (tcp::socket* s : {&client_, &upstream_}) {
            if (s->is_open())
                s->set_option(asio::socket_base::linger(true, 0), ec);
        }
        close();
    }

    void warn_connect_failure(error_code ec) const
    {
        const unsigned long n = ++g_connect_failures;
        if ((n & (n - 1)) == 0) // the 1st, 2nd, 4th, 8th... failure
            std::fprintf(stderr, "asio: connect to %s:%u failed: %s (%lu so far)\n",
                target_.address().to_string().c_str(), target_.port(), ec.message().c_str(), n);
    }

    tcp::socket client_;
    tcp::socket upstream_;
    asio::steady_timer timer_;
    tcp::endpoint target_;
    std::chrono::seconds timeout_;
    Direction up_;   // client -> upstream
    Direction down_; // upstream -> client
    bool connecting_ = true;
    bool closed_ = false;
};

// The listener: accepts on the first loop, hands each connection to the
// next loop in turn.
class Listener {
public:
    Listener(std::vector<std::unique_ptr<asio::io_context>>& loops, const tcp::endpoint& at,
        const tcp::endpoint& upstream, std::chrono::seconds timeout)
        : loops_(loops)
        , acceptor_(*loops.front())
        , retry_(*loops.front())
        , upstream_(upstream)
        , timeout_(timeout)
    {
        error_code ec;
        acceptor_.open(at.protocol(), ec);
        if (!ec)
            acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
        if (!ec)
            acceptor_.bind(at, ec);
        if (!ec)
            acceptor_.listen(asio::socket_base::max_listen_connections, ec);
        if (ec)
            die("cannot listen on " + at.address().to_string() + ":" + std::to_string(at.port()) + ": " + ec.message());
    }

    void accept()
    {
        asio::io_context& loop = *loops_[next_];
        next_ = (next_ + 1) % loops_.size();
        acceptor_.async_accept(loop, [this](error_code ec, tcp::socket s) { accepted(ec, std::move(s)); });
    }

private:
    void accepted(error_code ec, tcp::socket s)
    {
        if (ec == asio::error::operation_aborted)
            return;
        if (ec) {
            retry_later(ec);
            return;
        }
        ++g_accepted;
        s.set_option(tcp::no_delay(true), ec);
        auto pair = std::make_shared<Pair>(std::move(s), upstream_, timeout_);
        asio::post(pair->executor(), [pair] { pair->start(); });
        accept();
    }

    // Out of file descriptors or memory: accepting again at once would
    // fail again at once, so wait a little. Other failures (a connection
    // reset before it was accepted) accept again at once.
    void retry_later(error_code ec)
    {
        const bool exhausted = ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space
            || ec == asio::error::no_memory || ec.value() == ENFILE;
        if (!exhausted) {
            accept();
            return;
        }
        std::fprintf(stderr, "asio: accept failed: %s; retrying in %lld ms\n", ec.message().c_str(),
            static_cast<long long>(kAcceptRetry.count()));
        retry_.expires_after(kAcceptRetry);
        retry_.async_wait([this](error_code wait_ec) {
            if (!wait_ec)
                accept();
        });
    }

    std::vector<std::unique_ptr<asio::io_context>>& loops_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    tcp::endpoint upstream_;
    std::chrono::seconds timeout_;
    std::size_t next_ = 0;
};

void usage(FILE* to)
{
    std::fputs("usage: asio --listen HOST:PORT --forward HOST:PORT [--threads N] [--connect-timeout SECONDS]\n"
               "  --threads N                event loops, one thread each (default: the CPUs)\n"
               "  --connect-timeout SECONDS  bound on the upstream connect (default 5)\n",
        to);
}

unsigned parse_number(const std::string& flag, const char* text, unsigned low, unsigned high)
{
    char* end = nullptr;
    const unsigned long v = std::strtoul(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < low || v > high)
        die(flag + " " + text + ": expected a number from " + std::to_string(low) + " to " + std::to_string(high));
    return static_cast<unsigned>(v);
}

Options parse_options(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") {
            usage(stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) {
            usage(stderr);
            die(flag + ": unknown option or missing value");
        }
        const char* value = argv[++i];
        if (flag == "--listen")
            o.listen = value;
        else if (flag == "--forward")
            o.forward = value;
        else if (flag == "--threads")
            o.threads = parse_number(flag, value, 1, 1024);
        else if (flag == "--connect-timeout")
            o.connect_timeout_s = static_cast<int>(parse_number(flag, value, 1, 3600));
        else {
            usage(stderr);
            die(flag + ": unknown option");
        }
    }
    if (o.listen.empty() || o.forward.empty()) {
        usage(stderr);
        die("--listen and --forward are required");
    }
    if (o.threads == 0)
        o.threads = std::max(1u, std::thread::hardware_concurrency());
    return o;
}

// Two descriptors per pair: take the hard limit on open files, not the
// (often lower) soft one.
void raise_fd_limit()
{
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

} // namespace

int main(int argc, char** argv)
{
    const Options opt = parse_options(argc, argv);
    raise_fd_limit();

    // SIGINT and SIGTERM are taken by sigwait() below; blocked before any
    // thread starts so that every thread inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    std::vector<std::unique_ptr<asio::io_context>> loops;
    for (unsigned i = 0; i < opt.threads; ++i)
        loops.push_back(std::make_unique<asio::io_context>(1)); // one thread each: no locking inside
    const tcp::endpoint at = resolve(*loops.front(), opt.listen, "--listen");
    const tcp::endpoint upstream = resolve(*loops.front(), opt.forward, "--forward");

    auto listener = std::make_unique<Listener>(loops, at, upstream, std::chrono::seconds(opt.connect_timeout_s));
    listener->accept();

    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::vector<std::thread> threads;
    for (auto& loop : loops) {
        work.push_back(asio::make_work_guard(*loop));
        threads.emplace_back([&loop] { loop->run(); });
    }
    std::printf("asio: listening on %s, forwarding to %s, %u threads\n", opt.listen.c_str(), opt.forward.c_str(),
        opt.threads);
    std::fflush(stdout);

    int signum = 0;
    sigwait(&stop_signals, &signum);

    for (auto& loop : loops)
        loop->stop();
    for (auto& t : threads)
        t.join();
    // The listener first (its pending accept names the loops), then the
    // loops, last first, each destroying its pairs and their sockets.
    listener.reset();
    work.clear();
    while (!loops.empty())
        loops.pop_back();
    std::printf("asio: stopped by signal %d after %lu connections (%lu upstream connects failed)\n", signum,
        g_accepted.load(), g_connect_failures.load());
    return 0;
}
