// SPDX-License-Identifier: MIT
// The all-reduce client's per-packet loop (hostdrv.client.aggregator.Aggregator._run) in C++.
#ifndef NRL_CLIENT_H
#define NRL_CLIENT_H

#include <cstddef>
#include <cstdint>

namespace nrl {

/// A datagram channel other than a UDP socket (a DPDK port: nrl_dpdk.cpp) that the client
/// loops use when their fd is a negative handle from register_datagram_port. The same
/// contract as the socket helpers: send never blocks (a full ring is a loss), recv returns
/// one payload (seg = its size) or 0 after `timeout` seconds.
struct DatagramPort {
    virtual ~DatagramPort() = default;
    /// 0, or an errno
    virtual int send(const uint8_t* p, size_t n) = 0;
    /// n bytes of seg-byte datagrams (the last one shorter), sent as one burst
    virtual int send_segments(const uint8_t* p, size_t n, size_t seg) = 0;
    virtual size_t recv(uint8_t* buf, size_t cap, double timeout, size_t* seg) = 0;
};

/// A handle (<= -2) the client loops accept in place of a socket fd; the port stays the
/// caller's and must outlive every call that uses the handle.
int register_datagram_port(DatagramPort* port);
void unregister_datagram_port(int handle);
/// The port of a handle; nullptr for anything else (a socket fd).
DatagramPort* datagram_port(int handle);

struct AggArgs {
    int fd;            // connected, non-blocking UDP socket (UdpDatagramTransport.sock)
    uint64_t n;        // chunks
    uint32_t total;    // tensor elements
    bool has_version;  // async staleness: the iteration the weights are current to (else fresh)
    uint32_t version;
    uint32_t step;     // sync: the call's step id, every chunk's aux
    uint32_t slots, window, elems, flags, job, worker;
    bool catch_up;     // async: rounds per call, a newer iteration's result (catch-up)
    uint32_t rpc;      // async: rounds every slot advances by per call (a power of two)
    uint32_t poll_lag;  // async: AGG_STALENESS + 1 (a GRADIENT never added: a safe poll), 0: none
    double timeout, max_backoff;
    uint32_t retries;
    bool gro;
    size_t recv_bytes;
};

struct AggOutcome {
    enum Code { DONE = 0, OUT_OF_STEP = 1, MISMATCH_ERROR = 2, MISMATCH = 3, TIMEOUT = 4,
                OS_ERROR = 5 };
    int code = DONE;
    // OUT_OF_STEP: slot, seq; MISMATCH_ERROR: tot, aux, culprit, slot, seq; MISMATCH: tot,
    // -, -, slot, seq; TIMEOUT: slot, round, chunk, tries; OS_ERROR: errno
    uint32_t v[5] = {0, 0, 0, 0, 0};
    uint64_t stale = 0, resent = 0, retrans = 0, jumps = 0, missing = 0;
};

/// sbuf: slots * (22 + 4P) bytes of GRADIENT messages (headers rewritten here); chunks: the
/// tensor's `total` words, read in place (the last chunk may be short: its packet is zero
/// padded); out: n * P words; rounds: per slot, its call base (chunk j*S + s takes round base + j;
/// async: a multiple of rpc, moved on by whole iterations); aux_of, got_round: per chunk;
/// taken: per chunk, nonzero when its result is in out (a resumed call: the chunks the
/// timed-out call had), updated; gso: the transport's GSO flag (cleared when the path
/// refuses GSO).
AggOutcome agg_run(const AggArgs& a, uint8_t* sbuf, const uint8_t* chunks, uint8_t* out,
                   uint32_t* rounds, uint32_t* aux_of, uint32_t* got_round, uint8_t* taken,
                   bool* gso);

struct SampleArgs {
    int fd;
    const uint32_t* sizes;  // the batch's power-of-two requests, in order
    size_t nreqs;
    uint32_t flags, job, worker;
    uint32_t seq;  // the endpoint's sequence state (the last seq used), updated
    uint32_t window, retries;
    double timeout;
    uint32_t record_bytes;
    bool gro;
    size_t recv_bytes;
    double rate_timeout;  // seconds a request may be answered NOT_YET (ReplayClient.rate_timeout)
};

/// Backoff before resending a request after its n-th NOT_YET (n from 1): hostdrv.client.replay.rate_backoff.
inline double rate_backoff(uint32_t n) {
    const double d = 0.0005 * double(1u << (n - 1 < 16 ? n - 1 : 16));
    return d < 0.02 ? d : 0.02;
}

struct SampleOutcome {
    enum Code { DONE = 0, FAILED = 1, OS_ERROR = 2, NOT_YET = 3 };
    int code = DONE;
    // FAILED: batch of the request, tries; OS_ERROR: errno;
    // NOT_YET (refused for longer than rate_timeout): batch, NOT_YETs, reason, size
    uint32_t v[4] = {0, 0, 0, 0};
    double waited = 0.0;  // NOT_YET: seconds since the first NOT_YET
};

/// ReplayClient.sample's request/receive loop: idx (int64), prio (u32), totals (u64),
/// size_of (u32) per sample and recs (sample * R bytes) are filled in batch order.
SampleOutcome replay_sample(SampleArgs& a, int64_t* idx, uint32_t* prio, uint64_t* totals,
                            uint32_t* size_of, uint8_t* recs);

}  // namespace nrl

#endif  // NRL_CLIENT_H
