// SPDX-License-Identifier: MIT
// netfpga-rl native switch engine: the replay tables (docs/protocol.md sections 5 and 11),
// hostdrv.switch.reference.ReplayBlock bit for bit, one table per job.
//
// Planted bugs 3 and 5 (see nrl_engine.cpp) live here.
#include <algorithm>
#include <cstring>

#include "nrl_engine.h"

#ifdef NRL_PLANT_BUG
#define NRL_BUG(n) (::nrl::planted_bug == (n))
#else
#define NRL_BUG(n) false
#endif

namespace nrl {

namespace {
inline uint32_t le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
}  // namespace

// -- one table ----------------------------------------------------------------

void ReplayTable::configure(uint32_t cap_, uint32_t rb_, uint32_t base_) {
    cap = cap_;
    rb = rb_;
    base = base_;
    tree.assign(size_t(cap) * 2, 0);
    owner.assign(cap, 0);
    wseq.assign(cap, 0);
    prev.assign(cap, NRL_NO_INDEX);
    empty();
}

void ReplayTable::release() {
    cap = rb = base = 0;
    std::vector<uint64_t>().swap(tree);
    std::vector<uint8_t>().swap(owner);
    std::vector<uint32_t>().swap(wseq);
    std::vector<uint32_t>().swap(prev);
    empty();
}

void ReplayTable::empty() {
    std::fill(tree.begin(), tree.end(), 0);
    wp = 0;
    size = 0;
    limiter.reset();
    for (uint32_t w = 0; w < NRL_MAX_MEMBERS; ++w) {
        last[w] = NRL_NO_INDEX;
        pushed[w] = 0;
    }
}

void ReplayTable::tree_set(uint32_t index, uint64_t priority) {
    size_t node = size_t(cap) + index;
    const uint64_t delta = priority - tree[node];  // modulo 2**64: exact, sums stay < 2**64
    while (node) {
        tree[node] += delta;
        node >>= 1;
    }
}

uint32_t ReplayTable::tree_find(uint64_t target) const {
    size_t node = 1;
    while (node < cap) {
        node <<= 1;
        const uint64_t left = tree[node];
        if (target >= left) {
            target -= left;
            node += 1;
        }
    }
    return uint32_t(node - cap);
}

void ReplayTable::stack_chain(uint32_t index, uint32_t k, uint32_t* chain) const {
    uint32_t n = 1, x = index;
    chain[k - 1] = index;
    while (n < k) {
        const uint32_t p = prev[x];
        if (p == NRL_NO_INDEX || owner[p] != owner[x] || wseq[p] != wseq[x] - 1u) break;
        chain[k - 1 - n++] = p;
        x = p;
    }
    for (uint32_t j = 0; j < k - n; ++j) chain[j] = NRL_NO_INDEX;
}

// -- the selected job's table ---------------------------------------------------

void Engine::not_yet(uint32_t op, uint32_t w, uint32_t seq, uint32_t reason, const Rx& rx) {
    inc(op == NRL_OP_PUSH_ACK ? NRL_REG_CNT_TX_PUSH_NOT_YET : NRL_REG_CNT_TX_SAMPLE_NOT_YET);
    frame(rx.eth_src, rx.ip_src, rx.udp_src, op, NRL_FLAG_FROM_SWITCH | NRL_FLAG_NOT_YET, w, reason,
          seq, 0, tb_->size, 0, 0, rx.port);
}

void Engine::push(const uint8_t* f, uint32_t w, uint32_t seq, uint32_t count, const Rx& rx) {
    ReplayTable& t = *tb_;
    // rate limiter (docs/protocol.md section 5): Reverb's CanInsert
    if (!t.limiter.can_insert(count, t.size))
        return not_yet(NRL_OP_PUSH_ACK, w, seq, NRL_NOT_YET_RATE, rx);
    t.limiter.insert(count);
    const uint32_t mask = t.cap - 1, first = t.wp;
    const uint8_t* src = f + NRL_PAYLOAD_OFFSET + NRL_BLOCK;
    for (uint32_t j = 0; j < count; ++j) {
        std::memcpy(&records_[(size_t(t.base) + t.wp) * rb_], src + size_t(j) * t.rb, t.rb);
        t.tree_set(t.wp, le32(f + NRL_PAYLOAD_OFFSET + 4 * j));
        t.owner[t.wp] = uint8_t(w);
        t.wseq[t.wp] = ++t.pushed[w];
        t.prev[t.wp] = t.last[w];
        t.last[w] = t.wp;
        t.wp = (t.wp + 1) & mask;
        if (t.size < t.cap) ++t.size;
    }
    inc(NRL_REG_CNT_TX_PUSH_ACK);
    frame(rx.eth_src, rx.ip_src, rx.udp_src, NRL_OP_PUSH_ACK, NRL_FLAG_FROM_SWITCH, w, 0, seq,
          count, first, 0, 0, rx.port);
}

void Engine::sample(uint32_t w, uint32_t seq, uint32_t batch, bool prioritized, uint32_t stack,
                    const Rx& rx) {
    ReplayTable& t = *tb_;
    const uint64_t total = prioritized ? t.total() : t.size;
    if (t.size == 0 || total == 0) {
        inc(NRL_REG_CNT_DROP_EMPTY);
        return not_yet(NRL_OP_SAMPLE_RESP, w, seq, NRL_NOT_YET_EMPTY, rx);
    }
    // rate limiter (docs/protocol.md section 5): Reverb's CanSample
    if (const uint32_t why = t.limiter.sample_refusal(batch, t.size))
        return not_yet(NRL_OP_SAMPLE_RESP, w, seq, why, rx);
    t.limiter.sample(batch);
    int log2b = 0;
    while ((1u << log2b) < batch) ++log2b;
    const uint64_t seg = t.total() >> log2b;
    for (uint32_t i = 0; i < batch; ++i) {
        const uint32_t x = t.draw();
        uint32_t index;
        if (prioritized) {
            const unsigned __int128 prod = static_cast<unsigned __int128>(x) * seg;
            index = t.tree_find(uint64_t(i) * seg + uint64_t(prod >> 32));
        } else {
            index = uint32_t((uint64_t(x) * (NRL_BUG(3) ? t.size - 1 : t.size)) >> 32);
        }
        // k <= 1: the sampled record alone, descriptor words @24.. zero (as before stacks)
        const uint32_t k = stack > 1 ? stack : 1;
        uint32_t chain[NRL_MAX_STACK];
        if (k > 1)
            t.stack_chain(index, k, chain);
        else
            chain[0] = index;
        const uint32_t prio = uint32_t(t.tree[size_t(t.cap) + index]);
        for (uint32_t j = 0; j < k; ++j) {
            const uint32_t at = chain[j];
            inc(NRL_REG_CNT_TX_SAMPLE_RESP);
            uint8_t* pl = frame(rx.eth_src, rx.ip_src, rx.udp_src, NRL_OP_SAMPLE_RESP,
                                NRL_FLAG_FROM_SWITCH, w, 0, seq, 1, i, NRL_BLOCK + t.rb, 0, rx.port);
            // descriptor: little-endian index, priority, total (u64), batch, size, and with
            // k >= 2 stack, pos, valid; rest zero
            std::memset(pl, 0, NRL_BLOCK);
            std::memcpy(pl + NRL_DESC_INDEX, &at, 4);
            std::memcpy(pl + NRL_DESC_PRIORITY, &prio, 4);
            std::memcpy(pl + NRL_DESC_TOTAL, &total, 8);
            std::memcpy(pl + NRL_DESC_BATCH, &batch, 4);
            std::memcpy(pl + NRL_DESC_SIZE, &t.size, 4);
            if (k > 1) {
                const uint32_t valid = at != NRL_NO_INDEX;
                std::memcpy(pl + NRL_DESC_STACK, &k, 4);
                std::memcpy(pl + NRL_DESC_POS, &j, 4);
                std::memcpy(pl + NRL_DESC_VALID, &valid, 4);
            }
            if (at == NRL_NO_INDEX)
                std::memset(pl + NRL_BLOCK, 0, t.rb);
            else
                std::memcpy(pl + NRL_BLOCK, record(at), t.rb);
        }
    }
}

void Engine::update(const uint8_t* f, uint32_t count) {
    ReplayTable& t = *tb_;
    const uint8_t* p = f + NRL_PAYLOAD_OFFSET;
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t index = le32(p + 8 * k), prio = le32(p + 8 * k + 4);
        if (index < t.size + (NRL_BUG(5) ? 1 : 0))
            t.tree_set(index, prio);
        else
            inc(NRL_REG_CNT_DROP_BAD_INDEX);
    }
}

}  // namespace nrl
