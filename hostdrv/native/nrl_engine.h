// SPDX-License-Identifier: MIT
// netfpga-rl native switch engine: hostdrv.switch.reference.SwitchModel in C++17, bit for bit.
//
// hostdrv/switch/reference/ is the specification (docs/protocol.md sections 4 to 7, and 11:
// jobs); every rule below names the step of SwitchModel.process it implements. Constants and
// the register map, with its write rules (NRL_WRITE_RULES), come from the generated
// nrl_protocol.h (scripts/gen_regs.py).
//
// Sources: nrl_engine.cpp (frames, checks, aggregation), nrl_engine_regs.cpp (register
// pages, the job table and its write refusals), nrl_engine_replay.cpp (the replay tables).
#ifndef NRL_ENGINE_H
#define NRL_ENGINE_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "nrl_protocol.h"

namespace nrl {

/// Big-endian (network order) field access.
inline uint32_t be16(const uint8_t* p) { return (uint32_t(p[0]) << 8) | p[1]; }
inline uint32_t be32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}
inline void put16(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}

/// The IPv4 header checksum of a header as put_ipv4_udp writes it (identification, TOS 0).
inline uint32_t ip_checksum(uint32_t total_len, uint32_t src, uint32_t dst) {
    uint32_t s = (NRL_IPV4_VER_IHL << 8) + total_len + NRL_IP_FLAGS_DF +
                 ((NRL_IP_TTL << 8) | NRL_IP_PROTO_UDP) + (src >> 16) + (src & 0xFFFF) +
                 (dst >> 16) + (dst & 0xFFFF);
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return ~s & 0xFFFF;
}

/// EtherType, IPv4 and UDP headers (bytes 12 .. 41, docs/protocol.md section 1: DF, TTL,
/// UDP checksum 0) of frame f in front of a payload_len-byte UDP payload at offset 42;
/// the caller writes the two MAC addresses (bytes 0 .. 11).
inline void put_ipv4_udp(uint8_t* f, uint32_t ip_src, uint32_t ip_dst, uint32_t udp_src,
                         uint32_t udp_dst, uint32_t payload_len) {
    const uint32_t ip_len = NRL_HEADER_OFFSET - NRL_IP_OFFSET + payload_len;
    put16(f + 12, NRL_ETHERTYPE_IPV4);
    uint8_t* ip = f + NRL_IP_OFFSET;
    ip[0] = NRL_IPV4_VER_IHL;
    ip[1] = 0;
    put16(ip + 2, ip_len);
    put16(ip + 4, 0);
    put16(ip + 6, NRL_IP_FLAGS_DF);
    ip[8] = NRL_IP_TTL;
    ip[9] = NRL_IP_PROTO_UDP;
    put16(ip + 10, ip_checksum(ip_len, ip_src, ip_dst));
    put32(ip + 12, ip_src);
    put32(ip + 16, ip_dst);
    uint8_t* udp = f + NRL_UDP_OFFSET;
    put16(udp, udp_src);
    put16(udp + 2, udp_dst);
    put16(udp + 4, NRL_HEADER_OFFSET - NRL_UDP_OFFSET + payload_len);
    put16(udp + 6, 0);
}

/// One frame the switch emits: bytes [off, off + len) of Engine::out_buf, SUME port bitmap.
struct OutFrame {
    uint32_t off;
    uint32_t len;
    uint8_t ports;
};

/// Metadata of one register (from NRL_REGISTER_TABLE).
struct RegInfo {
    const char* name;
    uint32_t addr;
    uint32_t access;
    uint32_t reset;
    uint32_t width;
    bool param;
    bool server;
    bool job;  // every job has a copy in its page (job * NRL_JOB_PAGE + addr); else page 0 only
    bool admin;  // written by the admin key only (the soft switch's control channel)
};

#ifdef NRL_PLANT_BUG
extern int planted_bug;  // see nrl_engine.cpp
#endif

/// Register lookup by byte offset in a page (0 .. NRL_JOB_PAGE - 1); nullptr when no
/// register lives there.
const RegInfo* reg_info(uint32_t addr);
/// Every register, in table order (count in *n).
const RegInfo* reg_table(size_t* n);

/// The write rule of an rw register (hw/regs.yaml `legal:` / `self_clear:`, generated into
/// nrl_protocol.h as NRL_WRITE_RULES; hostdrv.wire.regmap.WRITE_RULES / SELF_CLEARING).
struct WriteRule {
    uint32_t addr;
    uint32_t checks;  // NRL_RULE_* flags: which of the fields below apply
    uint32_t bits;  // the defined bits
    uint32_t max;  // at most this
    uint32_t multiple;  // a multiple of this
    uint32_t low;  // with high: at least this
    uint32_t high;  // at most this register's value (address) ...
    const char* high_name;  // ... named so
    uint32_t at_least;  // not below this register's value (address) ...
    const char* at_least_name;  // ... named so
    uint32_t self_clear;  // bits that act when written 1 and read 0
};

inline constexpr WriteRule kWriteRules[] = {
#define NRL_X(name, checks, bits, max, multiple, low, high, high_name, at_least, at_least_name, \
              self_clear)                                                                       \
    {NRL_REG_##name, checks, bits, max, multiple, low, high, high_name, at_least, at_least_name, \
     self_clear},
    NRL_WRITE_RULES(NRL_X)
#undef NRL_X
};

/// The write rule of the register at addr; nullptr when it has none.
inline const WriteRule* write_rule(uint32_t addr) {
    for (const WriteRule& w : kWriteRules)
        if (w.addr == addr) return &w;
    return nullptr;
}

/// The register bounding a bits_of rule (NRL_BITS_OF: JOB_ENABLE by JOBS).
struct BitsOf {
    uint32_t addr;  // the rw register
    uint32_t bound;  // only bits 0 .. this register's value - 1 (a global register)
};

inline constexpr BitsOf kBitsOf[] = {
#define NRL_X(name, bound) {NRL_REG_##name, bound},
    NRL_BITS_OF(NRL_X)
#undef NRL_X
};

/// Why `value` may not be written to rw register `r` with write rule `rule` (nullptr: none),
/// the registers of its page holding `regs` now and the global ones (page 0) `globals`; ""
/// when it may. hostdrv.wire.regrules.refusal word for word.
inline std::string write_refusal(const RegInfo& r, const WriteRule* rule, uint32_t value,
                                 const uint32_t* regs, const uint32_t* globals) {
    char buf[128];
    if (r.width < 32 && value >> r.width) {
        std::snprintf(buf, sizeof buf, "must be an unsigned %u-bit value", unsigned(r.width));
        return buf;
    }
    if (rule == nullptr) return {};
    const uint32_t checks = rule->checks;
    const uint32_t m = checks & NRL_RULE_MULTIPLE ? rule->multiple : 0;
    if (checks & NRL_RULE_BITS && value & ~rule->bits) {
        std::string list;
        for (unsigned i = 0; i < 32; ++i) {
            if (!(rule->bits >> i & 1)) continue;
            if (!list.empty()) list += uint64_t(rule->bits) >> (i + 1) ? ", " : " and ";
            list += std::to_string(i);
        }
        return "only bits " + list + " are defined";
    }
    if (checks & NRL_RULE_MAX && value > rule->max) {
        std::snprintf(buf, sizeof buf, "at most %u", rule->max);
        return buf;
    }
    if (checks & NRL_RULE_RANGE) {
        const uint32_t high = regs[rule->high >> 2];
        if (!(rule->low <= value && value <= high) || (m && value % m)) {
            if (m)
                std::snprintf(buf, sizeof buf, "must be a multiple of %u in %u .. %s (%u)", m,
                              rule->low, rule->high_name, high);
            else
                std::snprintf(buf, sizeof buf, "must be %u .. %s (%u)", rule->low,
                              rule->high_name, high);
            return buf;
        }
    } else if (m && value % m) {
        if (m & (m - 1))
            std::snprintf(buf, sizeof buf, "must be a multiple of %u", m);
        else
            std::snprintf(buf, sizeof buf, "must be a multiple of 2^%d (0x%x)", __builtin_ctz(m), m);
        return buf;
    }
    if (checks & NRL_RULE_AT_LEAST && value < regs[rule->at_least >> 2]) {
        std::snprintf(buf, sizeof buf, "below %s (%u): lower %s first", rule->at_least_name,
                      regs[rule->at_least >> 2], rule->at_least_name);
        return buf;
    }
    if (checks & NRL_RULE_ONE_HOT && value & (value - 1)) return "must be 0 or one-hot (one SUME port)";
    if (checks & NRL_RULE_BITS_OF) {
        for (const BitsOf& b : kBitsOf) {
            if (b.addr != r.addr) continue;
            const uint32_t n = globals[b.bound >> 2];
            if (n < 32 && value >> n) {
                std::snprintf(buf, sizeof buf, "only bits 0 .. %d (%s = %u)", int(n) - 1,
                              reg_info(b.bound)->name, n);
                return buf;
            }
        }
    }
    return {};
}

/// The replay rate limiter (docs/protocol.md section 5): hostdrv.wire.ratelimit.RateLimiter,
/// Reverb's CanInsert / CanSample with their bookkeeping. Configuration as the registers hold
/// it (RPL_MIN_SIZE; RPL_SPI and RPL_SPI_ERROR unsigned Q16.16), state the signed 64-bit
/// Q16.16 accumulator RPL_RATE_DIFF = inserts * SPI - samples * 1.0; comparisons are exact.
/// The caller owns the table and passes its size; a refused request changes nothing.
class RateLimiter {
public:
    /// Register writes: RPL_MIN_SIZE and RPL_SPI_ERROR keep the accumulator, RPL_SPI clears it.
    void set_min_size(uint32_t v) { min_size_ = v; }
    void set_error(uint32_t v) { error_ = v; }
    void set_spi(uint32_t v) {
        spi_ = v;
        word_ = 0;
    }
    /// RPL_RESET: the table was emptied.
    void reset() { word_ = 0; }
    /// RPL_RATE_DIFF as the unsigned 64-bit register.
    uint64_t word() const { return word_; }

    /// Whether n records may be inserted into a table holding size.
    bool can_insert(uint32_t n, uint32_t size) const {
        return !(spi_ && uint64_t(size) + n > min_size_ &&
                 diff() + static_cast<__int128>(n) * spi_ > offset() + error_);
    }
    /// 0 when n samples may be served from a table holding size, else the NOT_YET reason
    /// (NRL_NOT_YET_MIN_SIZE, NRL_NOT_YET_RATE).
    uint32_t sample_refusal(uint32_t n, uint32_t size) const {
        if (size < min_size_) return NRL_NOT_YET_MIN_SIZE;
        if (spi_ && diff() - static_cast<__int128>(n) * NRL_SPI_ONE < offset() - error_)
            return NRL_NOT_YET_RATE;
        return 0;
    }
    bool can_sample(uint32_t n, uint32_t size) const { return sample_refusal(n, size) == 0; }
    /// Bookkeeping after an allowed insert of n records / sample of n records.
    void insert(uint32_t n) { word_ += uint64_t(n) * spi_; }
    void sample(uint32_t n) { word_ -= uint64_t(n) * NRL_SPI_ONE; }

private:
    __int128 diff() const { return static_cast<__int128>(static_cast<int64_t>(word_)); }
    __int128 offset() const { return static_cast<__int128>(spi_) * min_size_; }

    uint32_t min_size_ = NRL_RST_RPL_MIN_SIZE;
    uint32_t spi_ = NRL_RST_RPL_SPI;
    uint32_t error_ = NRL_RST_RPL_SPI_ERROR;
    uint64_t word_ = 0;
};

/// One job's replay table (docs/protocol.md sections 5 and 11): records JOB_RPL_BASE ..
/// JOB_RPL_BASE + JOB_RPL_CAP - 1 of the record memory, JOB_RPL_RECORD bytes each, with its
/// own size, write pointer, sum tree, generator (RPL_SEED of its page), rate limiter and record
/// chains. Its tree and chains exist while its job is enabled (configure / release).
struct ReplayTable {
    uint32_t cap = 0;  // C = JOB_RPL_CAP (0: no table); indices 0 .. C - 1
    uint32_t rb = 0;  // R = JOB_RPL_RECORD
    uint32_t base = 0;  // JOB_RPL_BASE: record i is record base + i of the memory
    uint32_t wp = 0, size = 0, rng = NRL_RST_RPL_SEED;
    RateLimiter limiter;  // its registers' copy and RPL_RATE_DIFF
    std::vector<uint64_t> tree;  // node 1 the root, leaf i node cap + i
    // record chains (stacked samples): per record the member that pushed it, that member's
    // PUSHed-record count then (from 1 after an emptying) and its previous record; per member
    // its last record and its count
    std::vector<uint8_t> owner;
    std::vector<uint32_t> wseq, prev;
    uint32_t last[NRL_MAX_MEMBERS], pushed[NRL_MAX_MEMBERS];

    /// The table of C = cap records of rb bytes from record base on, emptied (memory for its
    /// tree and chains allocated).
    void configure(uint32_t cap_, uint32_t rb_, uint32_t base_);
    /// No memory (its job is disabled), emptied.
    void release();
    /// RPL_RESET: size, write pointer, priorities, RPL_RATE_DIFF and chains cleared; the
    /// generator is not reseeded.
    void empty();
    /// The sum tree's total (RPL_TOTAL_*).
    uint64_t total() const { return tree.empty() ? 0 : tree[1]; }
    void tree_set(uint32_t index, uint64_t priority);
    uint32_t tree_find(uint64_t target) const;
    /// RPL_SEED: 0 seeds the reset value.
    void seed(uint32_t v) { rng = v ? v : NRL_RST_RPL_SEED; }
    uint32_t draw() {
        uint32_t x = rng;
        x ^= x << NRL_XORSHIFT_A;
        x ^= x >> NRL_XORSHIFT_B;
        x ^= x << NRL_XORSHIFT_C;
        rng = x;
        return x;
    }
    /// Stack positions 0 .. k - 1 of sampled record `index` into chain[] (oldest first,
    /// NRL_NO_INDEX where the chain broke): ReplayBlock._chain.
    void stack_chain(uint32_t index, uint32_t k, uint32_t* chain) const;
};

/// Member table entry i's registers (offsets in a page).
inline constexpr uint32_t kMemberStride = NRL_REG_MEMBER_PORT_1 - NRL_REG_MEMBER_PORT_0;
inline constexpr uint32_t kMemberIp = NRL_REG_MEMBER_IP_0 - NRL_REG_MEMBER_PORT_0;
inline constexpr uint32_t kMemberUdp = NRL_REG_MEMBER_UDP_0 - NRL_REG_MEMBER_PORT_0;
inline constexpr uint32_t kMemberRole = NRL_REG_MEMBER_ROLE_0 - NRL_REG_MEMBER_PORT_0;
inline constexpr uint32_t kMemberEnd = NRL_REG_MEMBER_PORT_0 + NRL_MAX_MEMBERS * kMemberStride;
inline constexpr uint32_t member_port(uint32_t i) { return NRL_REG_MEMBER_PORT_0 + i * kMemberStride; }

class Engine {
public:
    /// Parameters as SwitchModel's (validated by the caller, hostdrv.switch.native); jobs is
    /// JOBS, 1 .. NRL_MAX_JOBS.
    Engine(uint32_t capacity, uint32_t record_bytes, uint32_t max_slots, uint32_t max_elems,
           uint32_t build_hash, uint32_t jobs = 1);

    /// Register read by byte address, job j's page at j * NRL_JOB_PAGE (the address must be
    /// a register: page_reg() != nullptr).
    uint32_t read(uint32_t addr) const;
    /// Register write by byte address (as read); returns 0 on success, else (nothing changed)
    /// 1 read-only, 2 out of range (why holds the rule: NRL_WRITE_RULES of nrl_protocol.h, in
    /// hostdrv.wire.regrules.refusal's words, or the job table's refusal), 3 no register.
    int write(uint32_t addr, uint32_t value, std::string* why);
    /// The register at byte address addr of this switch (its page below JOBS, a global one in
    /// page 0 only); nullptr when none.
    const RegInfo* page_reg(uint32_t addr) const;
    /// JOBS.
    uint32_t jobs() const { return jobs_; }

    /// Process one frame from one-hot src_port; the emitted frames are in out[] (cleared first).
    void process(const uint8_t* frame, size_t n, uint8_t src_port);

    std::vector<OutFrame> out;
    std::vector<uint8_t> out_buf;

    /// Bumped by every successful register write (the server loop rebuilds its tables).
    uint64_t generation = 0;
    /// Member entries whose registers were written since the server loop last looked: bit
    /// j * NRL_MAX_MEMBERS + i for job j's entry i.
    uint64_t members_written = 0;

private:
    enum State : uint8_t { OPEN = 0, UP = 1, DONE = 2 };
    struct Copy {
        bool valid = false;
        uint32_t round = 0;
        uint32_t bitmap = 0;
        uint32_t count = 0;
        uint32_t aux = 0;
        uint32_t total = 0;
        bool error = false;
        uint32_t culprit = 0;
        State state = OPEN;
        uint32_t step = 0;  // aux of the GRADIENT that opened it: the step id (sync only)
    };
    /// One entry of the learning switch's MAC table (hostdrv.switch.reference.L2Table).
    struct L2Entry {
        uint64_t mac = 0;
        uint8_t port = 0;
        bool valid = false;
        bool active = false;
    };
    struct Rx {
        const uint8_t* eth_src;
        uint32_t ip_src;
        uint32_t udp_src;
        uint8_t port;
    };
    static constexpr uint32_t kWords = NRL_JOB_PAGE / 4;

    // the page of the frame in process (pg_, job_, tb_: the selected job's, else page 0's)
    uint32_t& R(uint32_t addr) { return pg_[addr >> 2]; }
    uint32_t R(uint32_t addr) const { return pg_[addr >> 2]; }
    void inc(uint32_t addr) { pg_[addr >> 2] += 1; }
    // a global register (page 0)
    uint32_t G(uint32_t addr) const { return regs_[0][addr >> 2]; }
    // job j's copy of a job register
    uint32_t& J(uint32_t j, uint32_t addr) { return regs_[j][addr >> 2]; }
    uint32_t J(uint32_t j, uint32_t addr) const { return regs_[j][addr >> 2]; }
    void select(uint32_t j) {
        job_ = j;
        pg_ = regs_[j];
        tb_ = &tables_[j];
    }
    /// Physical slot memory slot of the selected job's slot s.
    uint32_t phys(uint32_t s) const { return R(NRL_REG_JOB_SLOT_BASE) + s; }
    uint32_t* acc(uint32_t slot, uint32_t q) {
        return &acc_[(static_cast<size_t>(phys(slot)) * 2 + q) * max_elems_];
    }
    Copy& copy(uint32_t slot, uint32_t q) { return copies_[size_t(phys(slot)) * 2 + q]; }
    const uint8_t* record(uint32_t index) const {
        return &records_[(size_t(tb_->base) + index) * rb_];
    }

    // the job table (nrl_engine_regs.cpp)
    bool enabled(uint32_t j) const { return G(NRL_REG_JOB_ENABLE) >> j & 1; }
    /// Why job j holding share (JOB_SLOT_BASE, JOB_SLOT_COUNT, JOB_RPL_BASE, JOB_RPL_CAP,
    /// JOB_ID) collides with another job of mask `others` (jobs.py _conflict); "" when not.
    std::string overlap(uint32_t j, const uint32_t share[5], uint32_t others) const;
    /// Section 11's refusal of writing value to job j's register off, the register's own
    /// legal: rule passed (jobs.py share_refusal, word for word); "" when taken.
    std::string job_refusal(uint32_t j, uint32_t off, uint32_t value) const;
    /// Free the slot copies of job j's range.
    void free_slots(uint32_t j);
    /// Empty job j's table (and give it memory while its job is enabled).
    void empty_table(uint32_t j);

    // ordinary traffic: L2Table.egress, .learn, .tick
    uint8_t l2_egress(const uint8_t* f, size_t n, uint8_t src_port) const;
    void l2_learn(const uint8_t* f, size_t n, uint8_t src_port);
    void l2_tick();

    void gradient(const uint8_t* f, uint32_t w, uint32_t slot, uint32_t r, uint32_t aux,
                  uint32_t total, const Rx& rx);
    void result(const uint8_t* f, uint32_t slot, uint32_t r, uint32_t aux, uint32_t total,
                uint32_t flags, uint32_t worker);
    // replay (nrl_engine_replay.cpp), on the selected job's table
    void push(const uint8_t* f, uint32_t w, uint32_t seq, uint32_t count, const Rx& rx);
    void sample(uint32_t w, uint32_t seq, uint32_t batch, bool prioritized, uint32_t stack,
                const Rx& rx);
    void update(const uint8_t* f, uint32_t count);
    /// The NOT_YET answer to a refused PUSH (op PUSH_ACK) or SAMPLE_REQ (op SAMPLE_RESP).
    void not_yet(uint32_t op, uint32_t w, uint32_t seq, uint32_t reason, const Rx& rx);

    uint32_t agg_flags(const Copy* c) const;
    void multicast(uint32_t slot, uint32_t q);
    /// The copy's RESULT to one member; step_error: w's step mismatch on a DONE copy (ERROR
    /// forced on, worker = w, aux = the copy's total).
    void resend(uint32_t slot, uint32_t q, const Rx& rx, bool step_error = false, uint32_t w = 0);
    void up(uint32_t slot, uint32_t q);
    uint8_t* frame(const uint8_t* eth_dst, uint32_t ip_dst, uint32_t udp_dst, uint32_t op,
                   uint32_t flags, uint32_t worker, uint32_t slot, uint32_t seq, uint32_t count,
                   uint32_t aux, uint32_t payload_len, uint32_t total, uint8_t ports);

    uint32_t cap_, rb_, max_slots_, max_elems_, jobs_;
    uint32_t regs_[NRL_MAX_JOBS][kWords];  // page j: job j's registers (page 0: the globals too)
    uint32_t* pg_ = regs_[0];
    uint32_t job_ = 0;
    ReplayTable tables_[NRL_MAX_JOBS];
    ReplayTable* tb_ = &tables_[0];
    std::vector<Copy> copies_;  // [physical slot * 2 + q]
    std::vector<uint32_t> acc_;
    // the record memory, C * R bytes from calloc (tables carve it: record i of job j's table is
    // record JOB_RPL_BASE + i): a large memory (2^20 records of 8 KB) is zero pages the kernel
    // maps as records are written, so a soft switch starts at once and uses what it holds
    struct FreeBytes {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t[], FreeBytes> records_;
    L2Entry l2_[NRL_L2_ENTRIES];
    uint32_t l2_victim_ = 0;                      // replacement pointer
    uint32_t l2_left_ = NRL_RST_L2_AGE_FRAMES;    // frames until the aging sweep
};

}  // namespace nrl

#endif  // NRL_ENGINE_H
