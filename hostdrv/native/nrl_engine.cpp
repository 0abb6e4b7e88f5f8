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
// The normal build has none of this code.
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

const RegInfo kRegs[] = {
#define NRL_X(name, addr, access, reset, width, param, server) \
    {#name, addr, access, reset, width, param != 0, server != 0},
    NRL_REGISTER_TABLE(NRL_X)
#undef NRL_X
};
constexpr size_t kNRegs = sizeof(kRegs) / sizeof(kRegs[0]);

struct AddrIndex {
    int16_t at[1024];
    AddrIndex() {
        for (auto& a : at) a = -1;
        for (size_t i = 0; i < kNRegs; ++i) at[kRegs[i].addr >> 2] = static_cast<int16_t>(i);
    }
};
const AddrIndex kIndex;

constexpr uint32_t kMemberPort[NRL_MAX_MEMBERS] = {
    NRL_REG_MEMBER_PORT_0, NRL_REG_MEMBER_PORT_1, NRL_REG_MEMBER_PORT_2, NRL_REG_MEMBER_PORT_3,
    NRL_REG_MEMBER_PORT_4, NRL_REG_MEMBER_PORT_5, NRL_REG_MEMBER_PORT_6, NRL_REG_MEMBER_PORT_7};
constexpr uint32_t kMemberStride = NRL_REG_MEMBER_PORT_1 - NRL_REG_MEMBER_PORT_0;
constexpr uint32_t kMemberIp = NRL_REG_MEMBER_IP_0 - NRL_REG_MEMBER_PORT_0;
constexpr uint32_t kMemberUdp = NRL_REG_MEMBER_UDP_0 - NRL_REG_MEMBER_PORT_0;
constexpr uint32_t kMemberRole = NRL_REG_MEMBER_ROLE_0 - NRL_REG_MEMBER_PORT_0;
constexpr uint32_t kMemberEnd = NRL_REG_MEMBER_PORT_0 + NRL_MAX_MEMBERS * kMemberStride;

// writes that invalidate every aggregation slot copy (hostdrv.switch.reference.agg.AGG_CONFIG)
constexpr uint32_t kAggConfig[] = {
    NRL_REG_JOB_ID,        NRL_REG_AGG_MEMBERS,     NRL_REG_AGG_THRESHOLD, NRL_REG_AGG_SLOTS,
    NRL_REG_AGG_ELEMS,     NRL_REG_AGG_DTYPE,       NRL_REG_AGG_MODE,      NRL_REG_AGG_STALENESS,
    NRL_REG_AGG_ROLE,      NRL_REG_AGG_UPLINK_PORT, NRL_REG_AGG_PARENT_IP, NRL_REG_AGG_PARENT_UDP,
    NRL_REG_AGG_LEAF_ID};

constexpr uint8_t kBroadcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
constexpr uint32_t kCanonicalNan = 0x7FC00000u;
constexpr uint32_t kCounterFirst = NRL_REG_CNT_RX_GRADIENT;
constexpr uint32_t kCounterLast = NRL_REG_CNT_DROP_AHEAD;

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

const RegInfo* reg_info(uint32_t addr) {
    if (addr & 3 || addr >= 4096) return nullptr;
    int16_t i = kIndex.at[addr >> 2];
    return i < 0 ? nullptr : &kRegs[i];
}

const RegInfo* reg_table(size_t* n) {
    *n = kNRegs;
    return kRegs;
}

Engine::Engine(uint32_t capacity, uint32_t record_bytes, uint32_t max_slots, uint32_t max_elems,
               uint32_t build_hash)
    : cap_(capacity), rb_(record_bytes), max_slots_(max_slots), max_elems_(max_elems) {
    std::memset(regs_, 0, sizeof(regs_));
    for (const RegInfo& r : kRegs) regs_[r.addr >> 2] = r.reset;
    R(NRL_REG_RPL_CAPACITY) = capacity;
    R(NRL_REG_RPL_RECORD_BYTES) = record_bytes;
    R(NRL_REG_AGG_MAX_SLOTS) = max_slots;
    R(NRL_REG_AGG_MAX_ELEMS) = max_elems;
    R(NRL_REG_BUILD_HASH) = build_hash;
    if (R(NRL_REG_AGG_SLOTS) > max_slots) R(NRL_REG_AGG_SLOTS) = max_slots;
    if (R(NRL_REG_AGG_ELEMS) > max_elems) R(NRL_REG_AGG_ELEMS) = max_elems;
    R(NRL_REG_RPL_RESET) = 0;
    copies_.resize(size_t(max_slots) * 2);
    acc_.assign(size_t(max_slots) * 2 * max_elems, 0);
    records_.reset(static_cast<uint8_t*>(std::calloc(size_t(capacity) * record_bytes, 1)));
    if (!records_) throw std::bad_alloc();
    tree_.assign(size_t(capacity) * 2, 0);
    owner_.assign(capacity, 0);
    wseq_.assign(capacity, 0);
    prev_.assign(capacity, NRL_NO_INDEX);
    reset_chains();
    rng_ = R(NRL_REG_RPL_SEED) ? R(NRL_REG_RPL_SEED) : NRL_RST_RPL_SEED;
    out.reserve(NRL_MAX_BATCH);
}

// -- registers ----------------------------------------------------------------

uint32_t Engine::read(uint32_t addr) const {
    switch (addr) {
        case NRL_REG_RPL_SIZE: return size_;
        case NRL_REG_RPL_WPTR: return wp_;
        case NRL_REG_RPL_TOTAL_LO: return uint32_t(tree_[1]);
        case NRL_REG_RPL_TOTAL_HI: return uint32_t(tree_[1] >> 32);
        case NRL_REG_RPL_RESET: return 0;
        case NRL_REG_RPL_RATE_DIFF_LO: return uint32_t(limiter_.word());
        case NRL_REG_RPL_RATE_DIFF_HI: return uint32_t(limiter_.word() >> 32);
        default: return R(addr);
    }
}

int Engine::write(uint32_t addr, uint32_t value, std::string* why) {
    const RegInfo* r = reg_info(addr);
    if (r == nullptr || r->access != NRL_ACCESS_RW) return 1;
    const WriteRule* rule = write_rule(addr);
    *why = write_refusal(*r, rule, value, regs_);
    if (!why->empty()) return 2;
    ++generation;
    if (addr >= NRL_REG_MEMBER_PORT_0 && addr < kMemberEnd)
        members_written |= uint8_t(1u << ((addr - NRL_REG_MEMBER_PORT_0) / kMemberStride));
    if (addr == NRL_REG_CTRL) {
        if (value & NRL_CTRL_CLEAR_COUNTERS)
            for (uint32_t a = kCounterFirst; a <= kCounterLast; a += 4)
                if (const RegInfo* c = reg_info(a); c && c->access == NRL_ACCESS_RC && !c->server)
                    R(a) = 0;
    } else if (addr == NRL_REG_RPL_SEED) {
        rng_ = value ? value : NRL_RST_RPL_SEED;
    } else if (addr == NRL_REG_L2_AGE_FRAMES) {
        l2_left_ = value;  // a write restarts the aging period
    } else if (addr == NRL_REG_RPL_RESET) {
        if (value) {
            std::fill(tree_.begin(), tree_.end(), 0);
            wp_ = 0;
            size_ = 0;
            limiter_.reset();
            reset_chains();
        }
    } else if (addr == NRL_REG_RPL_SPI) {
        limiter_.set_spi(value);
    } else if (addr == NRL_REG_RPL_MIN_SIZE) {
        limiter_.set_min_size(value);
    } else if (addr == NRL_REG_RPL_SPI_ERROR) {
        limiter_.set_error(value);
    } else {
        for (uint32_t a : kAggConfig)
            if (a == addr)
                for (Copy& c : copies_) c.valid = false;
    }
    R(addr) = rule != nullptr ? value & ~rule->self_clear : value;  // self-clearing bits read 0
    return 0;
}

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
    const uint32_t age = R(NRL_REG_L2_AGE_FRAMES);
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
        f[23] != NRL_IP_PROTO_UDP || be16(f + NRL_UDP_OFFSET + 2) != R(NRL_REG_UDP_PORT)) {
        // ordinary traffic: look up, then learn and age
        inc(NRL_REG_CNT_PASS);
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
    const uint32_t ver = f[NRL_OFF_VERSION], flags = f[NRL_OFF_FLAGS], job = f[NRL_OFF_JOB];
    const uint32_t worker = be16(f + NRL_OFF_WORKER), slot = be16(f + NRL_OFF_SLOT);
    const uint32_t seq = be32(f + NRL_OFF_SEQ), count = be16(f + NRL_OFF_COUNT);
    const uint32_t aux = be32(f + NRL_OFF_AUX), total = be32(f + NRL_OFF_TOTAL);
    const bool agg = op == NRL_OP_GRADIENT || op == NRL_OP_RESULT;
    if (ver != NRL_VERSION || !rx_counter || (flags & ~NRL_FLAGS_MASK) || (total && !agg))
        return inc(NRL_REG_CNT_DROP_BAD_HEADER);
    // 3. job
    if (job != R(NRL_REG_JOB_ID)) return inc(NRL_REG_CNT_DROP_BAD_JOB);
    // 4. engine
    if (!(R(NRL_REG_CTRL) & (agg ? NRL_CTRL_AGG_ENABLE : NRL_CTRL_RPL_ENABLE)))
        return inc(NRL_REG_CNT_DROP_DISABLED);
    // 5-6. sender
    if (op == NRL_OP_RESULT) {
        if (R(NRL_REG_AGG_ROLE) != 1 || !(src_port & R(NRL_REG_AGG_UPLINK_PORT)) ||
            ip_src != R(NRL_REG_AGG_PARENT_IP))
            return inc(NRL_REG_CNT_DROP_SPOOFED);
    } else {
        const uint32_t limit = op == NRL_OP_GRADIENT ? R(NRL_REG_AGG_MEMBERS) : NRL_MAX_MEMBERS;
        if (worker >= limit || !(R(kMemberPort[worker] + kMemberRole) & role_bit))
            return inc(NRL_REG_CNT_DROP_UNKNOWN_WORKER);
        const uint32_t base = kMemberPort[worker];
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
        plen = NRL_BLOCK + size_t(count) * rb_;
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
        if (slot >= R(NRL_REG_AGG_SLOTS)) return inc(NRL_REG_CNT_DROP_BAD_SLOT);
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
    Copy& c = copies_[size_t(slot) * 2 + q];
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
    Copy& c = copies_[size_t(slot) * 2 + q];
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
    const Copy& c = copies_[size_t(slot) * 2 + q];
    uint32_t ports = 0;
    for (uint32_t i = 0; i < R(NRL_REG_AGG_MEMBERS); ++i) ports |= R(kMemberPort[i]);
    inc(NRL_REG_CNT_TX_RESULT);
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    uint8_t* pl = frame(kBroadcast, R(NRL_REG_MCAST_IP), R(NRL_REG_UDP_PORT), NRL_OP_RESULT,
                        agg_flags(&c), c.error ? c.culprit : 0, slot, c.round, p, c.aux, 4 * p,
                        c.total, uint8_t(ports));
    std::memcpy(pl, acc(slot, q), size_t(4) * p);
}

void Engine::resend(uint32_t slot, uint32_t q, const Rx& rx, bool step_error, uint32_t w) {
    const Copy& c = copies_[size_t(slot) * 2 + q];
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
    const Copy& c = copies_[size_t(slot) * 2 + q];
    inc(NRL_REG_CNT_TX_UP);
    const uint32_t p = R(NRL_REG_AGG_ELEMS);
    const uint32_t udp = R(NRL_REG_AGG_PARENT_UDP) ? R(NRL_REG_AGG_PARENT_UDP) : R(NRL_REG_UDP_PORT);
    uint8_t* pl = frame(kBroadcast, R(NRL_REG_AGG_PARENT_IP), udp, NRL_OP_GRADIENT, agg_flags(nullptr),
                        R(NRL_REG_AGG_LEAF_ID), slot, c.round, p,
                        R(NRL_REG_AGG_MODE) || NRL_BUG(9) ? c.round : c.step, 4 * p, c.total,
                        uint8_t(R(NRL_REG_AGG_UPLINK_PORT)));
    std::memcpy(pl, acc(slot, q), size_t(4) * p);
}

// -- replay -------------------------------------------------------------------

void Engine::tree_set(uint32_t index, uint64_t priority) {
    size_t node = size_t(cap_) + index;
    const uint64_t delta = priority - tree_[node];  // modulo 2**64: exact, sums stay < 2**64
    while (node) {
        tree_[node] += delta;
        node >>= 1;
    }
}

uint32_t Engine::tree_find(uint64_t target) const {
    size_t node = 1;
    while (node < cap_) {
        node <<= 1;
        const uint64_t left = tree_[node];
        if (target >= left) {
            target -= left;
            node += 1;
        }
    }
    return uint32_t(node - cap_);
}

void Engine::not_yet(uint32_t op, uint32_t w, uint32_t seq, uint32_t reason, const Rx& rx) {
    inc(op == NRL_OP_PUSH_ACK ? NRL_REG_CNT_TX_PUSH_NOT_YET : NRL_REG_CNT_TX_SAMPLE_NOT_YET);
    frame(rx.eth_src, rx.ip_src, rx.udp_src, op, NRL_FLAG_FROM_SWITCH | NRL_FLAG_NOT_YET, w, reason,
          seq, 0, size_, 0, 0, rx.port);
}

void Engine::push(const uint8_t* f, uint32_t w, uint32_t seq, uint32_t count, const Rx& rx) {
    // rate limiter (docs/protocol.md section 5): Reverb's CanInsert
    if (!limiter_.can_insert(count, size_))
        return not_yet(NRL_OP_PUSH_ACK, w, seq, NRL_NOT_YET_RATE, rx);
    limiter_.insert(count);
    const uint32_t mask = cap_ - 1, first = wp_;
    const uint8_t* src = f + NRL_PAYLOAD_OFFSET + NRL_BLOCK;
    for (uint32_t j = 0; j < count; ++j) {
        std::memcpy(&records_[size_t(wp_) * rb_], src + size_t(j) * rb_, rb_);
        tree_set(wp_, le32(f + NRL_PAYLOAD_OFFSET + 4 * j));
        owner_[wp_] = uint8_t(w);
        wseq_[wp_] = ++pushed_[w];
        prev_[wp_] = last_[w];
        last_[w] = wp_;
        wp_ = (wp_ + 1) & mask;
        if (size_ < cap_) ++size_;
    }
    inc(NRL_REG_CNT_TX_PUSH_ACK);
    frame(rx.eth_src, rx.ip_src, rx.udp_src, NRL_OP_PUSH_ACK, NRL_FLAG_FROM_SWITCH, w, 0, seq,
          count, first, 0, 0, rx.port);
}

void Engine::stack_chain(uint32_t index, uint32_t k, uint32_t* chain) const {
    uint32_t n = 1, x = index;
    chain[k - 1] = index;
    while (n < k) {
        const uint32_t p = prev_[x];
        if (p == NRL_NO_INDEX || owner_[p] != owner_[x] || wseq_[p] != wseq_[x] - 1u) break;
        chain[k - 1 - n++] = p;
        x = p;
    }
    for (uint32_t j = 0; j < k - n; ++j) chain[j] = NRL_NO_INDEX;
}

void Engine::sample(uint32_t w, uint32_t seq, uint32_t batch, bool prioritized, uint32_t stack,
                    const Rx& rx) {
    const uint64_t total = prioritized ? tree_[1] : size_;
    if (size_ == 0 || total == 0) {
        inc(NRL_REG_CNT_DROP_EMPTY);
        return not_yet(NRL_OP_SAMPLE_RESP, w, seq, NRL_NOT_YET_EMPTY, rx);
    }
    // rate limiter (docs/protocol.md section 5): Reverb's CanSample
    if (const uint32_t why = limiter_.sample_refusal(batch, size_))
        return not_yet(NRL_OP_SAMPLE_RESP, w, seq, why, rx);
    limiter_.sample(batch);
    int log2b = 0;
    while ((1u << log2b) < batch) ++log2b;
    const uint64_t seg = tree_[1] >> log2b;
    for (uint32_t i = 0; i < batch; ++i) {
        const uint32_t x = draw();
        uint32_t index;
        if (prioritized) {
            const unsigned __int128 prod = static_cast<unsigned __int128>(x) * seg;
            index = tree_find(uint64_t(i) * seg + uint64_t(prod >> 32));
        } else {
            index = uint32_t((uint64_t(x) * (NRL_BUG(3) ? size_ - 1 : size_)) >> 32);
        }
        // k <= 1: the sampled record alone, descriptor words @24.. zero (as before stacks)
        const uint32_t k = stack > 1 ? stack : 1;
        uint32_t chain[NRL_MAX_STACK];
        if (k > 1)
            stack_chain(index, k, chain);
        else
            chain[0] = index;
        const uint32_t prio = uint32_t(tree_[size_t(cap_) + index]);
        for (uint32_t j = 0; j < k; ++j) {
            const uint32_t at = chain[j];
            inc(NRL_REG_CNT_TX_SAMPLE_RESP);
            uint8_t* pl = frame(rx.eth_src, rx.ip_src, rx.udp_src, NRL_OP_SAMPLE_RESP,
                                NRL_FLAG_FROM_SWITCH, w, 0, seq, 1, i, NRL_BLOCK + rb_, 0, rx.port);
            // descriptor: little-endian index, priority, total (u64), batch, size, and with
            // k >= 2 stack, pos, valid; rest zero
            std::memset(pl, 0, NRL_BLOCK);
            std::memcpy(pl + NRL_DESC_INDEX, &at, 4);
            std::memcpy(pl + NRL_DESC_PRIORITY, &prio, 4);
            std::memcpy(pl + NRL_DESC_TOTAL, &total, 8);
            std::memcpy(pl + NRL_DESC_BATCH, &batch, 4);
            std::memcpy(pl + NRL_DESC_SIZE, &size_, 4);
            if (k > 1) {
                const uint32_t valid = at != NRL_NO_INDEX;
                std::memcpy(pl + NRL_DESC_STACK, &k, 4);
                std::memcpy(pl + NRL_DESC_POS, &j, 4);
                std::memcpy(pl + NRL_DESC_VALID, &valid, 4);
            }
            if (at == NRL_NO_INDEX)
                std::memset(pl + NRL_BLOCK, 0, rb_);
            else
                std::memcpy(pl + NRL_BLOCK, &records_[size_t(at) * rb_], rb_);
        }
    }
}

void Engine::update(const uint8_t* f, uint32_t count) {
    const uint8_t* p = f + NRL_PAYLOAD_OFFSET;
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t index = le32(p + 8 * k), prio = le32(p + 8 * k + 4);
        if (index < size_ + (NRL_BUG(5) ? 1 : 0))
            tree_set(index, prio);
        else
            inc(NRL_REG_CNT_DROP_BAD_INDEX);
    }
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
    put16(h + 6, R(NRL_REG_SWITCH_MAC_HI));
    put32(h + 8, R(NRL_REG_SWITCH_MAC_LO));
    put_ipv4_udp(h, R(NRL_REG_SWITCH_IP), ip_dst, R(NRL_REG_UDP_PORT), udp_dst,
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
