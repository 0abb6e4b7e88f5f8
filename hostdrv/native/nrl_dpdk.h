// SPDX-License-Identifier: MIT
// Kernel-bypass data path (DPDK, built when pkg-config finds libdpdk: setup.py defines
// NRL_DPDK): ports on DPDK virtual devices (net_af_packet / net_af_xdp on a Linux interface,
// net_memif between processes of one host), the soft switch's loop over them (the same
// Server and engine as the UDP loop) and the clients' datagram port. docs/bypass.md.
#ifndef NRL_DPDK_H
#define NRL_DPDK_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nrl_client.h"
#include "nrl_server.h"

struct rte_mbuf;
struct rte_mempool;

namespace nrl::dpdk {

inline constexpr uint32_t kFrameBytes = 9216;  // the largest frame a port carries (jumbo)
inline constexpr uint16_t kBurst = 32;         // frames per rx_burst

/// Start the EAL once per process (--no-huge --no-pci -m 256 --no-shconf plus `extra`);
/// later calls do nothing. The calling thread keeps its CPU affinity. Throws
/// std::runtime_error when the EAL refuses.
void init(const std::vector<std::string>& extra);
bool initialized();

/// How a loop waits for frames when a port is idle: spin (rx_burst) for spin_us after the
/// last frame, then block in poll() on the port's ring socket (af_packet, af_xdp) or, with
/// none (memif), sleep sleep_us at a time; NRL_DPDK_SPIN_US (20) / NRL_DPDK_SLEEP_US (20).
struct Idle {
    uint32_t spin_us;
    uint32_t sleep_us;
    static Idle from_env();
};

/// One DPDK ethdev on a virtual device (devargs "net_af_packet0,iface=eth0", ...),
/// one Rx and one Tx queue, its own mbuf pool (frames up to 9216 bytes; 2048 on af_xdp).
class Port {
public:
    explicit Port(const std::string& devargs);
    ~Port();
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    const std::string& name() const { return name_; }
    const uint8_t* mac() const { return mac_; }
    /// Up to n received frames (the caller frees them with rte_pktmbuf_free).
    uint16_t rx(rte_mbuf** bufs, uint16_t n);
    /// Room for one len-byte frame in the Tx batch (nullptr: none, the frame is lost).
    uint8_t* tx_alloc(size_t len);
    /// Send the Tx batch (what the ring refuses after a few tries is dropped, as on a wire).
    void flush();
    /// What poll() waits on for a frame: the ring socket of af_packet / af_xdp, or the Rx
    /// interrupt's eventfd (NRL_DPDK_RX_INTR=1, a PMD that has one); -1: none (memif).
    int rx_fd() const { return rx_fd_; }
    bool has_intr() const { return intr_; }
    void rx_intr(bool on);
    bool link_up() const;
    uint64_t tx_dropped() const { return tx_dropped_; }

private:
    std::string name_;
    uint16_t id_ = 0;
    rte_mempool* pool_ = nullptr;
    uint8_t mac_[6] = {};
    int rx_fd_ = -1;
    bool intr_ = false;
    size_t max_frame_ = 0;  // the largest frame an mbuf of the pool holds
    std::vector<rte_mbuf*> tx_;
    uint64_t tx_dropped_ = 0;
};

/// Wait until one of `ports` may have a frame, at most timeout_us, with `idle`'s policy;
/// idle_since: when the caller last saw a frame (monotonic us).
void wait_rx(const std::vector<Port*>& ports, const Idle& idle, uint64_t idle_since,
             uint64_t timeout_us);
uint64_t now_us();

/// The soft switch on DPDK ports: every IPv4/UDP frame to the switch's address is a
/// datagram for `server` (nrl_server.cpp: the same addressing and engine as the UDP loop),
/// its replies leave as frames on the port their destination was last heard on; ARP for
/// the switch's address is answered; every other frame is ordinary traffic through the
/// engine's learning switch (port i is SUME MAC port i, bit 1 << 2i; ports 4 and up carry
/// protocol frames only).
class Switch : public DatagramEgress {
public:
    Switch(std::shared_ptr<SharedEngine> engine, Server* server,
           const std::vector<std::string>& devargs, uint32_t ip, uint16_t udp);
    ~Switch() override;
    void serve(int poll_ms);
    void stop() { stop_.store(true); }
    std::map<std::string, uint64_t> stats();
    std::vector<std::string> port_names() const;

    void send(const uint8_t* body, size_t len, const sockaddr_in& dst) override;
    void flush() override;

private:
    struct Neighbor {
        uint32_t ip;
        uint8_t mac[6];
        size_t port;
    };
    void frame(size_t port, const uint8_t* f, size_t n);
    void arp(size_t port, const uint8_t* f, size_t n);
    void learn(size_t port, const uint8_t* f);
    void out(size_t port, const uint8_t* dst_mac, const uint8_t* body, size_t len,
             const sockaddr_in& dst);

    std::shared_ptr<SharedEngine> sh_;
    Server* server_;
    std::vector<std::unique_ptr<Port>> ports_;
    uint32_t ip_;
    uint16_t udp_;
    std::atomic<bool> stop_{false};
    std::vector<Neighbor> neighbors_;
    std::vector<uint8_t> buf_;  // a chained frame made linear
    std::mutex stats_mu_;
    uint64_t frames_ = 0, datagrams_ = 0, l2_ = 0, arp_ = 0, tx_ = 0, flooded_ = 0,
             idle_sleeps_ = 0;
};

/// One client port shared by every Datagram of a process on the same device (af_packet
/// puts a process's sockets on one interface in a fanout group: two ports there would
/// split the frames between them); frames are handed to the Datagram of their UDP port.
struct SharedPort;

/// A client's datagram channel on a DPDK port: frames from (ip, udp) to the switch's
/// (ip, udp) and MAC (resolved with ARP, else broadcast); received frames are taken when
/// they come from the switch's address to ours (a connected socket's rule).
class Datagram : public DatagramPort {
public:
    Datagram(const std::string& devargs, uint32_t ip, uint16_t udp, uint32_t switch_ip,
             uint16_t switch_udp, double arp_timeout);
    ~Datagram() override;
    int handle() const { return handle_; }
    const uint8_t* switch_mac() const { return dst_mac_; }
    bool resolved() const { return resolved_; }
    int send(const uint8_t* p, size_t n) override;
    int send_segments(const uint8_t* p, size_t n, size_t seg) override;
    size_t recv(uint8_t* buf, size_t cap, double timeout, size_t* seg) override;
    std::map<std::string, uint64_t> stats();

private:
    bool put(const uint8_t* p, size_t n);  // the caller holds the port's mutex
    /// the payload of a frame meant for us (nullptr else)
    const uint8_t* accept(const uint8_t* f, size_t n, size_t* len);
    bool resolve(double timeout);

    std::shared_ptr<SharedPort> sp_;
    Idle idle_;
    uint32_t ip_, sip_;
    uint16_t udp_, sudp_;
    uint8_t dst_mac_[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    bool resolved_ = false;
    int handle_ = 0;
    std::vector<uint8_t> lin_;
    uint64_t sent_ = 0, received_ = 0, ignored_ = 0;
    std::mutex mu_;  // one caller at a time (the GIL is released around the loops)
};

}  // namespace nrl::dpdk

#endif  // NRL_DPDK_H
