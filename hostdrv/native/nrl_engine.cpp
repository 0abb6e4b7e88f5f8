// SPDX-License-Identifier: MIT
// netfpga-rl native switch engine: hostdrv.switch.reference.SwitchModel in C++17, bit for bit.
//
// Built with -DNRL_PLANT_BUG (only tests/test_conformance.py does, into a second copy of
// the module) the engine can plant a known bug, chosen with plant_bug(n), so the
// conformance suite shows it catches each one:
//   1: a NaN sum keeps its payload (no canonical NaN)
//   2: a duplicate GRADIENT counts as LATE
//   3: the uniform sampler draws (x * (size - 1)) >> 32
//   4: a RESEND RESULT lacks the RESEND flag
//   5: an UPDATE accepts index == size
//   6: the MAC table's replacement pointer never advances (every new MAC replaces entry 0)
//   7: a step mismatch on a DONE copy gets the plain RESEND (no forced ERROR)
//   8: the far-ahead bound is off by one (a round exactly AGG_AHEAD_ROUNDS ahead passes)
//   9: a sync leaf sends its round, not its step, up
// (bugs 3 and 5 live in nrl_engine_replay.cpp). The normal build has none of this code.
#include "nrl_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#ifdef NRL_PLANT_BUG
namespace nrl {
int planted_bug = 0;
}
#define NRL_BUG(n) (::nrl::planted_bug == (n))
#else
#define NRL_BUG(n) false
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the engine keeps little-endian payload words as host words"
#endif

namespace nrl {

namespace {

constexpr uint8_t kBroadcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
constexpr uint32_t kCanonicalNan = 0x7FC00000u;

inline uint32_t le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// IEEE 754 binary32 addition (round to nearest even, subnormals kept: no -ffast-math,
// default MXCSR), every NaN result the canonical quiet NaN (hostdrv.wire.fp32.fp32_add_bits)
// (the loops vectorize: the planted-bug flag is read once, blocks of 16 elements, P's quantum)
inline void fp32_add_run(uint32_t* __restrict acc, const uint8_t* __restrict x, uint32_t n,
                         bool canonical) {
    for (uint32_t i = 0; i < n; ++i) {
        float a, b;
        std::memcpy(&a, &acc[i], 4);
        std::memcpy(&b, x + 4 * i, 4);
        const float s = a + b;
        uint32_t bits;
        std::memcpy(&bits, &s, 4);
        acc[i] = canonical && s != s ? kCanonicalNan : bits;
    }
}

inline void fp32_add(uint32_t* acc, const uint8_t* x, uint32_t p) {
    const bool canonical = !NRL_BUG(1);
    uint32_t i = 0;
    for (; i + 16 <= p; i += 16) fp32_add_run(acc + i, x + 4 * i, 16, canonical);
    fp32_add_run(acc + i, x + 4 * i, p - i, canonical);
}

}  // namespace

// -- the learning switch (hostdrv.switch.reference.L2Table) ---------------------------------

namespace {
inline uint64_t mac48(const uint8_t* p) {
    uint64_t m = 0;
    for (int i = 0; i < 6; ++i) m = (m << 8) | p[i];
    return m;
}
}  // namespace

uint8_t Engine::l2_egress(const uint8_t* f, size_t n, uint8_t src_port) const {
    const uint8_t flood = uint8_t(NRL_MAC_PORTS & ~src_port);
    if (n < NRL_ETH_LEN || (f[0] & 1)) return flood;
    const uint64_t dst = mac48(f);
    for (const L2Entry& e : l2_)
        if (e.valid && e.mac == dst) return uint8_t(e.port & ~src_port);
    return flood;
}

void Engine::l2_learn(const uint8_t* f, size_t n, uint8_t src_port) {
    if (n < NRL_ETH_LEN || (f[6] & 1)) return;
    const uint64_t src = mac48(f + 6);
    L2Entry* hit = nullptr;
    for (L2Entry& e : l2_) {
        if (e.valid && e.mac == src) {
            hit = &e;
            break;
        }
    }
    if (hit == nullptr) {  // a new MAC: the entry at the replacement pointer
        hit = &l2_[l2_victim_];
        if (!NRL_BUG(6)) l2_victim_ = (l2_victim_ + 1) % NRL_L2_ENTRIES;
        hit->mac = src;
        hit->valid = true;
    }
    hit->port = src_port;
    hit->active = true;
}

void Engine::l2_tick() {
    const uint32_t age = G(NRL_REG_L2_AGE_FRAMES);
    if (age == 0) return;
    if (l2_left_ > 1) {
        --l2_left_;
        return;
    }
    l2_left_ = age;
    for (L2Entry& e : l2_) {
        if (!e.active) e.valid = false;
        e.active = false;
    }
}

// -- frames -------------------------------------------------------------------

void Engine::process(const uint8_t* f, size_t n, uint8_t src_port) {
    out.clear();
    out_buf.clear();
    if (n < NRL_HEADER_OFFSET || f[12] != (NRL_ETHERTYPE_IPV4 >> 8) ||
        f[13] != (NRL_ETHERTYPE_IPV4 & 0xFF) || f[14] != NRL_IPV4_VER_IHL ||
        f[23] != NRL_IP_PROTO_UDP || be16(f + NRL_UDP_OFFSET + 2) != G(NRL_REG_UDP_PORT)) {
        // ordinary traffic: look up, then learn and age
        regs_[0][NRL_REG_CNT_PASS >> 2] += 1;
        const uint8_t ports = l2_egress(f, n, src_port);
        l2_learn(f, n, src_port);
        l2_tick();
        if (ports) {
            out_buf.assign(f, f + n);
            out.push_back({0, uint32_t(n), ports});
        }
        return;
    }
    // a protocol frame teaches the MAC table too
    l2_learn(f, n, src_port);
    l2_tick();
    // the frame's job (section 11): the lowest enabled job whose JOB_ID is its job byte; its
    // page counts the frame and holds everything the checks and the engines use. None (or a
    // frame too short to name one): page 0, and check 3 drops it
    bool claimed = false;
    select(0);
    if (n > NRL_OFF_JOB) {
        const uint32_t en = G(NRL_REG_JOB_ENABLE);
        for (uint32_t j = 0; j < jobs_; ++j)
            if (en >> j & 1 && J(j, NRL_REG_JOB_ID) == f[NRL_OFF_JOB]) {
                select(j);
                claimed = true;
                break;
            }
    }
    const uint32_t op = n > NRL_OFF_OPCODE ? f[NRL_OFF_OPCODE] : 0;
    uint32_t rx_counter = 0, role_bit = 0;
    switch (op) {
        case NRL_OP_GRADIENT: rx_counter = NRL_REG_CNT_RX_GRADIENT; role_bit = NRL_ROLE_WORKER; break;
        case NRL_OP_RESULT: rx_counter = NRL_REG_CNT_RX_RESULT; break;
        case NRL_OP_PUSH: rx_counter = NRL_REG_CNT_RX_PUSH; role_bit = NRL_ROLE_ACTOR; break;
        case NRL_OP_SAMPLE_REQ: rx_counter = NRL_REG_CNT_RX_SAMPLE; role_bit = NRL_ROLE_LEARNER; break;
        case NRL_OP_UPDATE: rx_counter = NRL_REG_CNT_RX_UPDATE; role_bit = NRL_ROLE_LEARNER; break;
        default: break;
    }
    // 0. RX counters, before any check
    if (rx_counter) inc(rx_counter);
    // 1. frame, IPv4 and UDP lengths
    if (n < NRL_PAYLOAD_OFFSET || n > NRL_MAX_FRAME_LEN) return inc(NRL_REG_CNT_DROP_BAD_LENGTH);
    const uint32_t ip_len = be16(f + NRL_IP_OFFSET + 2);
    const uint32_t ip_src = be32(f + NRL_IP_OFFSET + 12);
    const uint32_t udp_src = be16(f + NRL_UDP_OFFSET);
    const uint32_t udp_len = be16(f + NRL_UDP_OFFSET + 4);
    if (ip_len != n - NRL_IP_OFFSET || udp_len != n - NRL_UDP_OFFSET)
        return inc(NRL_REG_CNT_DROP_BAD_LENGTH);
    // 2. header
    const uint32_t ver = f[NRL_OFF_VERSION], flags = f[NRL_OFF_FLAGS];
    const uint32_t worker = be16(f + NRL_OFF_WORKER), slot = be16(f + NRL_OFF_SLOT);
    const uint32_t seq = be32(f + NRL_OFF_SEQ), count = be16(f + NRL_OFF_COUNT);
    const uint32_t aux = be32(f + NRL_OFF_AUX), total = be32(f + NRL_OFF_TOTAL);
    const bool agg = op == NRL_OP_GRADIENT || op == NRL_OP_RESULT;
    if (ver != NRL_VERSION || !rx_counter || (flags & ~NRL_FLAGS_MASK) || (total && !agg))
        return inc(NRL_REG_CNT_DROP_BAD_HEADER);
    // 3. job
    if (!claimed) return inc(NRL_REG_CNT_DROP_BAD_JOB);
    // 4. engine (a job without a replay table: DISABLED replay)
    if (!(G(NRL_REG_CTRL) & (agg ? NRL_CTRL_AGG_ENABLE : NRL_CTRL_RPL_ENABLE)) ||
        (!agg && R(NRL_REG_JOB_RPL_CAP) == 0))
        return inc(NRL_REG_CNT_DROP_DISABLED);
    // 5-6. sender
    if (op == NRL_OP_RESULT) {
        if (R(NRL_REG_AGG_ROLE) != 1 || !(src_port & R(NRL_REG_AGG_UPLINK_PORT)) ||
            ip_src != R(NRL_REG_AGG_PARENT_IP))
            return inc(NRL_REG_CNT_DROP_SPOOFED);
    } else {
        const uint32_t limit = op == NRL_OP_GRADIENT ? R(NRL_REG_AGG_MEMBERS) : NRL_MAX_MEMBERS;
        if (worker >= limit || !(R(member_port(worker) + kMemberRole) & role_bit))
            return inc(NRL_REG_CNT_DROP_UNKNOWN_WORKER);
        const uint32_t base = member_port(worker);
        const uint32_t m_udp = R(base + kMemberUdp);
        if (!(src_port & R(base)) || ip_src != R(base + kMemberIp) || (m_udp && udp_src != m_udp))
            return inc(NRL_REG_CNT_DROP_SPOOFED);
    }
    // 7. count, 8. payload length
    bool ok;
    size_t plen;
    if (agg) {
        ok = count == R(NRL_REG_AGG_ELEMS) && (total || op == NRL_OP_RESULT);
        plen = size_t(4) * count;
    } else if (op == NRL_OP_PUSH) {
        ok = 1 <= count && count <= NRL_MAX_PUSH_RECORDS;
        plen = NRL_BLOCK + size_t(count) * R(NRL_REG_JOB_RPL_RECORD);
    } else if (op == NRL_OP_SAMPLE_REQ) {
        ok = 1 <= count && count <= NRL_MAX_BATCH && !(count & (count - 1)) && aux <= NRL_MAX_STACK;
        plen = 0;
    } else {
        ok = 1 <= count && count <= NRL_MAX_UPDATE_PAIRS;
        plen = size_t(8) * count;
    }
    if (!ok) return inc(NRL_REG_CNT_DROP_BAD_COUNT);
    if (n != NRL_PAYLOAD_OFFSET + plen) return inc(NRL_REG_CNT_DROP_BAD_LENGTH);
    const Rx rx{f + 6, ip_src, udp_src, src_port};
    if (agg) {
        // 9. dtype, 10. slot
        if ((flags & NRL_FLAG_INT32) != R(NRL_REG_AGG_DTYPE)) return inc(NRL_REG_CNT_DROP_BAD_DTYPE);
        if (slot >= std::min(R(NRL_REG_AGG_SLOTS), R(NRL_REG_JOB_SLOT_COUNT)))
            return inc(NRL_REG_CNT_DROP_BAD_SLOT);
        // 11. a GRADIENT's round too far ahead of the epoch (behind it: processed)
        if (op == NRL_OP_GRADIENT) {
            const uint32_t ahead = seq - R(NRL_REG_AGG_EPOCH);
            if (ahead >= NRL_AGG_AHEAD_ROUNDS + (NRL_BUG(8) ? 1 : 0) && ahead < 0x80000000u)
                return inc(NRL_REG_CNT_DROP_AHEAD);
        }
        if (op == NRL_OP_GRADIENT) return gradient(f, worker, slot, seq, aux, total, rx);
        return result(f, slot, seq, aux, total, flags, worker);
    }
    if (op == NRL_OP_PUSH) return push(f, worker, seq, count, rx);
    if (op == NRL_OP_SAMPLE_REQ)
        return sample(worker, seq, count, flags & NRL_FLAG_PRIORITIZED, aux, rx);
    update(f, count);
}

// -- aggregation --------------------------------------------------------------

void Engine::gradient(const uint8_t* f, uint32_t w, uint32_t slot, uint32_t r, uint32_t aux,
                      uint32_t total, const Rx& rx) {
    const uint32_t q = r & 1;
    Copy& c = copy(slot, q);
    if (R(NRL_REG_AGG_MODE) && uint32_t(r - aux) > R(NRL_REG_AGG_STALENESS)) {
        // too stale: never added; a DONE copy of this round or a newer one answers
        inc(NRL_REG_CNT_DROP_STALE);
        if (c.valid && c.state == DONE && uint32_t(c.round - r) < 0x80000000u) resend(slot, q, rx);
        return;
    }
    if (c.valid) {
        const uint32_t d = c.round - r;
        if (d && d < 0x80000000u) {  // the copy was reused by a newer round
            inc(NRL_REG_CNT_DROP_STALE);
            if (c.state == DONE) resend(slot, q, rx);
            return;
        }
        if (d) c.valid = false;
    }
    if (!c.valid) c = Copy{true, r, 0, 0, 0, total, false, 0, OPEN, aux};
    if (total != c.total) {  // a tensor of another length: never added
        inc(NRL_REG_CNT_DROP_MISMATCH);
        if (c.state == DONE) return resend(slot, q, rx);
        c.state = DONE;
        c.error = true;
        c.culprit = w;
        c.aux = total;
        return multicast(slot, q);
    }
    if (!R(NRL_REG_AGG_MODE) && aux != c.step) {  // another call's chunk: never added
        inc(NRL_REG_CNT_DROP_MISMATCH);
        if (c.state != DONE) {  // an error copy whose aux (= total) tells a step mismatch
            c.state = DONE;
            c.error = true;
            c.culprit = w;
            c.aux = total;
            return multicast(slot, q);
        }
        return resend(slot, q, rx, !c.error && !NRL_BUG(7), w);
    }
    const uint32_t bit = 1u << w;
    if ((c.bitmap & bit) || c.state != OPEN) {
        inc((c.bitmap & bit) && !NRL_BUG(2) ? NRL_REG_CNT_DROP_DUPLICATE : NRL_REG_CNT_DROP_LATE);
        if (c.state == DONE) return resend(slot, q, rx);
        if (c.state == UP && (c.bitmap & bit)) return up(slot, q);
        return;
    }
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    const uint8_t* x = f + NRL_PAYLOAD_OFFSET;
    uint32_t* a = acc(slot, q);
    if (c.count == 0) {
        std::memcpy(a, x, size_t(4) * p);
    } else if (R(NRL_REG_AGG_DTYPE)) {
        for (uint32_t i = 0; i < p; ++i) a[i] += le32(x + 4 * i);  // wraps modulo 2**32
    } else {
        fp32_add(a, x, p);
    }
    c.bitmap |= bit;
    c.aux = (c.aux & ~NRL_AUX_COUNT_MASK) |
            (w << (NRL_AUX_ORDER_SHIFT + NRL_AUX_ORDER_BITS * c.count));
    c.count += 1;
    c.aux |= c.count;
    if (c.count >= (R(NRL_REG_AGG_MODE) ? R(NRL_REG_AGG_THRESHOLD) : R(NRL_REG_AGG_MEMBERS))) {
        if (R(NRL_REG_AGG_ROLE)) {
            c.state = UP;
            return up(slot, q);
        }
        c.state = DONE;
        multicast(slot, q);
    }
}

void Engine::result(const uint8_t* f, uint32_t slot, uint32_t r, uint32_t aux, uint32_t total,
                    uint32_t flags, uint32_t worker) {
    const uint32_t q = r & 1;
    Copy& c = copy(slot, q);
    if (c.valid && c.round == r && c.state == UP) {
        std::memcpy(acc(slot, q), f + NRL_PAYLOAD_OFFSET, size_t(4) * R(NRL_REG_AGG_ELEMS));
        c.state = DONE;
        c.aux = aux;
        c.total = total;
        c.error = flags & NRL_FLAG_ERROR;
        c.culprit = worker & 0x7;
        return multicast(slot, q);
    }
    if (c.valid && c.round == r && c.state == DONE) return inc(NRL_REG_CNT_DROP_DUPLICATE);
    inc(NRL_REG_CNT_DROP_STALE);
}

uint32_t Engine::agg_flags(const Copy* c) const {
    uint32_t fl = NRL_FLAG_FROM_SWITCH | (R(NRL_REG_AGG_DTYPE) ? NRL_FLAG_INT32 : 0);
    return c != nullptr && c->error ? fl | NRL_FLAG_ERROR : fl;
}

void Engine::multicast(uint32_t slot, uint32_t q) {
    const Copy& c = copy(slot, q);
    uint32_t ports = 0;
    for (uint32_t i = 0; i < R(NRL_REG_AGG_MEMBERS); ++i) ports |= R(member_port(i));
    inc(NRL_REG_CNT_TX_RESULT);
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    uint8_t* pl = frame(kBroadcast, G(NRL_REG_MCAST_IP), G(NRL_REG_UDP_PORT), NRL_OP_RESULT,
                        agg_flags(&c), c.error ? c.culprit : 0, slot, c.round, p, c.aux, 4 * p,
                        c.total, uint8_t(ports));
    std::memcpy(pl, acc(slot, q), size_t(4) * p);
}

void Engine::resend(uint32_t slot, uint32_t q, const Rx& rx, bool step_error, uint32_t w) {
    const Copy& c = copy(slot, q);
    inc(NRL_REG_CNT_TX_RESEND);
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    uint32_t flags = agg_flags(&c) | (NRL_BUG(4) ? 0 : NRL_FLAG_RESEND);
    uint32_t worker = c.error ? c.culprit : 0, aux = c.aux;
    if (step_error) {
        flags |= NRL_FLAG_ERROR;
        worker = w;
        aux = c.total;
    }
    uint8_t* pl = frame(rx.eth_src, rx.ip_src, rx.udp_src, NRL_OP_RESULT, flags, worker, slot,
                        c.round, p, aux, 4 * p, c.total, rx.port);
    std::memcpy(pl, acc(slot, q), size_t(4) * p);
}

void Engine::up(uint32_t slot, uint32_t q) {
    const Copy& c = copy(slot, q);
    inc(NRL_REG_CNT_TX_UP);
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    const uint32_t udp = R(NRL_REG_AGG_PARENT_UDP) ? R(NRL_REG_AGG_PARENT_UDP) : G(NRL_REG_UDP_PORT);
    uint8_t* pl = frame(kBroadcast, R(NRL_REG_AGG_PARENT_IP), udp, NRL_OP_GRADIENT, agg_flags(nullptr),
                        R(NRL_REG_AGG_LEAF_ID), slot, c.round, p,
                        R(NRL_REG_AGG_MODE) || NRL_BUG(9) ? c.round : c.step, 4 * p, c.total,
                        uint8_t(R(NRL_REG_AGG_UPLINK_PORT)));
    std::memcpy(pl, acc(slot, q), size_t(4) * p);
}

// -- frames the switch originates (section 7) ---------------------------------

uint8_t* Engine::frame(const uint8_t* eth_dst, uint32_t ip_dst, uint32_t udp_dst, uint32_t op,
                       uint32_t flags, uint32_t worker, uint32_t slot, uint32_t seq,
                       uint32_t count, uint32_t aux, uint32_t payload_len, uint32_t total,
                       uint8_t ports) {
    const uint32_t n = NRL_PAYLOAD_OFFSET + payload_len;
    const size_t off = out_buf.size();
    out_buf.resize(off + n);
    uint8_t* h = out_buf.data() + off;
    std::memcpy(h, eth_dst, 6);
    put16(h + 6, G(NRL_REG_SWITCH_MAC_HI));
    put32(h + 8, G(NRL_REG_SWITCH_MAC_LO));
    put_ipv4_udp(h, G(NRL_REG_SWITCH_IP), ip_dst, G(NRL_REG_UDP_PORT), udp_dst,
                 n - NRL_HEADER_OFFSET);
    h[NRL_OFF_VERSION] = NRL_VERSION;
    h[NRL_OFF_OPCODE] = uint8_t(op);
    h[NRL_OFF_FLAGS] = uint8_t(flags);
    h[NRL_OFF_JOB] = uint8_t(R(NRL_REG_JOB_ID));
    put16(h + NRL_OFF_WORKER, worker);
    put16(h + NRL_OFF_SLOT, slot);
    put32(h + NRL_OFF_SEQ, seq);
    put16(h + NRL_OFF_COUNT, count);
    put32(h + NRL_OFF_AUX, aux);
    put32(h + NRL_OFF_TOTAL, total);
    out.push_back({uint32_t(off), n, ports});
    return h + NRL_PAYLOAD_OFFSET;
}

}  // namespace nrl
