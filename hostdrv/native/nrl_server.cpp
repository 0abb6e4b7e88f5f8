// SPDX-License-Identifier: MIT
// The soft switch's data plane: recvmmsg/sendmmsg around the native engine, no Python
// per packet (the GIL is only taken for a control datagram). Semantics and addressing
// rules are the Python loop's (hostdrv/switch/soft_loop.py DatagramLoop: _process, _rebuild_tables,
// _source, _claimed_port, _flush); the control channel stays in Python.
#include "nrl_server.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace py = pybind11;

namespace nrl {

namespace {

constexpr size_t kBatch = 32;           // datagrams per recvmmsg
constexpr size_t kRecvBytes = 65536;    // as the Python server's receive buffer
constexpr size_t kRxHeadroom = 64;      // room for a frame header in front of each receive buffer
constexpr size_t kRxStride = kRxHeadroom + kRecvBytes;
static_assert(kRxHeadroom >= NRL_HEADER_OFFSET, "a header fits in front of a datagram");
constexpr size_t kSendBatch = 256;      // datagrams per sendmmsg
constexpr size_t kTxFlushBytes = 4 << 20;
constexpr int kSolUdp = 17;
constexpr int kUdpSegment = 103;        // linux/udp.h: UDP GSO
constexpr int kUdpGro = 104;            // linux/udp.h
constexpr size_t kGsoSegments = 64;     // hostdrv.wire.net.GSO_MAX_SEGMENTS
constexpr size_t kGsoBytes = 65507;     // hostdrv.wire.net.GSO_MAX_BYTES
constexpr int kSoRxqOvfl = 40;          // SO_RXQ_OVFL
constexpr uint8_t kControlMagic[4] = {'N', 'R', 'L', 'C'};

inline uint64_t now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000u + uint64_t(ts.tv_nsec) / 1000u;
}
inline sockaddr_in make_addr(uint32_t ip, uint32_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(uint16_t(port));
    return a;
}
inline bool same_addr(const sockaddr_in& a, const sockaddr_in& b) {
    return a.sin_addr.s_addr == b.sin_addr.s_addr && a.sin_port == b.sin_port;
}

}  // namespace

Server::Server(std::shared_ptr<SharedEngine> engine, int fd, py::object control,
               bool log_arrivals)
    : sh_(std::move(engine)), fd_(fd), control_(std::move(control)), log_arrivals_(log_arrivals) {
    rx_.resize(kBatch * kRxStride);
    frame_.resize(NRL_HEADER_OFFSET + kRecvBytes);
    tx_.reserve(kTxFlushBytes + (1 << 17));
}

Server::~Server() {
    py::gil_scoped_acquire gil;
    control_ = py::object();
}

std::map<std::string, uint64_t> Server::stats() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return {{"datagrams", datagrams_}, {"sent", sent_},         {"send_calls", send_calls_},
            {"receives", receives_},   {"busy_us", busy_us_},   {"rx_overflow", rx_overflow_}};
}

py::list Server::arrivals() {
    std::vector<Arrival> got;
    {
        py::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(stats_mu_);
        got.swap(arrivals_);
    }
    py::list out;
    for (const Arrival& a : got)
        out.append(py::make_tuple(a.slot, a.seq, a.worker, a.aux, py::bytes(a.payload)));
    return out;
}

// source -> ingress port, egress port -> address (DatagramLoop._rebuild_tables): the member
// tables (and a leaf's parent) of every enabled job's page; the caller holds the engine mutex
void Server::rebuild() {
    Engine& e = sh_->eng;
    generation_ = e.generation;
    for (uint32_t j = 0; j < NRL_MAX_JOBS; ++j)  // written entries forget their address
        for (uint32_t i = 0; i < NRL_MAX_MEMBERS; ++i)
            if (e.members_written >> (j * NRL_MAX_MEMBERS + i) & 1) last_known_[j][i] = false;
    e.members_written = 0;
    exact_.clear();
    any_.clear();
    members_.clear();
    bool id_seen[256] = {};
    for (auto& p : page_of_id_) p = 0;
    uint32_t used = 0;
    const uint32_t enabled = e.read(NRL_REG_JOB_ENABLE);
    for (uint32_t j = 0; j < e.jobs(); ++j) {
        if (!(enabled >> j & 1)) continue;
        const uint32_t page = j * NRL_JOB_PAGE;
        const uint32_t job_id = e.read(page + NRL_REG_JOB_ID) & 0xFF;
        if (!id_seen[job_id]) {
            id_seen[job_id] = true;
            page_of_id_[job_id] = uint8_t(j);
        }
        for (int i = 0; i < int(NRL_MAX_MEMBERS); ++i) {
            const uint32_t base = page + member_port(uint32_t(i));
            const uint32_t port = e.read(base);
            const uint32_t ip = e.read(base + kMemberIp);
            const uint32_t udp = e.read(base + kMemberUdp);
            const uint32_t role = e.read(base + kMemberRole);
            if (!port) continue;
            used |= port;
            if (udp) {
                bool seen = false;
                for (const Exact& x : exact_) seen |= x.ip == ip && x.udp == udp;
                if (!seen) exact_.push_back({ip, udp, uint8_t(port)});
            } else {
                any_.push_back({ip, int(j), i, uint8_t(port)});
            }
            if ((role & NRL_ROLE_WORKER) && ip)
                members_.push_back({uint8_t(port), int(j), i, job_id, make_addr(ip, udp), udp != 0});
        }
        const uint32_t uplink = e.read(page + NRL_REG_AGG_UPLINK_PORT);
        if (e.read(page + NRL_REG_AGG_ROLE) == 1 && uplink) {
            const uint32_t pip = e.read(page + NRL_REG_AGG_PARENT_IP);
            const uint32_t pudp = e.read(page + NRL_REG_AGG_PARENT_UDP)
                                      ? e.read(page + NRL_REG_AGG_PARENT_UDP)
                                      : e.read(NRL_REG_UDP_PORT);
            bool seen = false;
            for (Exact& x : exact_)
                if (x.ip == pip && x.udp == pudp) {
                    x.port = uint8_t(uplink);
                    seen = true;
                }
            if (!seen) exact_.push_back({pip, pudp, uint8_t(uplink)});
            used |= uplink;
        }
    }
    stranger_ = 0x80;
    for (int b = 7; b >= 0; --b)
        if (!(used & (1u << b))) {
            stranger_ = uint8_t(1u << b);
            break;
        }
    mcast_ = e.read(NRL_REG_MCAST_IP);
    switch_ip_ = e.read(NRL_REG_SWITCH_IP);
    udp_port_ = e.read(NRL_REG_UDP_PORT);
    const uint32_t hi = e.read(NRL_REG_SWITCH_MAC_HI), lo = e.read(NRL_REG_SWITCH_MAC_LO);
    put16(mac_, hi);
    put32(mac_ + 2, lo);
}

void Server::queue(const uint8_t* body, size_t len, const sockaddr_in& dst) {
    const size_t off = tx_.size();
    tx_.insert(tx_.end(), body, body + len);
    pending_.push_back({off, len, dst});
}

void Server::send_one(const uint8_t* data, size_t len, const sockaddr_in& dst) {
    if (egress_ != nullptr) {
        egress_->send(data, len, dst);
        egress_->flush();
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++send_calls_;
        ++sent_;
        return;
    }
    for (int attempt = 0; attempt < 50; ++attempt) {
        const ssize_t r = sendto(fd_, data, len, 0, reinterpret_cast<const sockaddr*>(&dst),
                                 sizeof dst);
        if (r >= 0) {
            std::lock_guard<std::mutex> lock(stats_mu_);
            ++send_calls_;
            ++sent_;
            return;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            pollfd p{fd_, POLLOUT, 0};
            poll(&p, 1, 2 * (attempt + 1));
            continue;
        }
        if (errno == ECONNREFUSED || errno == EINTR) continue;
        return;  // unreachable destination: lost, as on a wire
    }
}

// every queued datagram, grouped by destination in first-queued order (as SoftSwitch._flush),
// runs of equal length to one destination as one UDP GSO message (up to 64 segments and
// 65507 bytes), up to kSendBatch messages per sendmmsg
void Server::flush() {
    if (egress_ != nullptr) {  // in queued order: the egress batches per port itself
        for (const Pending& p : pending_) egress_->send(tx_.data() + p.off, p.len, p.dst);
        egress_->flush();
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++send_calls_;
        sent_ += pending_.size();
        pending_.clear();
        tx_.clear();
        return;
    }
    // group by destination, keeping each destination's order
    dsts_.clear();
    for (size_t i = 0; i < pending_.size(); ++i) {
        size_t g = 0;
        while (g < dsts_.size() && !same_addr(dsts_[g].dst, pending_[i].dst)) ++g;
        if (g == dsts_.size()) dsts_.push_back({pending_[i].dst, {}});
        dsts_[g].items.push_back(i);
    }
    msgs_.clear();
    iovs_.clear();
    for (const Dest& d : dsts_) {
        size_t i = 0;
        while (i < d.items.size()) {
            const size_t seg = pending_[d.items[i]].len;
            size_t j = i + 1;
            const size_t lim = gso_ ? std::min<size_t>(kGsoSegments, kGsoBytes / std::max<size_t>(seg, 1)) : 1;
            while (j < d.items.size() && j - i < lim && pending_[d.items[j]].len == seg) ++j;
            msgs_.push_back({d.items[i], j - i, seg, iovs_.size()});
            for (size_t k = i; k < j; ++k) {
                const Pending& p = pending_[d.items[k]];
                iovs_.push_back({tx_.data() + p.off, p.len});
            }
            i = j;
        }
    }
    size_t m = 0;
    const size_t n = msgs_.size();
    mmsghdr hdr[kSendBatch];
    alignas(cmsghdr) uint8_t ctl[kSendBatch][CMSG_SPACE(sizeof(uint16_t))];
    int attempts = 0;
    while (m < n) {
        const size_t k = std::min(kSendBatch, n - m);
        for (size_t j = 0; j < k; ++j) {
            const Msg& g = msgs_[m + j];
            std::memset(&hdr[j], 0, sizeof hdr[j]);
            msghdr& h = hdr[j].msg_hdr;
            h.msg_name = &pending_[g.first].dst;
            h.msg_namelen = sizeof(sockaddr_in);
            h.msg_iov = &iovs_[g.iov];
            h.msg_iovlen = g.count;
            if (g.count > 1) {
                h.msg_control = ctl[j];
                h.msg_controllen = sizeof ctl[j];
                cmsghdr* c = CMSG_FIRSTHDR(&h);
                c->cmsg_level = kSolUdp;
                c->cmsg_type = kUdpSegment;
                c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
                const uint16_t s16 = uint16_t(g.seg);
                std::memcpy(CMSG_DATA(c), &s16, sizeof s16);
            }
        }
        const int r = sendmmsg(fd_, hdr, unsigned(k), 0);
        if (r > 0) {
            uint64_t datagrams = 0;
            for (int j = 0; j < r; ++j) datagrams += msgs_[m + size_t(j)].count;
            std::lock_guard<std::mutex> lock(stats_mu_);
            ++send_calls_;
            sent_ += datagrams;
            m += size_t(r);
            attempts = 0;
            continue;
        }
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && attempts < 50) {  // wait for room
            ++attempts;
            pollfd p{fd_, POLLOUT, 0};
            poll(&p, 1, 2 * attempts);
            continue;
        }
        // this message cannot go (no GSO on this path, ICMP error, unreachable): its
        // datagrams one by one, and no GSO from now on if it was a GSO message
        const Msg& g = msgs_[m];
        if (g.count > 1 && errno != ECONNREFUSED) gso_ = false;
        for (size_t j = 0; j < g.count; ++j)
            send_one(static_cast<const uint8_t*>(iovs_[g.iov + j].iov_base), iovs_[g.iov + j].iov_len,
                     pending_[g.first].dst);
        ++m;
        attempts = 0;
    }
    pending_.clear();
    tx_.clear();
}

void Server::control(const uint8_t* data, size_t n, const sockaddr_in& from) {
    if (!pending_.empty()) flush();
    py::gil_scoped_acquire gil;
    std::string reply;
    try {
        char host[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &from.sin_addr, host, sizeof host);
        py::object r = control_(py::bytes(reinterpret_cast<const char*>(data), n),
                                std::string(host), int(ntohs(from.sin_port)));
        reply = r.cast<std::string>();
    } catch (py::error_already_set& e) {
        e.restore();
        PyErr_WriteUnraisable(nullptr);
        return;
    }
    py::gil_scoped_release nogil;
    send_one(reinterpret_cast<const uint8_t*>(reply.data()), reply.size(), from);
}

// one received datagram (or a GRO batch of seg-byte datagrams) from `from`; in_place: data is
// serve's own receive buffer, writable from NRL_HEADER_OFFSET bytes before it, so each datagram
// is framed where it lies (the bytes before a segment are its header room, or the tail of the
// segment before it, already processed) instead of copied into frame_
void Server::datagram(const uint8_t* data, size_t n, size_t seg, const sockaddr_in& from,
                      bool in_place) {
    if (n >= 4 && std::memcmp(data, kControlMagic, 4) == 0) return control(data, n, from);
    std::lock_guard<std::mutex> lock(sh_->mu);
    Engine& e = sh_->eng;
    if (e.generation != generation_ || e.members_written) rebuild();
    const uint32_t ip = ntohl(from.sin_addr.s_addr), sport = ntohs(from.sin_port);
    uint8_t port = 0;
    bool any = false;
    for (const Exact& x : exact_)
        if (x.ip == ip && x.udp == sport) {
            port = x.port;
            break;
        }
    if (!port) {
        for (const AnyPort& a : any_)
            if (a.ip == ip) {
                port = a.port;
                any = true;
                break;
            }
        if (!any) port = stranger_;
    }
    uint8_t* f = frame_.data();
    // the 42-byte header SoftSwitch._source builds
    std::memcpy(f, mac_, 6);
    f[6] = 0x02;
    f[7] = 0x00;
    put32(f + 8, ip);
    put16(f + 12, NRL_ETHERTYPE_IPV4);
    f[14] = NRL_IPV4_VER_IHL;
    f[15] = 0;
    put16(f + 18, 0);
    put16(f + 20, NRL_IP_FLAGS_DF);
    f[22] = NRL_IP_TTL;
    f[23] = NRL_IP_PROTO_UDP;
    put16(f + 24, 0);
    put32(f + 26, ip);
    put32(f + 30, switch_ip_);
    put16(f + NRL_UDP_OFFSET, sport);
    put16(f + NRL_UDP_OFFSET + 2, udp_port_);
    put16(f + NRL_UDP_OFFSET + 6, 0);
    const size_t step = seg ? seg : 1;
    uint64_t handled = 0;
    for (size_t off = 0; off < (n ? n : 1); off += step) {
        const size_t size = n ? std::min(step, n - off) : 0;
        const size_t flen = NRL_HEADER_OFFSET + size;
        uint8_t* fr = f;
        if (in_place && size) {  // the header goes in front of the datagram where it lies
            fr = const_cast<uint8_t*>(data + off) - NRL_HEADER_OFFSET;
            std::memcpy(fr, f, NRL_HEADER_OFFSET);
        } else {
            std::memcpy(f + NRL_HEADER_OFFSET, data + off, size);
        }
        put16(fr + NRL_IP_OFFSET + 2, uint32_t(flen - NRL_IP_OFFSET) & 0xFFFF);
        put16(fr + NRL_UDP_OFFSET + 4, uint32_t(flen - NRL_UDP_OFFSET) & 0xFFFF);
        ++handled;
        uint8_t p = port;
        if (any && size >= NRL_HEADER_LEN) {  // DatagramLoop._claimed_port
            // the entry the worker field names in the job the job byte selects
            const uint32_t w = (uint32_t(fr[NRL_OFF_WORKER]) << 8) | fr[NRL_OFF_WORKER + 1];
            const int j = page_of_id_[fr[NRL_OFF_JOB]];
            for (const AnyPort& a : any_)
                if (a.ip == ip && a.job == j && uint32_t(a.index) == w) {
                    p = a.port;
                    if (!last_known_[j][w] || !same_addr(last_[j][w], from)) {
                        last_known_[j][w] = true;
                        last_[j][w] = from;
                    }
                    break;
                }
        }
        if (log_arrivals_ && size >= NRL_HEADER_LEN && fr[NRL_OFF_OPCODE] == NRL_OP_GRADIENT) {
            std::lock_guard<std::mutex> slock(stats_mu_);
            arrivals_.push_back({be16(fr + NRL_OFF_SLOT), be32(fr + NRL_OFF_SEQ),
                                 be16(fr + NRL_OFF_WORKER), be32(fr + NRL_OFF_AUX),
                                 std::string(reinterpret_cast<const char*>(fr) + NRL_PAYLOAD_OFFSET,
                                             flen - NRL_PAYLOAD_OFFSET)});
        }
        e.process(fr, flen, p);
        for (const OutFrame& o : e.out) {
            const uint8_t* out = e.out_buf.data() + o.off;
            const uint32_t ip_dst = be32(out + 30);
            const uint32_t udp_dst = (uint32_t(out[36]) << 8) | out[37];
            const uint8_t* body = out + NRL_HEADER_OFFSET;
            const size_t blen = o.len - NRL_HEADER_OFFSET;
            if (ip_dst == mcast_) {  // one copy of the body in tx_ for every member of its job
                bool queued = false;
                for (const Member& m : members_) {
                    if (!(m.port & o.ports) || m.job_id != out[NRL_OFF_JOB]) continue;
                    const sockaddr_in* dst = m.fixed ? &m.dst
                                             : last_known_[m.job][m.index] ? &last_[m.job][m.index]
                                                                           : nullptr;
                    if (dst == nullptr) continue;
                    if (queued)
                        pending_.push_back({pending_.back().off, blen, *dst});
                    else
                        queue(body, blen, *dst);
                    queued = true;
                }
            } else if (ip_dst && udp_dst) {
                queue(body, blen, make_addr(ip_dst, udp_dst));
            }
        }
    }
    std::lock_guard<std::mutex> slock(stats_mu_);
    datagrams_ += handled;
}

void Server::input(const uint8_t* data, size_t n, const sockaddr_in& from) {
    std::lock_guard<std::mutex> lock(input_mu_);
    const uint64_t t0 = now_us();
    datagram(data, n, n ? n : 1, from);
    if (!pending_.empty()) flush();
    std::lock_guard<std::mutex> slock(stats_mu_);
    ++receives_;
    busy_us_ += now_us() - t0;
}

void Server::serve(int poll_ms) {
    mmsghdr msgs[kBatch];
    iovec iov[kBatch];
    sockaddr_in from[kBatch];
    alignas(cmsghdr) uint8_t ctl[kBatch][CMSG_SPACE(4) * 2 + 16];
    while (!stop_.load(std::memory_order_relaxed)) {
        for (size_t j = 0; j < kBatch; ++j) {
            iov[j] = {rx_.data() + j * kRxStride + kRxHeadroom, kRecvBytes};
            std::memset(&msgs[j], 0, sizeof msgs[j]);
            msgs[j].msg_hdr.msg_name = &from[j];
            msgs[j].msg_hdr.msg_namelen = sizeof from[j];
            msgs[j].msg_hdr.msg_iov = &iov[j];
            msgs[j].msg_hdr.msg_iovlen = 1;
            msgs[j].msg_hdr.msg_control = ctl[j];
            msgs[j].msg_hdr.msg_controllen = sizeof ctl[j];
        }
        const int r = recvmmsg(fd_, msgs, kBatch, MSG_DONTWAIT, nullptr);
        if (r <= 0) {
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                pollfd p{fd_, POLLIN, 0};
                poll(&p, 1, poll_ms);
            }
            continue;  // ECONNREFUSED (an ICMP error left by an earlier datagram), EINTR
        }
        const uint64_t t0 = now_us();
        for (int j = 0; j < r; ++j) {
            const size_t n = msgs[j].msg_len;
            size_t seg = n;
            for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[j].msg_hdr); c != nullptr;
                 c = CMSG_NXTHDR(&msgs[j].msg_hdr, c)) {
                if (c->cmsg_len < CMSG_LEN(4)) continue;
                if (c->cmsg_level == kSolUdp && c->cmsg_type == kUdpGro) {
                    int s;
                    std::memcpy(&s, CMSG_DATA(c), 4);
                    seg = s ? size_t(s) : n;
                } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == kSoRxqOvfl) {
                    uint32_t drops;  // the socket's drop count when this datagram was queued
                    std::memcpy(&drops, CMSG_DATA(c), 4);
                    std::lock_guard<std::mutex> lock(stats_mu_);
                    rx_overflow_ = drops;
                }
            }
            datagram(rx_.data() + size_t(j) * kRxStride + kRxHeadroom, n, seg ? seg : 1, from[j],
                     true);
            if (tx_.size() > kTxFlushBytes) flush();
        }
        if (!pending_.empty()) flush();
        std::lock_guard<std::mutex> lock(stats_mu_);
        receives_ += uint64_t(r);
        busy_us_ += now_us() - t0;
    }
}

}  // namespace nrl
