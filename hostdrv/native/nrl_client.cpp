// SPDX-License-Identifier: MIT
// The all-reduce client's per-packet loop in C++ (Aggregator._run, hostdrv/client/aggregator.py):
// launch chunks into free slots within the window, send runs of consecutive slots with
// UDP GSO, receive RESULTs (UDP GRO) and scatter them, retransmit on the deadline with
// exponential backoff. Same decisions, in the same order, as the Python loop; the
// caller turns the outcome into the same exceptions. The GIL is released throughout.
#include "nrl_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "nrl_engine.h"

namespace nrl {

namespace {

constexpr int kSolUdp = 17;
constexpr int kUdpSegment = 103;
constexpr int kUdpGro = 104;
constexpr size_t kGsoSegments = 64;
constexpr size_t kGsoBytes = 65507;

double monotonic() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// the 22-byte protocol header (hostdrv.wire.protocol.HEADER), big-endian
void header(uint8_t* h, uint32_t op, uint32_t flags, uint32_t job, uint32_t worker, uint32_t slot,
            uint32_t seq, uint32_t count, uint32_t aux, uint32_t total) {
    h[0] = NRL_VERSION;
    h[1] = uint8_t(op);
    h[2] = uint8_t(flags);
    h[3] = uint8_t(job);
    put16(h + 4, worker);
    put16(h + 6, slot);
    put32(h + 8, seq);
    put16(h + 12, count);
    put32(h + 14, aux);
    put32(h + 18, total);
}

// DatagramPort handles: -2 - index
std::mutex ports_mu;
std::vector<DatagramPort*> ports;

// UdpDatagramTransport.send: a full buffer or an ICMP error is a loss (the caller retransmits)
int send_one(int fd, const uint8_t* p, size_t n) {
    if (fd < 0)
        if (DatagramPort* port = datagram_port(fd)) return port->send(p, n);
    if (::send(fd, p, n, 0) >= 0) return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED) return 0;
    return errno;
}

// UdpDatagramTransport.send_segments
int send_segments(int fd, const uint8_t* p, size_t n, size_t seg, bool* gso) {
    if (fd < 0)
        if (DatagramPort* port = datagram_port(fd)) return port->send_segments(p, n, seg);
    if (n <= seg || !*gso) {
        for (size_t off = 0; off < n; off += seg)
            if (int e = send_one(fd, p + off, std::min(seg, n - off))) return e;
        return 0;
    }
    const size_t per_call = std::max<size_t>(1, std::min(kGsoSegments, kGsoBytes / seg));
    const size_t step = per_call * seg;
    for (size_t off = 0; off < n; off += step) {
        const size_t len = std::min(step, n - off);
        if (len <= seg) {
            if (int e = send_one(fd, p + off, len)) return e;
            continue;
        }
        iovec iov{const_cast<uint8_t*>(p + off), len};
        alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(uint16_t))] = {};
        msghdr h{};
        h.msg_iov = &iov;
        h.msg_iovlen = 1;
        h.msg_control = ctl;
        h.msg_controllen = sizeof ctl;
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = kSolUdp;
        c->cmsg_type = kUdpSegment;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        const uint16_t s16 = uint16_t(seg);
        std::memcpy(CMSG_DATA(c), &s16, sizeof s16);
        if (sendmsg(fd, &h, 0) >= 0) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED) continue;
        if (errno != EINVAL && errno != EIO && errno != ENOPROTOOPT && errno != EOPNOTSUPP)
            return errno;
        *gso = false;  // no GSO on this path: one by one from now on
        for (size_t o = 0; o < len; o += seg)
            if (int e = send_one(fd, p + off + o, std::min(seg, len - o))) return e;
    }
    return 0;
}

// UdpDatagramTransport.recv_into: (bytes, segment size), (0, 0) after `timeout` seconds
size_t recv_into(int fd, uint8_t* buf, size_t cap, double timeout, bool gro, size_t* seg) {
    if (fd < 0)
        if (DatagramPort* port = datagram_port(fd)) return port->recv(buf, cap, timeout, seg);
    double deadline = -1.0;
    for (;;) {
        alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(int))];
        iovec iov{buf, cap};
        msghdr h{};
        h.msg_iov = &iov;
        h.msg_iovlen = 1;
        if (gro) {
            h.msg_control = ctl;
            h.msg_controllen = sizeof ctl;
        }
        const ssize_t n = recvmsg(fd, &h, MSG_DONTWAIT);
        if (n >= 0) {
            *seg = size_t(n);
            if (gro)
                for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c))
                    if (c->cmsg_level == kSolUdp && c->cmsg_type == kUdpGro &&
                        c->cmsg_len >= CMSG_LEN(sizeof(int))) {
                        int s;
                        std::memcpy(&s, CMSG_DATA(c), sizeof s);
                        *seg = s ? size_t(s) : size_t(n);
                    }
            return size_t(n);
        }
        if (errno == ECONNREFUSED || errno == EINTR) continue;  // ICMP error of an earlier send
        const double now = monotonic();
        if (deadline < 0) deadline = now + timeout;
        const double left = deadline - now;
        if (left <= 0) {
            *seg = 0;
            return 0;
        }
        pollfd p{fd, POLLIN, 0};
        const double ms = std::min(left * 1000 + 0.999, 1e9);
        poll(&p, 1, std::max(1, int(ms)));
    }
}

// GRADIENT aux of round r of a call based at `base` (a multiple of rpc): the round minus the
// lag in iterations (hostdrv.client.aggregator_loop.lag_aux)
uint32_t lag_aux(uint32_t r, uint32_t base, bool has_version, uint32_t version, uint32_t rpc) {
    if (!has_version) return r;
    const uint32_t d = base - version * rpc;
    return d >= 0x80000000u ? r : r - d / rpc;
}

bool newer(uint32_t a, uint32_t b) {
    const uint32_t d = a - b;
    return d && d < 0x80000000u;
}

}  // namespace

int register_datagram_port(DatagramPort* port) {
    std::lock_guard<std::mutex> lock(ports_mu);
    for (size_t i = 0; i < ports.size(); ++i)
        if (ports[i] == nullptr) {
            ports[i] = port;
            return -2 - int(i);
        }
    ports.push_back(port);
    return -2 - int(ports.size() - 1);
}

void unregister_datagram_port(int handle) {
    std::lock_guard<std::mutex> lock(ports_mu);
    const size_t i = size_t(-2 - handle);
    if (handle <= -2 && i < ports.size()) ports[i] = nullptr;
}

DatagramPort* datagram_port(int handle) {
    if (handle > -2) return nullptr;
    std::lock_guard<std::mutex> lock(ports_mu);
    const size_t i = size_t(-2 - handle);
    return i < ports.size() ? ports[i] : nullptr;
}

AggOutcome agg_run(const AggArgs& a, uint8_t* sbuf, const uint8_t* chunks, uint8_t* out,
                   uint32_t* rounds, uint32_t* aux_of, uint32_t* got_round, uint8_t* taken,
                   bool* gso) {
    AggOutcome res;
    const uint32_t s_count = a.slots, p = a.elems;
    const size_t L = NRL_HEADER_LEN + size_t(4) * p;
    const bool catch_up = a.catch_up;
    const uint32_t rpc = catch_up ? a.rpc : 1, low = rpc - 1;
    std::vector<int64_t> chunk_of(s_count, -1);
    std::vector<uint32_t> cur_round(s_count, 0), tries(s_count, 0), first_round(s_count, 0),
        sent_round(s_count, 0), seen(s_count, 0);
    std::vector<char> waiting(s_count, 0);
    std::vector<double> deadline(s_count, 0.0);
    std::vector<uint32_t> to_send;
    std::vector<uint8_t> rbuf(a.recv_bytes);
    const double inf = std::numeric_limits<double>::infinity();
    uint64_t nxt = 0, done = 0, inflight = 0;
    for (uint64_t c = 0; c < a.n; ++c) done += taken[c] != 0;  // a resumed call's answered chunks
    double next_scan = inf;
    // async: a GRADIENT for round r that is never added (too stale), answered when round r, or a
    // newer one in its copy, is DONE
    std::vector<uint8_t> pbuf(L, 0);
    auto poll = [&](uint32_t s, uint32_t r) -> int {
        header(pbuf.data(), NRL_OP_GRADIENT, a.flags, a.job, a.worker, s, r, p, r - a.poll_lag,
               a.total);
        return send_one(a.fd, pbuf.data(), L);
    };
    // async: the chunk's round is gone: zeros, no contributor (aux 0); the slot goes on from
    // iteration base ib (the slot's)
    auto give_up = [&](uint32_t s, uint32_t ib) {
        const uint64_t c = uint64_t(chunk_of[s]);
        std::memset(out + size_t(c) * 4 * p, 0, size_t(4) * p);
        aux_of[c] = 0;
        got_round[c] = ib + uint32_t(c / s_count);
        taken[c] = 1;
        ++done;
        ++res.missing;
        rounds[s] = ib;
        chunk_of[s] = -1;
        waiting[s] = 0;
        --inflight;
    };
    // async: the slot's GRADIENT now carries round r (the slot reached r - 1)
    auto contribute = [&](uint32_t s, uint32_t r) -> int {
        uint8_t* h = sbuf + s * L;
        header(h, NRL_OP_GRADIENT, a.flags, a.job, a.worker, s, r, p,
               lag_aux(r, rounds[s], a.has_version, a.version, rpc), a.total);
        sent_round[s] = r;
        waiting[s] = 0;
        const int e = send_one(a.fd, h, L);
        deadline[s] = monotonic() + a.timeout;
        tries[s] = 1;
        next_scan = std::min(next_scan, deadline[s]);
        return e;
    };
    while (done < a.n) {
        double now = monotonic();
        // launch what the window and the slots allow
        while (nxt < a.n && inflight < a.window) {
            if (taken[nxt]) {  // answered in the call it resumes, or (async) before it was sent
                ++nxt;
                continue;
            }
            const uint32_t s = uint32_t(nxt % s_count);
            if (chunk_of[s] >= 0) break;
            const uint32_t r = rounds[s] + uint32_t(nxt / s_count);
            chunk_of[s] = int64_t(nxt);
            cur_round[s] = first_round[s] = sent_round[s] = seen[s] = r;
            waiting[s] = 0;
            uint8_t* h = sbuf + s * L;
            const uint32_t aux = catch_up ? lag_aux(r, rounds[s], a.has_version, a.version, rpc)
                                          : a.step;
            header(h, NRL_OP_GRADIENT, a.flags, a.job, a.worker, s, r, p, aux, a.total);
            // chunks holds the tensor's `total` elements: the last chunk may be short,
            // its packet zero padded
            const uint64_t first = nxt * p;
            const size_t have = size_t(std::min<uint64_t>(p, a.total - std::min<uint64_t>(a.total, first)));
            std::memcpy(h + NRL_HEADER_LEN, chunks + first * 4, 4 * have);
            if (have < p) std::memset(h + NRL_HEADER_LEN + 4 * have, 0, size_t(4) * (p - have));
            deadline[s] = now + a.timeout;
            tries[s] = 1;
            next_scan = std::min(next_scan, now + a.timeout);
            to_send.push_back(s);
            ++nxt;
            ++inflight;
        }
        if (!to_send.empty()) {
            size_t i = 0;
            while (i < to_send.size()) {  // runs of consecutive slots: one GSO call each
                size_t j = i + 1;
                while (j < to_send.size() && to_send[j] == to_send[j - 1] + 1) ++j;
                const size_t lo = to_send[i], hi = to_send[j - 1] + 1;
                const int e = hi - lo == 1 ? send_one(a.fd, sbuf + lo * L, L)
                                           : send_segments(a.fd, sbuf + lo * L, (hi - lo) * L, L, gso);
                if (e) {
                    res.code = AggOutcome::OS_ERROR;
                    res.v[0] = uint32_t(e);
                    return res;
                }
                i = j;
            }
            to_send.clear();
        }
        // wait for results until the earliest deadline
        size_t seg = 0;
        const size_t nbytes = recv_into(a.fd, rbuf.data(), rbuf.size(),
                                        std::max(0.0, next_scan - now), a.gro, &seg);
        if (nbytes) {
            if (seg == 0) seg = nbytes;
            for (size_t off = 0; off < nbytes; off += seg) {
                if (std::min(seg, nbytes - off) != L) continue;
                const uint8_t* m = rbuf.data() + off;
                const uint32_t op = m[1], fl = m[2], jb = m[3], w = be16(m + 4), s = be16(m + 6);
                const uint32_t seq = be32(m + 8), cnt = be16(m + 12), aux = be32(m + 14),
                               tot = be32(m + 18);
                if (op != NRL_OP_RESULT || jb != a.job || s >= s_count || cnt != p ||
                    (fl & NRL_FLAG_INT32) != a.flags)
                    continue;
                int64_t c = chunk_of[s];
                bool later = false;  // async: the result of a later chunk of the slot, not sent yet
                if (catch_up) {
                    const uint64_t c2 = uint64_t(seq & low) * s_count + s;
                    later = int64_t(c2) != c && c2 >= nxt && c2 < a.n && !taken[c2] &&
                            seq - (seq & low) == rounds[s];
                    if (later) c = int64_t(c2);
                }
                if (c < 0) continue;
                const uint32_t d = seq - cur_round[s];
                const bool resend = fl & NRL_FLAG_RESEND;
                if (d == 0 || later) {
                } else if (!catch_up) {
                    if (resend && d < 0x80000000u) {  // sync: nobody completes a round without us
                        res.code = AggOutcome::OUT_OF_STEP;
                        res.v[0] = s;
                        res.v[1] = seq;
                        return res;
                    }
                    continue;
                } else {
                    const uint32_t j = uint32_t(uint64_t(c) / s_count);
                    const bool nw = d < 0x80000000u;
                    if (nw && resend && newer(seq, seen[s])) {
                        seen[s] = seq;
                        tries[s] = 1;  // an answer showing the slot moved on: progress
                    }
                    if (nw && (waiting[s] || resend)) {
                        if ((seq & low) != j) {  // another chunk: wait for ours, send it, or
                            const uint32_t ib = seq & ~low, jj = seq & low;  // give it up
                            const uint32_t t = ib + j;
                            if (j + 1 < jj || (t == cur_round[s] && !waiting[s] && tries[s] > 3)) {
                                // its round is gone from the slot (reused by a newer one; or
                                // unanswered while the round after it is DONE)
                                if (rounds[s] != ib) ++res.jumps;
                                give_up(s, ib);
                                continue;
                            }
                            // j > jj: ahead of the slot, wait; j = jj - 1: still held
                            if (t != cur_round[s]) {
                                cur_round[s] = t;
                                rounds[s] = ib;
                                ++res.jumps;
                                waiting[s] = 1;
                            }
                            if (waiting[s] && (t - seq == 1 || seq - t == 1)) {
                                if (int e = contribute(s, t)) {
                                    res.code = AggOutcome::OS_ERROR;
                                    res.v[0] = uint32_t(e);
                                    return res;
                                }
                            }
                            continue;
                        }
                    } else if (waiting[s] && d == 0xFFFFFFFFu) {  // the slot reached the round before ours
                        if (int e = contribute(s, cur_round[s])) {
                            res.code = AggOutcome::OS_ERROR;
                            res.v[0] = uint32_t(e);
                            return res;
                        }
                        continue;
                    } else if (!(waiting[s] && (seq & low) == j &&
                                 uint32_t(seq - first_round[s]) < 0x80000000u)) {
                        continue;
                    }
                }
                if (fl & NRL_FLAG_ERROR) {
                    res.code = AggOutcome::MISMATCH_ERROR;
                    res.v[0] = tot;
                    res.v[1] = aux;
                    res.v[2] = w & 0x7;
                    res.v[3] = s;
                    res.v[4] = seq;
                    return res;
                }
                if (tot != a.total) {
                    res.code = AggOutcome::MISMATCH;
                    res.v[0] = tot;
                    res.v[3] = s;
                    res.v[4] = seq;
                    return res;
                }
                std::memcpy(out + size_t(c) * 4 * p, m + NRL_HEADER_LEN, size_t(4) * p);
                aux_of[c] = aux;
                got_round[c] = seq;
                if (resend) ++res.resent;
                taken[size_t(c)] = 1;
                ++done;
                if (catch_up) {
                    if (later) continue;  // the round it would have been sent with: not stale
                    if (seq != first_round[s]) ++res.stale;  // a newer iteration (catch-up)
                    rounds[s] = seq - uint32_t(uint64_t(c) / s_count);
                }
                chunk_of[s] = -1;
                --inflight;
            }
            now = monotonic();
            if (now < next_scan) continue;
        } else {
            now = monotonic();
        }
        // retransmit what is due (a waiting slot sends its old round: a poll, never added)
        next_scan = inf;
        for (uint32_t s = 0; s < s_count; ++s) {
            if (chunk_of[s] < 0) continue;
            if (deadline[s] <= now) {
                if (tries[s] > a.retries) {
                    res.code = AggOutcome::TIMEOUT;
                    res.v[0] = s;
                    res.v[1] = cur_round[s];
                    res.v[2] = uint32_t(chunk_of[s]);
                    res.v[3] = tries[s];
                    return res;
                }
                // a waiting slot polls the round before its own and its own (never added);
                // without safe polls it repeats its old round, whose copy holds a newer one
                int e = 0;
                if (waiting[s] && a.poll_lag) {
                    e = poll(s, cur_round[s] - 1);
                    if (!e) e = poll(s, cur_round[s]);
                } else {
                    e = send_one(a.fd, sbuf + s * L, L);
                    // unanswered: is the slot past our round (the round after it DONE while
                    // ours is not answered: its copy was reused)?
                    if (!e && catch_up && a.poll_lag && tries[s] > 2) e = poll(s, cur_round[s] + 1);
                }
                if (e) {
                    res.code = AggOutcome::OS_ERROR;
                    res.v[0] = uint32_t(e);
                    return res;
                }
                deadline[s] = now + std::min(a.timeout * std::ldexp(1.0, int(tries[s])),
                                             a.max_backoff);
                ++tries[s];
                ++res.retrans;
            }
            next_scan = std::min(next_scan, deadline[s]);
        }
    }
    return res;
}

SampleOutcome replay_sample(SampleArgs& a, int64_t* idx, uint32_t* prio, uint64_t* totals,
                            uint32_t* size_of, uint8_t* recs) {
    SampleOutcome res;
    struct Pending {
        uint32_t seq;
        size_t req;
        std::vector<bool> got;
        size_t left;
        double deadline;
    };
    std::vector<size_t> base(a.nreqs, 0);
    for (size_t r = 1; r < a.nreqs; ++r) base[r] = base[r - 1] + a.sizes[r - 1];
    std::vector<uint32_t> tries(a.nreqs, 0);
    std::vector<double> rate_since(a.nreqs, 0.0);  // first NOT_YET of each request
    std::vector<uint32_t> rate_count(a.nreqs, 0);  // NOT_YETs of each request
    std::vector<Pending> pending;  // in request order, as the Python dict
    std::vector<uint8_t> rbuf(a.recv_bytes);
    const size_t rb = a.record_bytes, expected = NRL_HEADER_LEN + NRL_BLOCK + rb;
    auto request = [&](size_t r, double now) -> int {
        const uint32_t seq = ++a.seq;
        uint8_t m[NRL_HEADER_LEN];
        header(m, NRL_OP_SAMPLE_REQ, a.flags, a.job, a.worker, 0, seq, a.sizes[r], 0, 0);
        if (int e = send_one(a.fd, m, sizeof m)) return e;
        ++tries[r];
        pending.push_back({seq, r, std::vector<bool>(a.sizes[r], false), a.sizes[r],
                           now + a.timeout * double(1u << std::min<uint32_t>(tries[r] - 1, 4))});
        return 0;
    };
    size_t nxt = 0;
    while (nxt < a.nreqs || !pending.empty()) {
        double now = monotonic();
        while (nxt < a.nreqs && pending.size() < a.window) {
            if (int e = request(nxt, now)) {
                res.code = SampleOutcome::OS_ERROR;
                res.v[0] = uint32_t(e);
                return res;
            }
            ++nxt;
        }
        double first = pending.front().deadline;
        for (const Pending& p : pending) first = std::min(first, p.deadline);
        size_t seg = 0;
        const size_t nbytes = recv_into(a.fd, rbuf.data(), rbuf.size(), std::max(0.0, first - now),
                                        a.gro, &seg);
        const size_t step = std::max<size_t>(seg, 1);
        for (size_t off = 0; off < nbytes; off += step) {
            const size_t len = std::min(seg, nbytes - off);
            if (len != expected && len != NRL_HEADER_LEN) continue;
            const uint8_t* m = rbuf.data() + off;
            const uint32_t op = m[1], jb = m[3], seq = be32(m + 8), i = be32(m + 14);
            size_t k = 0;
            while (k < pending.size() && pending[k].seq != seq) ++k;
            if (op != NRL_OP_SAMPLE_RESP || jb != a.job || k == pending.size()) continue;
            Pending& p = pending[k];
            if (len == NRL_HEADER_LEN) {
                // NOT_YET (protocol section 5): ask again (new seq) after a backoff
                if (!(m[2] & NRL_FLAG_NOT_YET) || be16(m + 12) != 0) continue;
                const size_t r = p.req;
                const double t = monotonic();
                if (rate_count[r]++ == 0) rate_since[r] = t;
                if (t - rate_since[r] > a.rate_timeout) {
                    res.code = SampleOutcome::NOT_YET;
                    res.v[0] = a.sizes[r];
                    res.v[1] = rate_count[r];
                    res.v[2] = be16(m + 6);
                    res.v[3] = i;
                    res.waited = t - rate_since[r];
                    return res;
                }
                tries[r] = 0;  // answered: the resend is no retry of a lost frame
                p.deadline = t + rate_backoff(rate_count[r]);
                continue;
            }
            if (i >= a.sizes[p.req] || p.got[i]) continue;
            const uint8_t* d = m + NRL_HEADER_LEN;
            const size_t at = base[p.req] + i;
            uint32_t ix, pr, sz;
            uint64_t tot;
            std::memcpy(&ix, d + NRL_DESC_INDEX, 4);
            std::memcpy(&pr, d + NRL_DESC_PRIORITY, 4);
            std::memcpy(&tot, d + NRL_DESC_TOTAL, 8);
            std::memcpy(&sz, d + NRL_DESC_SIZE, 4);
            idx[at] = ix;
            prio[at] = pr;
            totals[at] = tot;
            size_of[at] = sz;
            std::memcpy(recs + at * rb, d + NRL_BLOCK, rb);
            p.got[i] = true;
            if (--p.left == 0) pending.erase(pending.begin() + std::ptrdiff_t(k));
        }
        if (nbytes) continue;
        now = monotonic();
        // partial answers are dropped: a new request draws a new stratified batch
        const std::vector<Pending> snapshot = pending;
        for (const Pending& p : snapshot) {
            if (p.deadline > now) continue;
            size_t k = 0;
            while (pending[k].seq != p.seq) ++k;
            pending.erase(pending.begin() + std::ptrdiff_t(k));
            if (tries[p.req] >= a.retries) {
                res.code = SampleOutcome::FAILED;
                res.v[0] = a.sizes[p.req];
                res.v[1] = tries[p.req];
                return res;
            }
            if (int e = request(p.req, now)) {
                res.code = SampleOutcome::OS_ERROR;
                res.v[0] = uint32_t(e);
                return res;
            }
        }
    }
    return res;
}

}  // namespace nrl
