// SPDX-License-Identifier: MIT
// netfpga-rl native switch engine: the register pages and the job table (docs/protocol.md
// section 11): SwitchModel.read / write with their refusals and side effects, bit for bit.
//
// Page j (byte addresses j * NRL_JOB_PAGE + offset, j < JOBS) holds job j's copy of every job
// register; page 0 holds the global ones too. A frame reads and counts in its job's page.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "nrl_engine.h"

namespace nrl {

namespace {

const RegInfo kRegs[] = {
#define NRL_X(name, addr, access, reset, width, param, server, job, admin) \
    {#name, addr, access, reset, width, param != 0, server != 0, job != 0, admin != 0},
    NRL_REGISTER_TABLE(NRL_X)
#undef NRL_X
};
constexpr size_t kNRegs = sizeof(kRegs) / sizeof(kRegs[0]);

struct AddrIndex {
    int16_t at[NRL_JOB_PAGE / 4];
    AddrIndex() {
        for (auto& a : at) a = -1;
        for (size_t i = 0; i < kNRegs; ++i) at[kRegs[i].addr >> 2] = static_cast<int16_t>(i);
    }
};
const AddrIndex kIndex;

// writes that free the slot copies of the job's range (hostdrv.switch.reference.agg.AGG_CONFIG,
// the job's id and slot range)
constexpr uint32_t kFreesSlots[] = {
    NRL_REG_JOB_ID,        NRL_REG_AGG_MEMBERS,     NRL_REG_AGG_THRESHOLD,  NRL_REG_AGG_SLOTS,
    NRL_REG_AGG_ELEMS,     NRL_REG_AGG_DTYPE,       NRL_REG_AGG_MODE,       NRL_REG_AGG_STALENESS,
    NRL_REG_AGG_ROLE,      NRL_REG_AGG_UPLINK_PORT, NRL_REG_AGG_PARENT_IP,  NRL_REG_AGG_PARENT_UDP,
    NRL_REG_AGG_LEAF_ID,   NRL_REG_JOB_SLOT_BASE,   NRL_REG_JOB_SLOT_COUNT};

// a job's share, in the order of Engine::overlap's share[]
constexpr uint32_t kShare[5] = {NRL_REG_JOB_SLOT_BASE, NRL_REG_JOB_SLOT_COUNT, NRL_REG_JOB_RPL_BASE,
                                NRL_REG_JOB_RPL_CAP, NRL_REG_JOB_ID};
enum { kSlotBase, kSlotCount, kRplBase, kRplCap, kId };

constexpr uint32_t kCounterFirst = NRL_REG_CNT_RX_GRADIENT;
constexpr uint32_t kCounterLast = NRL_REG_CNT_DROP_AHEAD;

bool is_one_of(uint32_t addr, const uint32_t* list, size_t n) {
    return std::find(list, list + n, addr) != list + n;
}

}  // namespace

const RegInfo* reg_info(uint32_t addr) {
    if (addr & 3 || addr >= NRL_JOB_PAGE) return nullptr;
    int16_t i = kIndex.at[addr >> 2];
    return i < 0 ? nullptr : &kRegs[i];
}

const RegInfo* reg_table(size_t* n) {
    *n = kNRegs;
    return kRegs;
}

Engine::Engine(uint32_t capacity, uint32_t record_bytes, uint32_t max_slots, uint32_t max_elems,
               uint32_t build_hash, uint32_t jobs)
    : cap_(capacity), rb_(record_bytes), max_slots_(max_slots), max_elems_(max_elems),
      jobs_(jobs) {
    std::memset(regs_, 0, sizeof(regs_));
    for (uint32_t j = 0; j < NRL_MAX_JOBS; ++j) {
        for (const RegInfo& r : kRegs) J(j, r.addr) = r.reset;
        J(j, NRL_REG_RPL_CAPACITY) = capacity;
        J(j, NRL_REG_RPL_RECORD_BYTES) = record_bytes;
        J(j, NRL_REG_AGG_MAX_SLOTS) = max_slots;
        J(j, NRL_REG_AGG_MAX_ELEMS) = max_elems;
#define NRL_X(name, param) J(j, NRL_REG_##name) = J(j, NRL_REG_##param);
        NRL_RESET_PARAMS(NRL_X)
#undef NRL_X
        if (J(j, NRL_REG_AGG_SLOTS) > max_slots) J(j, NRL_REG_AGG_SLOTS) = max_slots;
        if (J(j, NRL_REG_AGG_ELEMS) > max_elems) J(j, NRL_REG_AGG_ELEMS) = max_elems;
        J(j, NRL_REG_RPL_RESET) = 0;
        tables_[j].seed(J(j, NRL_REG_RPL_SEED));
    }
    J(0, NRL_REG_BUILD_HASH) = build_hash;
    J(0, NRL_REG_JOBS) = jobs;
    copies_.resize(size_t(max_slots) * 2);
    acc_.assign(size_t(max_slots) * 2 * max_elems, 0);
    records_.reset(static_cast<uint8_t*>(std::calloc(size_t(capacity) * record_bytes, 1)));
    if (!records_) throw std::bad_alloc();
    for (uint32_t j = 0; j < NRL_MAX_JOBS; ++j) empty_table(j);
    out.reserve(NRL_MAX_BATCH);
}

const RegInfo* Engine::page_reg(uint32_t addr) const {
    const uint32_t j = addr / NRL_JOB_PAGE;
    if (j >= jobs_) return nullptr;
    const RegInfo* r = reg_info(addr % NRL_JOB_PAGE);
    return r != nullptr && (j == 0 || r->job) ? r : nullptr;
}

uint32_t Engine::read(uint32_t addr) const {
    const uint32_t j = addr / NRL_JOB_PAGE, off = addr % NRL_JOB_PAGE;
    const ReplayTable& t = tables_[j];
    switch (off) {
        case NRL_REG_RPL_SIZE: return t.size;
        case NRL_REG_RPL_WPTR: return t.wp;
        case NRL_REG_RPL_TOTAL_LO: return uint32_t(t.total());
        case NRL_REG_RPL_TOTAL_HI: return uint32_t(t.total() >> 32);
        case NRL_REG_RPL_RESET: return 0;
        case NRL_REG_RPL_RATE_DIFF_LO: return uint32_t(t.limiter.word());
        case NRL_REG_RPL_RATE_DIFF_HI: return uint32_t(t.limiter.word() >> 32);
        default: return J(j, off);
    }
}

// -- the job table ------------------------------------------------------------

// jobs.py's _conflict: why job j holding share (slot base, count, table base, cap, id)
// collides with another job of the mask `others`; "" when it does not
std::string Engine::overlap(uint32_t j, const uint32_t share[5], uint32_t others) const {
    auto span = [](uint64_t first, uint64_t n) {
        return std::to_string(first) + " .. " + std::to_string(first + n - 1);
    };
    auto meet = [](uint64_t a, uint64_t na, uint64_t b, uint64_t nb) {
        return na && nb && a < b + nb && b < a + na;
    };
    for (uint32_t k = 0; k < jobs_; ++k) {
        if (k == j || !(others >> k & 1)) continue;
        if (J(k, NRL_REG_JOB_ID) == share[kId])
            return "JOB_ID " + std::to_string(share[kId]) + " is job " + std::to_string(k) + "'s";
        const uint32_t b = J(k, NRL_REG_JOB_SLOT_BASE), n = J(k, NRL_REG_JOB_SLOT_COUNT);
        if (meet(share[kSlotBase], share[kSlotCount], b, n))
            return "slots " + span(share[kSlotBase], share[kSlotCount]) + " overlap job " +
                   std::to_string(k) + "'s " + span(b, n);
        const uint32_t rb = J(k, NRL_REG_JOB_RPL_BASE), rc = J(k, NRL_REG_JOB_RPL_CAP);
        if (meet(share[kRplBase], share[kRplCap], rb, rc))
            return "records " + span(share[kRplBase], share[kRplCap]) + " overlap job " +
                   std::to_string(k) + "'s " + span(rb, rc);
    }
    return {};
}

// jobs.py's share_refusal, word for word (the register's own legal: rule judged before)
std::string Engine::job_refusal(uint32_t j, uint32_t off, uint32_t value) const {
    bool fixed = false;  // fixed_share: in hw/regs.yaml
#define NRL_X(name) fixed = fixed || off == NRL_REG_##name;
    NRL_FIXED_SHARE(NRL_X)
#undef NRL_X
    if (fixed && jobs_ == 1)
        return "a one-job switch (JOBS = 1) has a fixed share: it keeps its reset value";
    const uint32_t enabled = G(NRL_REG_JOB_ENABLE);
    if (off == NRL_REG_JOB_OWNER) {
        const uint32_t held = J(j, NRL_REG_JOB_OWNER);
        if (value != 0 && held != 0 && held != value) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "%#x", held);
            return "job " + std::to_string(j) + " is claimed by another allocator (JOB_OWNER " +
                   hex + ")";
        }
        return {};
    }
    if (off == NRL_REG_JOB_ENABLE_CLR) return {};
    if (off == NRL_REG_JOB_ENABLE_SET) {
        for (uint32_t k = 0; k < jobs_; ++k)
            if ((value & enabled) >> k & 1) return "job " + std::to_string(k) + " is enabled already";
        value |= enabled;  // judged as the JOB_ENABLE it makes
    }
    if (off == NRL_REG_JOB_ENABLE || off == NRL_REG_JOB_ENABLE_SET) {
        for (uint32_t k = 0; k < jobs_; ++k) {
            if (!(value >> k & 1) || enabled >> k & 1) continue;
            uint32_t s[5];
            for (int i = 0; i < 5; ++i) s[i] = J(k, kShare[i]);
            const std::string why = overlap(k, s, value);
            if (!why.empty()) return "job " + std::to_string(k) + " cannot be enabled: " + why;
        }
        return {};
    }
    const int at = int(std::find(kShare, kShare + 5, off) - kShare);
    if (at == 5) return {};  // JOB_RPL_RECORD, JOB_LEASE and the rest: their legal: rule only
    uint32_t share[5];
    for (int i = 0; i < 5; ++i) share[i] = J(j, kShare[i]);
    share[at] = value;
    if (at == kSlotBase || at == kSlotCount) {
        const uint64_t end = uint64_t(share[kSlotBase]) + share[kSlotCount];
        if (end > J(j, NRL_REG_AGG_MAX_SLOTS))
            return "JOB_SLOT_BASE + JOB_SLOT_COUNT = " + std::to_string(end) +
                   " is more than AGG_MAX_SLOTS (" + std::to_string(J(j, NRL_REG_AGG_MAX_SLOTS)) + ")";
    }
    if (at == kRplBase || at == kRplCap) {
        const uint32_t cap = share[kRplCap], base = share[kRplBase];
        const std::string size = std::to_string(J(j, NRL_REG_RPL_CAPACITY));
        if ((cap & (cap - 1)) || cap > J(j, NRL_REG_RPL_CAPACITY))
            return "JOB_RPL_CAP must be 0 or a power of two up to RPL_CAPACITY (" + size + ")";
        if (cap && base % cap)
            return "JOB_RPL_BASE (" + std::to_string(base) + ") must be a multiple of JOB_RPL_CAP (" +
                   std::to_string(cap) + ")";
        if (uint64_t(base) + cap > J(j, NRL_REG_RPL_CAPACITY))
            return "JOB_RPL_BASE + JOB_RPL_CAP = " + std::to_string(uint64_t(base) + cap) +
                   " is more than RPL_CAPACITY (" + size + ")";
    }
    if (enabled >> j & 1) {
        const std::string why = overlap(j, share, enabled);
        if (!why.empty()) return "job " + std::to_string(j) + " is enabled and " + why;
    }
    return {};
}

void Engine::free_slots(uint32_t j) {
    const uint32_t b = J(j, NRL_REG_JOB_SLOT_BASE);
    const uint32_t e = std::min(b + J(j, NRL_REG_JOB_SLOT_COUNT), max_slots_);
    for (uint32_t s = b; s < e; ++s) copies_[size_t(s) * 2].valid = copies_[size_t(s) * 2 + 1].valid = false;
}

void Engine::empty_table(uint32_t j) {
    if (enabled(j))
        tables_[j].configure(J(j, NRL_REG_JOB_RPL_CAP), J(j, NRL_REG_JOB_RPL_RECORD),
                             J(j, NRL_REG_JOB_RPL_BASE));
    else
        tables_[j].release();
}

int Engine::write(uint32_t addr, uint32_t value, std::string* why) {
    const RegInfo* r = page_reg(addr);
    if (r == nullptr) return 3;
    if (r->access != NRL_ACCESS_RW) return 1;
    const uint32_t j = addr / NRL_JOB_PAGE;
    uint32_t off = addr % NRL_JOB_PAGE;
    const WriteRule* rule = write_rule(off);
    *why = write_refusal(*r, rule, value, regs_[j], regs_[0]);
    if (why->empty()) *why = job_refusal(j, off, value);
    if (!why->empty()) return 2;
    ++generation;
    if (off >= NRL_REG_MEMBER_PORT_0 && off < kMemberEnd)
        members_written |= uint64_t(1) << (j * NRL_MAX_MEMBERS +
                                           (off - NRL_REG_MEMBER_PORT_0) / kMemberStride);
    ReplayTable& t = tables_[j];
    // an enabled job's slots only: a disabled job's range may be an enabled one's
    const bool frees = is_one_of(off, kFreesSlots, sizeof kFreesSlots / 4) && enabled(j);
    if (frees) free_slots(j);  // the range before the write
    if (off == NRL_REG_JOB_ENABLE_SET || off == NRL_REG_JOB_ENABLE_CLR) {  // the JOB_ENABLE they make
        const uint32_t on = G(NRL_REG_JOB_ENABLE);
        value = off == NRL_REG_JOB_ENABLE_SET ? on | value : on & ~value;
        off = NRL_REG_JOB_ENABLE;
        rule = write_rule(off);
    }
    const uint32_t old = J(j, off);
    J(j, off) = rule != nullptr ? value & ~rule->self_clear : value;  // self-clearing bits read 0
    if (frees) free_slots(j);  // and after it
    switch (off) {
        case NRL_REG_CTRL:
            if (value & NRL_CTRL_CLEAR_COUNTERS)
                for (uint32_t p = 0; p < NRL_MAX_JOBS; ++p)
                    for (uint32_t a = kCounterFirst; a <= kCounterLast; a += 4)
                        if (const RegInfo* c = reg_info(a); c && c->access == NRL_ACCESS_RC && !c->server)
                            J(p, a) = 0;
            break;
        case NRL_REG_RPL_SEED: t.seed(value); break;
        case NRL_REG_L2_AGE_FRAMES: l2_left_ = value; break;  // a write restarts the aging period
        case NRL_REG_RPL_RESET:
            if (value) t.empty();
            break;
        case NRL_REG_RPL_SPI: t.limiter.set_spi(value); break;
        case NRL_REG_RPL_MIN_SIZE: t.limiter.set_min_size(value); break;
        case NRL_REG_RPL_SPI_ERROR: t.limiter.set_error(value); break;
        case NRL_REG_JOB_RPL_BASE:
        case NRL_REG_JOB_RPL_CAP:
        case NRL_REG_JOB_RPL_RECORD: empty_table(j); break;
        case NRL_REG_JOB_ENABLE:
            for (uint32_t b = 0; b < jobs_; ++b)
                if ((old ^ value) >> b & 1) {
                    free_slots(b);
                    empty_table(b);
                }
            break;
        default: break;
    }
    return 0;
}

}  // namespace nrl
