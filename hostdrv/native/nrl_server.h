// SPDX-License-Identifier: MIT
// The soft switch's data plane: a UDP socket loop around the native engine
// (hostdrv.switch.soft, --engine native). Semantics: SoftSwitch._process.
#ifndef NRL_SERVER_H
#define NRL_SERVER_H

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <netinet/in.h>
#include <sys/uio.h>

#include "nrl_engine.h"

namespace nrl {

/// The engine and the mutex every user takes (Python calls and the server loop).
struct SharedEngine {
    SharedEngine(uint32_t c, uint32_t r, uint32_t s, uint32_t p, uint32_t h, uint32_t jobs = 1)
        : eng(c, r, s, p, h, jobs) {}
    Engine eng;
    std::mutex mu;
};

/// Where a Server sends its datagrams instead of its socket (a set of DPDK ports,
/// nrl_dpdk.cpp): send queues one datagram to dst, flush sends what was queued.
struct DatagramEgress {
    virtual ~DatagramEgress() = default;
    virtual void send(const uint8_t* body, size_t len, const sockaddr_in& dst) = 0;
    virtual void flush() = 0;
};

class Server {
public:
    /// fd: a bound, non-blocking AF_INET UDP socket (owned by the caller). control: a
    /// Python callable (data: bytes, host: str, port: int) -> bytes, called (GIL held)
    /// for every datagram that starts with b"NRLC"; its reply goes back to the sender.
    Server(std::shared_ptr<SharedEngine> engine, int fd, pybind11::object control,
           bool log_arrivals);
    ~Server();
    /// Serve until stop() (the caller releases the GIL).
    void serve(int poll_ms);
    void stop() { stop_.store(true); }
    /// datagrams, sent, send_calls, receives, busy_us, rx_overflow
    std::map<std::string, uint64_t> stats();
    /// GRADIENT datagrams received since the last call: (slot, seq, worker, aux, payload).
    pybind11::list arrivals();
    /// Send through `egress` instead of the socket from now on (nullptr: the socket again).
    void set_egress(DatagramEgress* egress) { egress_ = egress; }
    /// One datagram from `from` received by another loop (a DPDK port; GIL released): the
    /// same processing as a datagram on the socket, its replies sent before returning.
    void input(const uint8_t* data, size_t n, const sockaddr_in& from);

private:
    struct Member {
        uint8_t port;
        int job;             // page
        int index;           // member entry
        uint32_t job_id;     // its page's JOB_ID: the multicast RESULTs it takes carry it
        sockaddr_in dst;     // valid when fixed or the entry's last address is known
        bool fixed;
    };
    struct Exact {
        uint32_t ip;
        uint32_t udp;
        uint8_t port;
    };
    struct AnyPort {
        uint32_t ip;
        int job;
        int index;
        uint8_t port;
    };
    void rebuild();
    void datagram(const uint8_t* data, size_t n, size_t seg, const sockaddr_in& from,
                  bool in_place = false);
    void control(const uint8_t* data, size_t n, const sockaddr_in& from);
    void queue(const uint8_t* body, size_t len, const sockaddr_in& dst);
    void flush();
    void send_one(const uint8_t* data, size_t len, const sockaddr_in& dst);

    std::shared_ptr<SharedEngine> sh_;
    int fd_;
    pybind11::object control_;
    std::atomic<bool> stop_{false};
    std::mutex stats_mu_;
    struct Arrival {
        uint32_t slot, seq, worker, aux;
        std::string payload;
    };
    bool log_arrivals_;
    std::vector<Arrival> arrivals_;  // guarded by stats_mu_
    uint64_t datagrams_ = 0, sent_ = 0, send_calls_ = 0, receives_ = 0, busy_us_ = 0,
             rx_overflow_ = 0;
    // routing tables (DatagramLoop._rebuild_tables): every enabled job's member table
    uint64_t generation_ = ~uint64_t(0);
    std::vector<Exact> exact_;
    std::vector<AnyPort> any_;
    std::vector<Member> members_;
    uint8_t page_of_id_[256] = {};  // JOB_ID -> the enabled job carrying it (0: none)
    bool last_known_[NRL_MAX_JOBS][NRL_MAX_MEMBERS] = {};
    sockaddr_in last_[NRL_MAX_JOBS][NRL_MAX_MEMBERS] = {};
    uint8_t stranger_ = 0x80;
    uint32_t mcast_ = 0, switch_ip_ = 0, udp_port_ = 0;
    uint8_t mac_[6] = {};
    // buffers
    std::vector<uint8_t> rx_;      // kBatch receive buffers
    std::vector<uint8_t> frame_;   // one input frame
    std::vector<uint8_t> tx_;      // queued datagrams
    struct Pending {
        size_t off, len;
        sockaddr_in dst;
    };
    std::vector<Pending> pending_;
    struct Dest {
        sockaddr_in dst;
        std::vector<size_t> items;  // indices into pending_
    };
    struct Msg {
        size_t first, count, seg, iov;  // a GSO run: first pending_ item, segments, size, iovs_
    };
    std::vector<Dest> dsts_;
    std::vector<Msg> msgs_;
    std::vector<iovec> iovs_;
    bool gso_ = true;
    DatagramEgress* egress_ = nullptr;
    std::mutex input_mu_;  // input() callers (one DPDK loop today)
};

}  // namespace nrl

#endif  // NRL_SERVER_H
