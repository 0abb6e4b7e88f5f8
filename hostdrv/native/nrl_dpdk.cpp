// SPDX-License-Identifier: MIT
// Kernel-bypass data path on DPDK (nrl_dpdk.h; docs/bypass.md). Frames are the board's
// (docs/protocol.md section 1: Ethernet II / IPv4 / UDP, UDP checksum 0); the switch's
// datagram rules are nrl_server.cpp's, reached through Server::input and DatagramEgress.
// The EAL and the ports themselves are set up in nrl_dpdk_port.cpp.
#include "nrl_dpdk.h"

#include <sys/socket.h>

#include <rte_mbuf.h>

#include <cctype>
#include <cstring>
#include <stdexcept>

#include "nrl_engine.h"

namespace nrl::dpdk {

namespace {

constexpr size_t kEthLen = 14, kIpLen = 20, kUdpLen = 8, kHdrLen = kEthLen + kIpLen + kUdpLen;
constexpr uint8_t kBroadcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

// Ethernet + IPv4 + UDP in front of a len-byte payload at f + 42 (UDP checksum 0)
void put_headers(uint8_t* f, const uint8_t* dst_mac, const uint8_t* src_mac, uint32_t sip,
                 uint16_t sport, uint32_t dip, uint16_t dport, size_t len) {
    std::memcpy(f, dst_mac, 6);
    std::memcpy(f + 6, src_mac, 6);
    put_ipv4_udp(f, sip, dip, sport, dport, uint32_t(len));
}

// an ARP request (op 1) or reply (op 2) from (mac, ip) about tip
size_t put_arp(uint8_t* f, uint32_t op, const uint8_t* dst_mac, const uint8_t* mac, uint32_t ip,
               const uint8_t* tmac, uint32_t tip) {
    std::memcpy(f, dst_mac, 6);
    std::memcpy(f + 6, mac, 6);
    put16(f + 12, 0x0806);
    put16(f + 14, 1);  // Ethernet
    put16(f + 16, NRL_ETHERTYPE_IPV4);
    f[18] = 6;
    f[19] = 4;
    put16(f + 20, op);
    std::memcpy(f + 22, mac, 6);
    put32(f + 28, ip);
    std::memcpy(f + 32, tmac, 6);
    put32(f + 38, tip);
    std::memset(f + 42, 0, 18);  // pad to the 60-byte minimum
    return 60;
}

// the UDP payload of an unfragmented IPv4/UDP frame (nullptr else); addresses in *sip ...
const uint8_t* udp_payload(const uint8_t* f, size_t n, uint32_t* sip, uint32_t* dip,
                           uint32_t* sport, uint32_t* dport, size_t* len) {
    if (n < kHdrLen || be16(f + 12) != NRL_ETHERTYPE_IPV4) return nullptr;
    const uint8_t* ip = f + kEthLen;
    const size_t ihl = size_t(ip[0] & 0xF) * 4;
    if ((ip[0] >> 4) != 4 || ihl < kIpLen || ip[9] != NRL_IP_PROTO_UDP) return nullptr;
    if (be16(ip + 6) & 0x3FFF) return nullptr;  // a fragment: not ours to reassemble
    if (n < kEthLen + ihl + kUdpLen) return nullptr;
    const uint8_t* u = ip + ihl;
    const size_t ulen = be16(u + 4);
    if (ulen < kUdpLen || kEthLen + ihl + ulen > n) return nullptr;
    *sip = be32(ip + 12);
    *dip = be32(ip + 16);
    *sport = be16(u);
    *dport = be16(u + 2);
    *len = ulen - kUdpLen;
    return u + kUdpLen;
}

// the frame's bytes, linear (a chained mbuf copied into buf)
const uint8_t* linear(rte_mbuf* m, std::vector<uint8_t>& buf, size_t* n) {
    *n = rte_pktmbuf_pkt_len(m);
    if (m->nb_segs == 1) return rte_pktmbuf_mtod(m, const uint8_t*);
    if (buf.size() < *n) buf.resize(*n);
    return static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, uint32_t(*n), buf.data()));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Switch

Switch::Switch(std::shared_ptr<SharedEngine> engine, Server* server,
               const std::vector<std::string>& devargs, uint32_t ip, uint16_t udp)
    : sh_(std::move(engine)), server_(server), ip_(ip), udp_(udp) {
    if (devargs.empty()) throw std::invalid_argument("DPDK switch: no ports");
    if (devargs.size() > 8) throw std::invalid_argument("DPDK switch: at most 8 ports");
    for (const std::string& d : devargs) ports_.push_back(std::make_unique<Port>(d));
    buf_.resize(kFrameBytes);
    server_->set_egress(this);
}

Switch::~Switch() { server_->set_egress(nullptr); }

std::vector<std::string> Switch::port_names() const {
    std::vector<std::string> v;
    for (const auto& p : ports_) v.push_back(p->name());
    return v;
}

std::map<std::string, uint64_t> Switch::stats() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    uint64_t dropped = 0;
    for (const auto& p : ports_) dropped += p->tx_dropped();
    return {{"frames", frames_}, {"datagrams", datagrams_}, {"l2", l2_},
            {"arp", arp_},       {"tx", tx_},               {"flooded", flooded_},
            {"tx_dropped", dropped}, {"idle_sleeps", idle_sleeps_}};
}

void Switch::learn(size_t port, const uint8_t* f) {
    const uint32_t ip = be32(f + kEthLen + 12);
    for (Neighbor& n : neighbors_)
        if (n.ip == ip) {
            std::memcpy(n.mac, f + 6, 6);
            n.port = port;
            return;
        }
    if (neighbors_.size() >= 256) neighbors_.erase(neighbors_.begin());
    Neighbor n{ip, {}, port};
    std::memcpy(n.mac, f + 6, 6);
    neighbors_.push_back(n);
}

void Switch::arp(size_t port, const uint8_t* f, size_t n) {
    if (n < 42 || be16(f + 14) != 1 || be16(f + 16) != NRL_ETHERTYPE_IPV4) return;
    const uint32_t sender = be32(f + 28), target = be32(f + 38);
    if (target != ip_ || be16(f + 20) != 1) return;
    {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++arp_;
    }
    bool known = false;
    for (Neighbor& nb : neighbors_)
        if (nb.ip == sender) {
            std::memcpy(nb.mac, f + 22, 6);
            nb.port = port;
            known = true;
        }
    if (!known) {
        Neighbor nb{sender, {}, port};
        std::memcpy(nb.mac, f + 22, 6);
        neighbors_.push_back(nb);
    }
    Port& p = *ports_[port];
    if (uint8_t* o = p.tx_alloc(60)) put_arp(o, 2, f + 22, p.mac(), ip_, f + 22, sender);
}

void Switch::frame(size_t port, const uint8_t* f, size_t n) {
    uint32_t sip, dip, sport, dport;
    size_t len;
    const uint8_t* payload = udp_payload(f, n, &sip, &dip, &sport, &dport, &len);
    if (payload != nullptr && dip == ip_ && dport == udp_) {
        learn(port, f);
        {
            std::lock_guard<std::mutex> lock(stats_mu_);
            ++datagrams_;
        }
        sockaddr_in from{};
        from.sin_family = AF_INET;
        from.sin_addr.s_addr = htonl(sip);
        from.sin_port = htons(uint16_t(sport));
        server_->input(payload, len, from);
        return;
    }
    if (n >= 42 && be16(f + 12) == 0x0806) arp(port, f, n);
    if (port >= 4) return;  // not a MAC port: no ordinary traffic
    // ordinary traffic: the engine's learning switch, port i = SUME MAC port i
    std::lock_guard<std::mutex> lock(sh_->mu);
    Engine& e = sh_->eng;
    e.process(f, n, uint8_t(1u << (2 * port)));
    {
        std::lock_guard<std::mutex> slock(stats_mu_);
        ++l2_;
    }
    for (const OutFrame& o : e.out)
        for (size_t j = 0; j < ports_.size() && j < 4; ++j)
            if (o.ports & (1u << (2 * j)))
                if (uint8_t* d = ports_[j]->tx_alloc(o.len)) {
                    std::memcpy(d, e.out_buf.data() + o.off, o.len);
                    std::lock_guard<std::mutex> slock(stats_mu_);
                    ++tx_;
                }
}

void Switch::out(size_t port, const uint8_t* dst_mac, const uint8_t* body, size_t len,
                 const sockaddr_in& dst) {
    Port& p = *ports_[port];
    uint8_t* f = p.tx_alloc(kHdrLen + len);
    if (f == nullptr) return;
    put_headers(f, dst_mac, p.mac(), ip_, udp_, ntohl(dst.sin_addr.s_addr), ntohs(dst.sin_port),
                len);
    std::memcpy(f + kHdrLen, body, len);
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++tx_;
}

void Switch::send(const uint8_t* body, size_t len, const sockaddr_in& dst) {
    const uint32_t ip = ntohl(dst.sin_addr.s_addr);
    for (const Neighbor& n : neighbors_)
        if (n.ip == ip) return out(n.port, n.mac, body, len, dst);
    {  // never heard from: every port, broadcast
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++flooded_;
    }
    for (size_t i = 0; i < ports_.size(); ++i) out(i, kBroadcast, body, len, dst);
}

void Switch::flush() {
    for (auto& p : ports_) p->flush();
}

void Switch::serve(int poll_ms) {
    std::vector<Port*> ports;
    for (auto& p : ports_) ports.push_back(p.get());
    const Idle idle = Idle::from_env();
    rte_mbuf* bufs[kBurst];
    uint64_t last = now_us();
    while (!stop_.load(std::memory_order_relaxed)) {
        uint64_t got = 0;
        for (size_t i = 0; i < ports_.size(); ++i) {
            const uint16_t k = ports_[i]->rx(bufs, kBurst);
            got += k;
            for (uint16_t j = 0; j < k; ++j) {
                size_t n;
                const uint8_t* f = linear(bufs[j], buf_, &n);
                if (f != nullptr) frame(i, f, n);
                rte_pktmbuf_free(bufs[j]);
            }
        }
        if (got) {
            std::lock_guard<std::mutex> lock(stats_mu_);
            frames_ += got;
        }
        flush();
        if (got) {
            last = now_us();
            continue;
        }
        if (now_us() - last >= idle.spin_us) {
            std::lock_guard<std::mutex> lock(stats_mu_);
            ++idle_sleeps_;
        }
        wait_rx(ports, idle, last, uint64_t(poll_ms) * 1000);
    }
    flush();
}

// ---------------------------------------------------------------------------------------
// Datagram (client)

struct SharedPort {
    explicit SharedPort(const std::string& devargs) : port(devargs) {}
    Port port;
    std::mutex mu;                                   // the port and the queues
    std::map<uint16_t, std::deque<rte_mbuf*>> queues;  // UDP port -> frames for it
    std::deque<rte_mbuf*> other;                     // not UDP (ARP): for whoever looks

    // take what the port has into the queues (the caller holds mu); frames for no one go
    uint16_t poll() {
        rte_mbuf* bufs[kBurst];
        const uint16_t k = port.rx(bufs, kBurst);
        for (uint16_t j = 0; j < k; ++j) {
            rte_mbuf* m = bufs[j];
            const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
            const size_t n = rte_pktmbuf_data_len(m);
            if (n >= kHdrLen && be16(f + 12) == NRL_ETHERTYPE_IPV4 && f[kEthLen + 9] == NRL_IP_PROTO_UDP) {
                const size_t ihl = size_t(f[kEthLen] & 0xF) * 4;
                const uint16_t dport = n >= kEthLen + ihl + 4 ? uint16_t(be16(f + kEthLen + ihl + 2)) : 0;
                auto q = queues.find(dport);
                if (q != queues.end()) {
                    q->second.push_back(m);
                    continue;
                }
            } else if (n >= 42 && be16(f + 12) == 0x0806 && other.size() < 64) {
                other.push_back(m);
                continue;
            }
            rte_pktmbuf_free(m);
        }
        return k;
    }
    ~SharedPort() {
        for (auto& q : queues)
            for (rte_mbuf* m : q.second) rte_pktmbuf_free(m);
        for (rte_mbuf* m : other) rte_pktmbuf_free(m);
    }
};

namespace {

std::mutex shared_mu;
std::map<std::string, std::weak_ptr<SharedPort>> shared_ports;

// the device a devargs string names, without its ethdev name ("net_af_packet3,iface=eth0,...":
// "net_af_packet|iface=eth0,...")
std::string device_key(const std::string& devargs) {
    const size_t comma = devargs.find(',');
    std::string name = devargs.substr(0, comma);
    while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
    return name + "|" + (comma == std::string::npos ? "" : devargs.substr(comma + 1));
}

std::shared_ptr<SharedPort> shared_port(const std::string& devargs) {
    std::lock_guard<std::mutex> lock(shared_mu);
    const std::string key = device_key(devargs);
    if (auto sp = shared_ports[key].lock()) return sp;
    auto sp = std::make_shared<SharedPort>(devargs);
    shared_ports[key] = sp;
    return sp;
}

}  // namespace

Datagram::Datagram(const std::string& devargs, uint32_t ip, uint16_t udp, uint32_t switch_ip,
                   uint16_t switch_udp, double arp_timeout)
    : sp_(shared_port(devargs)), idle_(Idle::from_env()), ip_(ip), sip_(switch_ip), udp_(udp),
      sudp_(switch_udp) {
    {
        std::lock_guard<std::mutex> lock(sp_->mu);
        if (sp_->queues.count(udp_))
            throw std::runtime_error("DPDK: UDP port " + std::to_string(udp_) +
                                     " is already open on " + sp_->port.name());
        sp_->queues[udp_];
    }
    lin_.resize(kFrameBytes);
    const uint64_t until = now_us() + uint64_t(std::max(arp_timeout, 0.0) * 1e6) + 5000000;
    while (!sp_->port.link_up() && now_us() < until) usleep(1000);  // memif: the peer connects
    resolved_ = resolve(arp_timeout);
    handle_ = register_datagram_port(this);
}

Datagram::~Datagram() {
    unregister_datagram_port(handle_);
    std::lock_guard<std::mutex> lock(sp_->mu);
    auto q = sp_->queues.find(udp_);
    if (q != sp_->queues.end()) {
        for (rte_mbuf* m : q->second) rte_pktmbuf_free(m);
        sp_->queues.erase(q);
    }
}

std::map<std::string, uint64_t> Datagram::stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {{"sent", sent_}, {"received", received_}, {"ignored", ignored_},
            {"tx_dropped", sp_->port.tx_dropped()}};
}

bool Datagram::resolve(double timeout) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t end = now_us() + uint64_t(std::max(timeout, 0.0) * 1e6);
    uint64_t next = 0;
    const uint8_t zero[6] = {};
    while (now_us() < end) {
        std::unique_lock<std::mutex> plock(sp_->mu);
        if (now_us() >= next) {  // ask again every 100 ms
            if (uint8_t* f = sp_->port.tx_alloc(60))
                put_arp(f, 1, kBroadcast, sp_->port.mac(), ip_, zero, sip_);
            sp_->port.flush();
            next = now_us() + 100000;
        }
        const uint16_t k = sp_->poll();
        bool found = false;
        while (!sp_->other.empty()) {
            rte_mbuf* m = sp_->other.front();
            sp_->other.pop_front();
            const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
            if (!found && be16(f + 20) == 2 && be32(f + 28) == sip_) {
                std::memcpy(dst_mac_, f + 22, 6);
                found = true;
            }
            rte_pktmbuf_free(m);
        }
        plock.unlock();
        if (found) return true;
        if (k == 0) usleep(200);
    }
    return false;
}

bool Datagram::put(const uint8_t* p, size_t n) {
    uint8_t* f = sp_->port.tx_alloc(kHdrLen + n);
    if (f == nullptr) return false;
    put_headers(f, dst_mac_, sp_->port.mac(), ip_, udp_, sip_, sudp_, n);
    std::memcpy(f + kHdrLen, p, n);
    ++sent_;
    return true;
}

int Datagram::send(const uint8_t* p, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> plock(sp_->mu);
    put(p, n);
    sp_->port.flush();
    return 0;
}

int Datagram::send_segments(const uint8_t* p, size_t n, size_t seg) {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> plock(sp_->mu);
    for (size_t off = 0; off < n; off += seg) put(p + off, std::min(seg, n - off));
    sp_->port.flush();
    return 0;
}

const uint8_t* Datagram::accept(const uint8_t* f, size_t n, size_t* len) {
    uint32_t sip, dip, sport, dport;
    const uint8_t* payload = udp_payload(f, n, &sip, &dip, &sport, &dport, len);
    if (payload == nullptr || dip != ip_ || dport != udp_ || sip != sip_ || sport != sudp_)
        return nullptr;
    return payload;
}

size_t Datagram::recv(uint8_t* buf, size_t cap, double timeout, size_t* seg) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t start = now_us();
    const uint64_t end = start + uint64_t(std::max(timeout, 0.0) * 1e6);
    std::vector<Port*> ports{&sp_->port};
    for (;;) {
        {
            std::lock_guard<std::mutex> plock(sp_->mu);
            std::deque<rte_mbuf*>& q = sp_->queues[udp_];
            if (q.empty()) sp_->poll();
            while (!q.empty()) {
                rte_mbuf* m = q.front();
                q.pop_front();
                size_t n, len = 0;
                const uint8_t* f = linear(m, lin_, &n);
                const uint8_t* p = f != nullptr ? accept(f, n, &len) : nullptr;
                if (p == nullptr) {
                    ++ignored_;
                    rte_pktmbuf_free(m);
                    continue;
                }
                const size_t k = std::min(len, cap);
                std::memcpy(buf, p, k);
                rte_pktmbuf_free(m);
                ++received_;
                *seg = k;
                return k;
            }
        }
        const uint64_t now = now_us();
        if (now >= end) {
            *seg = 0;
            return 0;
        }
        bool shared;
        {
            std::lock_guard<std::mutex> plock(sp_->mu);
            shared = sp_->queues.size() > 1;
        }
        // another Datagram of this port may take our frames off the ring into our queue
        // while we sleep on it: then look at the queue at least every millisecond
        wait_rx(ports, idle_, start, shared ? std::min<uint64_t>(end - now, 1000) : end - now);
    }
}

}  // namespace nrl::dpdk
