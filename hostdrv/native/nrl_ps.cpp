// SPDX-License-Identifier: MIT
// The native parameter server: one thread, poll() over N TCP connections, the GIL released
// (hostdrv.peers.ps.NativeParameterServer runs it). Pipelined: worker k's elements are added
// as soon as x0 + ... + x(k-1) covers them, and the finished prefix of the sum streams back to
// every worker while the pushes are still arriving, so a call costs about one pass of the
// slowest link rather than a receive phase plus a send phase. The order of addition is fixed
// (worker id order, nrl_ps.h), never the arrival order.
//
// TCP rather than UDP chunks: what deployed parameter servers use; TCP's flow and congestion
// control handle the N:1 incast on the server's link that a UDP server would have to pace and
// retransmit itself, and on loopback and veth TCP moves 64 KB segments per system call.
#include "nrl_ps.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace nrl::ps {

namespace {

constexpr size_t kScratch = 1 << 20;

void put32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (24 - 8 * i));
}
void put64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (56 - 8 * i));
}
uint32_t get32(const uint8_t* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
    return v;
}
uint64_t get64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
    return v;
}

void header(uint8_t* h, uint8_t op, uint8_t dtype, uint8_t status, uint32_t id, uint64_t count) {
    std::memcpy(h, kMagic, 4);
    h[4] = kVersion;
    h[5] = op;
    h[6] = dtype;
    h[7] = status;
    put32(h + 8, id);
    put64(h + 12, count);
}

std::vector<uint8_t> reply(uint8_t op, uint8_t dtype, uint8_t status, uint32_t id, uint64_t count,
                           uint32_t detail) {
    std::vector<uint8_t> r(kReplyLen);
    header(r.data(), op, dtype, status, id, count);
    put32(r.data() + 20, detail);
    return r;
}

double monotonic() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

// each element is one IEEE add (no FMA contraction or reassociation, setup.py's flags); the
// SSE2 lanes are four independent binary32 adds, bit for bit the scalar addss numpy does
void add_into(uint8_t dtype, uint8_t* acc, const uint8_t* x, size_t elems) {
    size_t i = 0;
    if (dtype == INT32) {  // two's complement wrap: add as unsigned
        auto* __restrict a = reinterpret_cast<uint32_t*>(acc);
        const auto* __restrict b = reinterpret_cast<const uint32_t*>(x);
#ifdef __SSE2__
        for (; i + 4 <= elems; i += 4) {
            const __m128i s = _mm_add_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(a + i), s);
        }
#endif
        for (; i < elems; ++i) a[i] += b[i];
        return;
    }
    auto* __restrict a = reinterpret_cast<float*>(acc);
    const auto* __restrict b = reinterpret_cast<const float*>(x);
#ifdef __SSE2__
    for (; i + 4 <= elems; i += 4) _mm_storeu_ps(a + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
#endif
    for (; i < elems; ++i) a[i] += b[i];
}

struct Server::Conn {
    int fd = -1;
    int worker = -1;        // -1: before its HELLO
    bool gone = false;
    bool close_after = false;  // a refused HELLO: close once the reply is out
    bool blocked = false;      // the last send would block: wait for POLLOUT
    uint8_t hdr[kRequestLen];
    size_t hgot = 0;
    // this call
    bool have_req = false, answered = false, sum = false;
    uint8_t dtype = FP32;
    uint32_t seq = 0;
    uint64_t elems = 0, got = 0;  // payload bytes received
    bool discard = false;         // the payload goes to scratch (too large, or a failed call)
    std::vector<uint8_t> buf;     // its payload (workers 1..N-1)
    std::vector<uint8_t> rep;     // reply header (and an error's words)
    size_t rep_sent = 0;
    uint64_t pay_sent = 0;        // SUM payload bytes sent
    bool wants_read() const {
        if (worker < 0) return !close_after && hgot < kRequestLen;
        return !have_req || got < elems * 4;
    }
};

Server::Server(int fd, uint32_t world, uint64_t max_elems)
    : fd_(fd), world_(world), max_elems_(max_elems), workers_(world, nullptr), done_(world, 0),
      scratch_(kScratch) {}

Server::~Server() {
    for (auto& c : conns_)
        if (c->fd >= 0) ::close(c->fd);
}

std::map<std::string, uint64_t> Server::stats() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    uint64_t connected = 0;
    for (Conn* w : workers_) connected += w != nullptr;
    return {{"rounds", rounds_},         {"failed_rounds", failed_rounds_},
            {"bytes_in", bytes_in_},     {"bytes_out", bytes_out_},
            {"accepted", accepted_},     {"polls", polls_},
            {"workers", connected}};
}

void Server::accept_all() {
    for (;;) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) return;  // EAGAIN, or an aborted connection: nothing to do
        const int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto conn = std::make_unique<Conn>();
        conn->fd = c;
        conns_.push_back(std::move(conn));
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++accepted_;
    }
}

void Server::fail(uint8_t status, uint32_t detail) {
    if (failed_ != OK) return;  // the first cause is the one reported
    failed_ = status;
    detail_ = detail;
    for (Conn* w : workers_) {
        if (w == nullptr || !w->have_req || w->answered) continue;  // answered: it has its sum
        if (w->sum && w->rep_sent > 0) {
            drop(*w);  // its SUM has begun: the stream cannot carry an error any more
            continue;
        }
        {
            w->discard = true;
            w->sum = false;
            w->rep.clear();
            w->rep_sent = 0;
            w->pay_sent = 0;
            if (w->got == w->elems * 4) error_reply(*w);
        }
    }
}

void Server::error_reply(Conn& c) {
    uint64_t count = 0;
    if (failed_ == LENGTH_MISMATCH || failed_ == DTYPE_MISMATCH) count = world_;
    c.rep = reply(ERROR, c.dtype, failed_, c.seq, count, detail_);
    for (uint64_t k = 0; k < count; ++k) {
        const Conn* w = workers_[k];
        const uint64_t word = w != nullptr && w->have_req
                                  ? (uint64_t(w->dtype) << 56) | (w->elems & ((uint64_t(1) << 56) - 1))
                                  : ~uint64_t(0);
        const size_t at = c.rep.size();
        c.rep.resize(at + 8);
        put64(c.rep.data() + at, word);
    }
    c.rep_sent = 0;
    c.sum = false;
}

void Server::drop(Conn& c) {
    if (c.gone) return;
    c.gone = true;
    ::close(c.fd);
    c.fd = -1;
    if (c.worker >= 0) {
        workers_[size_t(c.worker)] = nullptr;
        if (active_) fail(WORKER_LEFT, uint32_t(c.worker));
    }
}

void Server::hello(Conn& c) {
    const uint8_t* h = c.hdr;
    if (std::memcmp(h, kMagic, 4) != 0 || h[4] != kVersion || h[5] != HELLO) {
        drop(c);  // not our protocol: nothing to answer
        return;
    }
    const uint32_t w = get32(h + 8);
    const uint64_t world = get64(h + 12);
    if (w >= world_ || world != world_) {
        c.rep = reply(ERROR, FP32, BAD_HELLO, w, world_, world_);
        c.close_after = true;
    } else if (workers_[w] != nullptr) {
        c.rep = reply(ERROR, FP32, DUPLICATE_WORKER, w, world_, w);
        c.close_after = true;
    } else {
        c.worker = int(w);
        workers_[w] = &c;
        c.rep = reply(WELCOME, FP32, OK, w, world_, 0);
    }
    c.rep_sent = 0;
    c.hgot = 0;
}

// a PUSH header is in: start (or join) the call
void Server::request(Conn& c) {
    const uint8_t* h = c.hdr;
    if (std::memcmp(h, kMagic, 4) != 0 || h[4] != kVersion || h[5] != PUSH) {
        drop(c);
        return;
    }
    c.have_req = true;
    c.dtype = h[6];
    c.seq = get32(h + 8);
    c.elems = get64(h + 12);
    c.got = 0;
    c.rep.clear();
    c.rep_sent = 0;
    c.pay_sent = 0;
    c.sum = false;
    c.answered = false;
    active_ = true;
    c.discard = failed_ != OK;
    if (c.dtype != FP32 && c.dtype != INT32) {
        c.elems = 0;  // unknown element size: the stream cannot be resynchronized
        fail(BAD_DTYPE, c.dtype);
        drop(c);
        return;
    }
    if (c.elems > max_elems_) {
        c.discard = true;
        fail(TOO_LARGE, uint32_t(std::min<uint64_t>(max_elems_ / 1024, 0xFFFFFFFFu)));
    } else if (!c.discard) {
        std::vector<uint8_t>& dst = c.worker == 0 ? acc_ : c.buf;
        if (dst.size() < c.elems * 4) dst.resize(c.elems * 4);
    }
    if (failed_ == OK) {
        bool all = true;
        for (Conn* w : workers_) all = all && w != nullptr && w->have_req;
        if (all) {
            const Conn& first = *workers_[0];
            for (Conn* w : workers_)
                if (w->dtype != first.dtype) fail(DTYPE_MISMATCH, 0);
            for (Conn* w : workers_)
                if (w->elems != first.elems) fail(LENGTH_MISMATCH, 0);
            if (failed_ == OK) {
                agreed_ = true;
                elems_ = first.elems;
                dtype_ = first.dtype;
                std::fill(done_.begin(), done_.end(), 0);
                for (Conn* w : workers_) {
                    w->rep = reply(SUM, dtype_, OK, w->seq, elems_, 0);
                    w->sum = true;
                }
            }
        }
    }
    if (c.got == c.elems * 4) payload_done(c);
}

void Server::payload_done(Conn& c) {
    if (failed_ != OK && c.rep.empty()) error_reply(c);
}

bool Server::read_conn(Conn& c) {
    bool progress = false;
    while (!c.gone && c.wants_read()) {
        uint8_t* dst;
        size_t want;
        const bool in_header = c.worker < 0 || !c.have_req;
        if (in_header) {
            dst = c.hdr + c.hgot;
            want = kRequestLen - c.hgot;
        } else {
            const uint64_t left = c.elems * 4 - c.got;
            if (c.discard) {
                dst = scratch_.data();
                want = size_t(std::min<uint64_t>(left, scratch_.size()));
            } else {
                dst = (c.worker == 0 ? acc_.data() : c.buf.data()) + c.got;
                want = size_t(left);
            }
        }
        const ssize_t n = ::recv(c.fd, dst, want, MSG_DONTWAIT);
        if (n == 0) {
            drop(c);
            return progress;
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) drop(c);
            return progress;
        }
        progress = true;
        {
            std::lock_guard<std::mutex> lock(stats_mu_);
            bytes_in_ += uint64_t(n);
        }
        if (in_header) {
            c.hgot += size_t(n);
            if (c.hgot == kRequestLen) {
                if (c.worker < 0) {
                    hello(c);
                    if (!c.rep.empty()) write_conn(c);
                    return true;
                }
                c.hgot = 0;
                request(c);
            }
        } else {
            c.got += uint64_t(n);
            if (c.got == c.elems * 4) payload_done(c);
        }
    }
    return progress;
}

bool Server::write_conn(Conn& c) {
    bool progress = false;
    const uint64_t ready = c.sum ? ready_bytes() : 0;
    // a SUM's header waits for its first bytes: until then a failed call can still answer ERROR
    if (c.sum && ready == 0 && elems_ > 0) return false;
    while (!c.gone) {
        iovec iov[2];
        int k = 0;
        if (c.rep_sent < c.rep.size()) iov[k++] = {c.rep.data() + c.rep_sent, c.rep.size() - c.rep_sent};
        if (c.sum && c.pay_sent < ready)
            iov[k++] = {acc_.data() + c.pay_sent, size_t(ready - c.pay_sent)};
        if (k == 0) break;
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = size_t(k);
        const ssize_t n = ::sendmsg(c.fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                c.blocked = true;
            else
                drop(c);
            break;
        }
        progress = true;
        {
            std::lock_guard<std::mutex> lock(stats_mu_);
            bytes_out_ += uint64_t(n);
        }
        size_t left = size_t(n);
        const size_t h = std::min(left, c.rep.size() - c.rep_sent);
        c.rep_sent += h;
        left -= h;
        c.pay_sent += left;
    }
    if (!c.gone && !c.rep.empty() && c.rep_sent == c.rep.size() &&
        (!c.sum || c.pay_sent == elems_ * 4)) {
        if (c.close_after) {
            drop(c);
        } else if (c.worker >= 0 && c.have_req && c.got == c.elems * 4) {
            c.answered = true;
        } else if (c.worker >= 0 && !c.have_req) {
            c.rep.clear();  // the WELCOME is out
            c.rep_sent = 0;
        }
    }
    return progress;
}

// worker k's elements join the sum once x0 + ... + x(k-1) covers them (nrl_ps.h's order)
void Server::accumulate() {
    if (!agreed_ || failed_ != OK) return;
    done_[0] = workers_[0]->got / 4;
    for (size_t k = 1; k < world_; ++k) {
        const Conn* w = workers_[k];
        const uint64_t upto = std::min(done_[k - 1], w->got / 4);
        if (upto > done_[k]) {
            add_into(dtype_, acc_.data() + done_[k] * 4, w->buf.data() + done_[k] * 4,
                     size_t(upto - done_[k]));
            done_[k] = upto;
        }
    }
}

uint64_t Server::ready_bytes() const {
    return agreed_ && failed_ == OK ? done_[world_ - 1] * 4 : 0;
}

bool Server::round_over() const {
    if (!active_) return false;
    for (const Conn* w : workers_) {
        if (w == nullptr) {
            if (failed_ == OK) return false;
            continue;
        }
        if (!w->answered) return false;
    }
    return true;
}

void Server::end_round() {
    for (Conn* w : workers_) {
        if (w == nullptr) continue;
        w->have_req = w->answered = w->sum = w->discard = false;
        w->got = w->elems = w->pay_sent = 0;
        w->rep.clear();
        w->rep_sent = 0;
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++rounds_;
    failed_rounds_ += failed_ != OK;
    active_ = agreed_ = false;
    failed_ = OK;
    detail_ = 0;
    elems_ = 0;
}

void Server::serve(int poll_ms) {
    std::vector<pollfd> fds;
    std::vector<Conn*> who;
    while (!stop_.load(std::memory_order_relaxed)) {
        fds.assign(1, pollfd{fd_, POLLIN, 0});
        who.assign(1, nullptr);
        for (auto& c : conns_) {
            short ev = POLLRDHUP;
            if (c->wants_read()) ev |= POLLIN;
            if (c->blocked) ev |= POLLOUT;
            fds.push_back({c->fd, ev, 0});
            who.push_back(c.get());
        }
        const int r = ::poll(fds.data(), fds.size(), poll_ms);
        {
            std::lock_guard<std::mutex> lock(stats_mu_);
            ++polls_;
        }
        if (r < 0) continue;  // EINTR
        if (fds[0].revents & POLLIN) accept_all();
        for (size_t i = 1; i < fds.size(); ++i) {
            Conn& c = *who[i];
            const short re = fds[i].revents;
            if (re & POLLOUT) c.blocked = false;
            if (re & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) read_conn(c);
            // a peer that closed: a read finds the end of the stream, unless we read nothing
            if (!c.gone && (re & (POLLHUP | POLLERR | POLLRDHUP)) && !c.wants_read()) drop(c);
        }
        // the sum moves on as far as the data allows, and goes out as far as the sockets take it
        bool progress = true;
        while (progress) {
            progress = false;
            accumulate();
            for (auto& c : conns_)
                if (!c->gone && !c->blocked) progress |= write_conn(*c);
            for (auto& c : conns_)
                if (!c->gone && c->wants_read()) progress |= read_conn(*c);
            if (round_over()) {
                end_round();
                progress = true;
            }
        }
        conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                    [](const std::unique_ptr<Conn>& c) { return c->gone; }),
                     conns_.end());
    }
}

CallOutcome client_call(int fd, uint32_t seq, uint8_t dtype, const uint8_t* in, uint64_t elems,
                        uint8_t* out, double timeout) {
    CallOutcome res;
    uint8_t req[kRequestLen];
    header(req, PUSH, dtype, 0, seq, elems);
    uint8_t rep[kReplyLen];
    size_t req_sent = 0, rep_got = 0;
    const uint64_t nbytes = elems * 4;
    uint64_t words_bytes = 0, words_got = 0;
    bool have_rep = false;
    double last = monotonic();
    auto done = [&]() {
        return have_rep && (res.status == OK ? res.received == nbytes : words_got == words_bytes);
    };
    while (!done()) {
        const bool sending = req_sent < kRequestLen || res.sent < nbytes;
        bool progress = false;
        if (sending) {
            iovec iov[2];
            int k = 0;
            if (req_sent < kRequestLen) iov[k++] = {req + req_sent, kRequestLen - req_sent};
            if (res.sent < nbytes)
                iov[k++] = {const_cast<uint8_t*>(in) + res.sent, size_t(nbytes - res.sent)};
            msghdr m{};
            m.msg_iov = iov;
            m.msg_iovlen = size_t(k);
            const ssize_t n = ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                size_t left = size_t(n);
                const size_t h = std::min(left, kRequestLen - req_sent);
                req_sent += h;
                left -= h;
                res.sent += left;
                progress = true;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                res.code = errno == EPIPE || errno == ECONNRESET ? CallOutcome::CLOSED
                                                                 : CallOutcome::OS_ERROR;
                res.err = errno;
                return res;
            }
        }
        for (;;) {  // receive what is there
            uint8_t* dst;
            size_t want;
            if (!have_rep) {
                dst = rep + rep_got;
                want = kReplyLen - rep_got;
            } else if (res.status == OK) {
                dst = out + res.received;
                want = size_t(nbytes - res.received);
            } else {
                dst = reinterpret_cast<uint8_t*>(res.words.data()) + words_got;
                want = size_t(words_bytes - words_got);
            }
            if (want == 0) break;
            const ssize_t n = ::recv(fd, dst, want, MSG_DONTWAIT);
            if (n == 0) {
                res.code = CallOutcome::CLOSED;
                return res;
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                res.code = CallOutcome::OS_ERROR;
                res.err = errno;
                return res;
            }
            progress = true;
            if (!have_rep) {
                rep_got += size_t(n);
                if (rep_got < kReplyLen) continue;
                have_rep = true;
                res.status = rep[7];
                res.count = get64(rep + 12);
                res.detail = get32(rep + 20);
                const bool ours = std::memcmp(rep, kMagic, 4) == 0 && rep[4] == kVersion &&
                                  get32(rep + 8) == seq;
                if (!ours || (rep[5] == SUM && (res.status != OK || res.count != elems)) ||
                    (rep[5] != SUM && (rep[5] != ERROR || res.status == OK || res.count > 64))) {
                    res.code = CallOutcome::PROTOCOL;
                    return res;
                }
                if (rep[5] == ERROR) {
                    res.words.assign(size_t(res.count), 0);
                    words_bytes = res.count * 8;
                }
            } else if (res.status == OK) {
                res.received += uint64_t(n);
            } else {
                words_got += uint64_t(n);
            }
            if (done()) break;
        }
        if (done()) break;
        const double now = monotonic();
        if (progress) {
            last = now;
            continue;
        }
        const double left = last + timeout - now;
        if (left <= 0) {
            res.code = CallOutcome::TIMEOUT;
            return res;
        }
        pollfd p{fd, short(POLLIN | (req_sent < kRequestLen || res.sent < nbytes ? POLLOUT : 0)), 0};
        ::poll(&p, 1, std::max(1, int(std::min(left * 1000.0 + 0.999, 1e9))));
    }
    if (res.status != OK) {
        for (uint64_t& w : res.words) w = get64(reinterpret_cast<const uint8_t*>(&w));
        res.code = CallOutcome::ERROR_REPLY;
    }
    return res;
}

}  // namespace nrl::ps
