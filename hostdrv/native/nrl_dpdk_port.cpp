// SPDX-License-Identifier: MIT
// DPDK setup (nrl_dpdk.h; docs/bypass.md): the EAL, one Port per virtual device (its mbuf
// pool, Rx/Tx queues, Tx batch, the socket or eventfd an idle loop blocks on) and wait_rx.
// The loops over ports, the soft switch's and the clients', are in nrl_dpdk.cpp.
#include "nrl_dpdk.h"

#include <dirent.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "nrl_engine.h"

namespace nrl::dpdk {

namespace {

constexpr uint32_t kPoolMbufs = 2047;     // per port
constexpr uint16_t kRingDesc = 512;

std::mutex init_mu;
bool eal_up = false;
std::atomic<uint32_t> pool_serial{0};

uint32_t env_u32(const char* name, uint32_t dflt) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return dflt;
    return uint32_t(std::strtoul(v, nullptr, 10));
}

// the open file descriptors of this process
std::vector<int> open_fds() {
    std::vector<int> fds;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d))
            if (std::isdigit(static_cast<unsigned char>(e->d_name[0]))) fds.push_back(std::atoi(e->d_name));
        closedir(d);
    }
    return fds;
}

// the AF_PACKET or AF_XDP socket a PMD opened on interface ifindex among the fds that were
// not open before (-1: none): its ring is what the port reads, and poll() on it blocks until
// a frame is there, so an idle loop can sleep in the kernel instead of spinning
int ring_socket(const std::vector<int>& before, unsigned ifindex) {
    constexpr int kAfXdp = 44;
    for (int fd : open_fds()) {
        bool old = false;
        for (int b : before) old |= b == fd;
        if (old) continue;
        int domain = 0;
        socklen_t len = sizeof domain;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) continue;
        if (domain == kAfXdp) return fd;
        if (domain != AF_PACKET) continue;
        sockaddr_ll a{};
        len = sizeof a;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
            unsigned(a.sll_ifindex) == ifindex)
            return fd;
    }
    return -1;
}

}  // namespace

uint64_t now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000u + uint64_t(ts.tv_nsec) / 1000u;
}

bool initialized() {
    std::lock_guard<std::mutex> lock(init_mu);
    return eal_up;
}

void init(const std::vector<std::string>& extra) {
    std::lock_guard<std::mutex> lock(init_mu);
    if (eal_up) return;
    // no shared configuration and a prefix per process: any number of processes (the
    // switch, each client) run their own EAL side by side
    std::vector<std::string> args = {"netrl", "--no-huge", "--no-pci", "-m", "256", "--no-shconf",
                                     "--file-prefix=netrl-" + std::to_string(getpid()),
                                     "--no-telemetry", "-l", "0", "--log-level=*:error"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // the EAL pins the calling thread to lcore 0: give it back every CPU it had
    cpu_set_t cpus;
    const bool had = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
    const int r = rte_eal_init(int(args.size()), argv.data());
    if (had) sched_setaffinity(0, sizeof cpus, &cpus);
    if (r < 0)
        throw std::runtime_error(std::string("DPDK EAL did not start: ") +
                                 rte_strerror(rte_errno));
    eal_up = true;
}

Idle Idle::from_env() {
    return {env_u32("NRL_DPDK_SPIN_US", 20), std::max<uint32_t>(1, env_u32("NRL_DPDK_SLEEP_US", 20))};
}

// ---------------------------------------------------------------------------------------
// Port

Port::Port(const std::string& devargs) {
    if (!initialized()) init({});
    name_ = devargs.substr(0, devargs.find(','));
    unsigned ifindex = 0;
    const size_t at = devargs.find("iface=");
    if (at != std::string::npos) {
        const std::string iface = devargs.substr(at + 6, devargs.find(',', at) - at - 6);
        ifindex = if_nametoindex(iface.c_str());
    }
    const std::vector<int> fds_before = open_fds();
    if (rte_dev_probe(devargs.c_str()) != 0)
        throw std::runtime_error("DPDK: cannot create port " + devargs + ": " +
                                 rte_strerror(rte_errno));
    if (rte_eth_dev_get_port_by_name(name_.c_str(), &id_) != 0) {
        rte_eal_hotplug_remove("vdev", name_.c_str());
        throw std::runtime_error("DPDK: no ethdev named " + name_ + " after probing " + devargs);
    }
    auto fail = [&](const std::string& what, int err) {
        rte_eth_dev_close(id_);
        rte_eal_hotplug_remove("vdev", name_.c_str());
        if (pool_ != nullptr) rte_mempool_free(pool_);
        throw std::runtime_error("DPDK: port " + devargs + ": " + what + ": " +
                                 rte_strerror(err < 0 ? -err : err));
    };
    const std::string pool = "nrl" + std::to_string(pool_serial.fetch_add(1)) + "_" + name_;
    // af_xdp registers the pool as its UMEM, whose chunks may not exceed a page (XDP_UMEM_REG
    // refuses 9 KB mbufs with EINVAL): 2 KB frames there, no jumbo frames
    const bool xdp = name_.rfind("net_af_xdp", 0) == 0;
    max_frame_ = xdp ? RTE_MBUF_DEFAULT_DATAROOM : kFrameBytes;
    pool_ = rte_pktmbuf_pool_create(pool.substr(0, RTE_MEMPOOL_NAMESIZE - 1).c_str(), kPoolMbufs,
                                    0, 0, uint16_t(max_frame_ + RTE_PKTMBUF_HEADROOM),
                                    int(rte_socket_id()));
    if (pool_ == nullptr) fail("no mbuf pool", rte_errno);
    rte_eth_conf conf{};
    // Rx interrupts only when asked (NRL_DPDK_RX_INTR=1): none of af_packet, af_xdp and
    // memif gives ethdev an Rx interrupt handle in DPDK 22.11 (measured: "Rx Intr handle
    // unset"), so the loops poll with bounded spinning and short sleeps (Idle)
    conf.intr_conf.rxq = env_u32("NRL_DPDK_RX_INTR", 0) != 0;
    int r = rte_eth_dev_configure(id_, 1, 1, &conf);
    if (r != 0) {
        conf.intr_conf.rxq = 0;
        r = rte_eth_dev_configure(id_, 1, 1, &conf);
    }
    if (r != 0) fail("configure", r);
    uint16_t nrx = kRingDesc, ntx = kRingDesc;
    rte_eth_dev_adjust_nb_rx_tx_desc(id_, &nrx, &ntx);
    if ((r = rte_eth_rx_queue_setup(id_, 0, nrx, rte_eth_dev_socket_id(id_), nullptr, pool_)) != 0)
        fail("Rx queue", r);
    if ((r = rte_eth_tx_queue_setup(id_, 0, ntx, rte_eth_dev_socket_id(id_), nullptr)) != 0)
        fail("Tx queue", r);
    if ((r = rte_eth_dev_start(id_)) != 0) fail("start", r);
    rte_eth_promiscuous_enable(id_);
    rte_ether_addr a;
    rte_eth_macaddr_get(id_, &a);
    std::memcpy(mac_, a.addr_bytes, 6);
    if (conf.intr_conf.rxq) {
        const int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(id_, 0);
        if (fd >= 0 && rte_eth_dev_rx_intr_enable(id_, 0) == 0) {
            rte_eth_dev_rx_intr_disable(id_, 0);
            rx_fd_ = fd;
            intr_ = true;
        }
    } else if (ifindex != 0) {
        rx_fd_ = ring_socket(fds_before, ifindex);  // af_packet / af_xdp: wait in poll()
    }
    tx_.reserve(kBurst * 8);
}

Port::~Port() {
    flush();
    for (rte_mbuf* m : tx_) rte_pktmbuf_free(m);
    rte_eth_dev_stop(id_);
    rte_eth_dev_close(id_);
    rte_eal_hotplug_remove("vdev", name_.c_str());
    rte_mempool_free(pool_);
}

uint16_t Port::rx(rte_mbuf** bufs, uint16_t n) { return rte_eth_rx_burst(id_, 0, bufs, n); }

uint8_t* Port::tx_alloc(size_t len) {
    if (len > max_frame_) {
        ++tx_dropped_;
        return nullptr;
    }
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) {  // the pool is out: send what waits and try once more
        flush();
        m = rte_pktmbuf_alloc(pool_);
        if (m == nullptr) {
            ++tx_dropped_;
            return nullptr;
        }
    }
    uint8_t* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len)));
    tx_.push_back(m);
    if (tx_.size() >= kBurst * 8) {
        flush();
    }
    return p;
}

void Port::flush() {
    size_t sent = 0;
    for (int tries = 0; sent < tx_.size() && tries < 100; ++tries) {
        const uint16_t k = rte_eth_tx_burst(id_, 0, tx_.data() + sent,
                                            uint16_t(std::min<size_t>(tx_.size() - sent, 512)));
        sent += k;
        if (k == 0) rte_pause();
    }
    for (size_t i = sent; i < tx_.size(); ++i) rte_pktmbuf_free(tx_[i]);
    tx_dropped_ += tx_.size() - sent;
    tx_.clear();
}

void Port::rx_intr(bool on) {
    if (!intr_) return;
    if (on)
        rte_eth_dev_rx_intr_enable(id_, 0);
    else
        rte_eth_dev_rx_intr_disable(id_, 0);
}

bool Port::link_up() const {
    rte_eth_link l{};
    rte_eth_link_get_nowait(id_, &l);
    return l.link_status == RTE_ETH_LINK_UP;
}

void wait_rx(const std::vector<Port*>& ports, const Idle& idle, uint64_t idle_since,
             uint64_t timeout_us) {
    thread_local bool slack = false;
    if (!slack) {  // sleeps of tens of us, not the default 50 us of timer slack on top
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
        slack = true;
    }
    const uint64_t now = now_us();
    if (now - idle_since < idle.spin_us || timeout_us == 0) {
        rte_pause();
        return;
    }
    bool pollable = !ports.empty();
    for (Port* p : ports) pollable &= p->rx_fd() >= 0;
    if (pollable) {
        // a ring socket (af_packet, af_xdp) reports a frame waiting in its ring; an Rx
        // interrupt's eventfd only frames that arrive after it is armed, so that wait is
        // cut at 2 ms (a frame that came in between costs that much at worst)
        std::vector<pollfd> fds;
        bool intr = false;
        for (Port* p : ports) {
            p->rx_intr(true);
            intr |= p->has_intr();
            fds.push_back({p->rx_fd(), POLLIN, 0});
        }
        const uint64_t cap_ms = intr ? 2 : 1000;
        const int ms = int(std::min<uint64_t>((timeout_us + 999) / 1000, cap_ms));
        if (poll(fds.data(), fds.size(), ms) > 0 && intr)
            for (const pollfd& f : fds)
                if (f.revents & POLLIN) {
                    uint64_t v;
                    [[maybe_unused]] ssize_t r = read(f.fd, &v, sizeof v);
                }
        for (Port* p : ports) p->rx_intr(false);
        return;
    }
    const uint64_t us = std::min<uint64_t>(idle.sleep_us, timeout_us);
    timespec ts{time_t(us / 1000000), long(us % 1000000) * 1000};
    nanosleep(&ts, nullptr);
}

}  // namespace nrl::dpdk
