// netfpga-rl RTL harness: drives the AXI4-Stream and AXI4-Lite pins of one
// Verilated top (SUME TUSER layout) from C++, so Python pays one call per
// frame instead of one per pin and clock. hostdrv/switch/rtl.py builds
// it into the model's shared object (as nrl_harness.cpp in the build directory,
// with @TOP@ replaced by the top module's name) and calls the extern "C" entry
// points below through ctypes.
#include <cstdint>
#include <cstring>
#include <vector>
#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif
#include "V@TOP@.h"

typedef V@TOP@ Top;

namespace {

struct Harness {
    VerilatedContext* ctx;
    Top* top;
    uint64_t cycles;
    uint64_t time;
    uint64_t beats_in;
    uint64_t beats_out;
    uint64_t last_in;      // clock of the last input beat accepted
    // frames collected from m_axis: bytes back to back, meta 4 words each
    std::vector<uint8_t> out;
    std::vector<uint32_t> meta;
    std::vector<uint8_t> cur;
    uint32_t cur_tuser_len;
    bool in_frame;
#if VM_TRACE
    VerilatedVcdC* tfp;
#endif
};

const unsigned BPB = sizeof(((Top*)nullptr)->s_axis_tdata);       // bytes per beat
const unsigned UWORDS = sizeof(((Top*)nullptr)->s_axis_tuser) / 4;

template <typename T> inline void set_keep(T& keep, unsigned nbytes) {
    keep = (T)(nbytes >= 64 ? ~0ULL : ((1ULL << nbytes) - 1ULL));
}

inline unsigned keep_bytes(uint64_t keep) {
    unsigned n = 0;
    while (n < BPB && ((keep >> n) & 1ULL)) ++n;
    return n;
}

inline void dump(Harness* h) {
#if VM_TRACE
    if (h->tfp) h->tfp->dump(h->time);
#endif
    h->time += 2500;  // ps: two evaluations per 5 ns clock (200 MHz, the SUME datapath)
}

// Sample m_axis (already settled for this clock), then the rising edge.
inline void edge(Harness* h) {
    Top* t = h->top;
    if (t->m_axis_tvalid && t->m_axis_tready) {
        h->beats_out++;
        if (!h->in_frame) {
            h->cur.clear();
            h->cur_tuser_len = (uint32_t)t->m_axis_tuser[0] & 0xFFFFu;
            h->in_frame = true;
        }
        unsigned n = keep_bytes((uint64_t)t->m_axis_tkeep);
        const uint8_t* d = (const uint8_t*)&t->m_axis_tdata[0];
        h->cur.insert(h->cur.end(), d, d + n);
        if (t->m_axis_tlast) {
            uint32_t w0 = (uint32_t)t->m_axis_tuser[0];
            h->out.insert(h->out.end(), h->cur.begin(), h->cur.end());
            h->meta.push_back((uint32_t)h->cur.size());
            h->meta.push_back((w0 >> 24) & 0xFFu);
            h->meta.push_back(h->cur_tuser_len);
            h->meta.push_back((uint32_t)h->cycles);  // clock of the last beat
            h->in_frame = false;
        }
    }
    t->clk = 1;
    t->eval();
    dump(h);
    t->clk = 0;
    h->cycles++;
}

// Settle combinational logic after the inputs of this clock were set.
inline void settle(Harness* h) {
    h->top->eval();
    dump(h);
}

inline void idle_inputs(Top* t) {
    t->s_axis_tvalid = 0;
    t->s_axis_tlast = 0;
    t->m_axis_tready = 1;
}

}  // namespace

extern "C" {

// pyverilator's wrapper keeps the legacy sc_time_stamp() clock here; Verilator
// refuses to add a model while it reads non-zero, so hold it at 0.
extern double main_time;

// A new model in its own VerilatedContext (several may live in one process).
void* nrl_create(void) {
    main_time = 0;
    Harness* h = new Harness();
    h->ctx = new VerilatedContext;
    h->ctx->traceEverOn(true);
    h->top = new Top(h->ctx, "TOP");
    h->cycles = h->time = h->beats_in = h->beats_out = h->last_in = 0;
    h->cur_tuser_len = 0;
    h->in_frame = false;
#if VM_TRACE
    h->tfp = nullptr;
#endif
    Top* t = h->top;
    t->clk = 0;
    t->rst = 0;
    idle_inputs(t);
    t->s_axil_awvalid = 0;
    t->s_axil_wvalid = 0;
    t->s_axil_bready = 1;
    t->s_axil_arvalid = 0;
    t->s_axil_rready = 1;
    t->eval();
    return h;
}

void nrl_destroy(void* hp) {
    Harness* h = (Harness*)hp;
#if VM_TRACE
    if (h->tfp) { h->tfp->close(); delete h->tfp; h->tfp = nullptr; }
#endif
    h->top->final();
    delete h->top;
    delete h->ctx;
    delete h;
}

unsigned nrl_bytes_per_beat(void) { return BPB; }

uint64_t nrl_cycles(void* hp) { return ((Harness*)hp)->cycles; }
uint64_t nrl_beats_in(void* hp) { return ((Harness*)hp)->beats_in; }
uint64_t nrl_beats_out(void* hp) { return ((Harness*)hp)->beats_out; }
uint64_t nrl_last_in(void* hp) { return ((Harness*)hp)->last_in; }

int nrl_trace_open(void* hp, const char* path, int levels) {
#if VM_TRACE
    Harness* h = (Harness*)hp;
    if (h->tfp) { h->tfp->close(); delete h->tfp; }
    h->tfp = new VerilatedVcdC;
    h->top->trace(h->tfp, levels);
    h->tfp->open(path);
    return 0;
#else
    (void)hp; (void)path; (void)levels;
    return -1;
#endif
}

void nrl_trace_close(void* hp) {
#if VM_TRACE
    Harness* h = (Harness*)hp;
    if (h->tfp) { h->tfp->close(); delete h->tfp; h->tfp = nullptr; }
#else
    (void)hp;
#endif
}

void nrl_reset(void* hp, unsigned cycles) {
    Harness* h = (Harness*)hp;
    Top* t = h->top;
    idle_inputs(t);
    t->s_axil_awvalid = 0;
    t->s_axil_wvalid = 0;
    t->s_axil_arvalid = 0;
    t->rst = 1;
    for (unsigned i = 0; i < cycles; ++i) { settle(h); edge(h); }
    t->rst = 0;
    h->in_frame = false;
    h->out.clear();
    h->meta.clear();
}

// Clock n cycles with idle inputs (outputs are still collected).
void nrl_step(void* hp, uint64_t n) {
    Harness* h = (Harness*)hp;
    idle_inputs(h->top);
    for (uint64_t i = 0; i < n; ++i) { settle(h); edge(h); }
}

// Drive `count` frames back to back (frame i: lens[i] bytes of `data`, ingress
// port ports[i], `gap` idle clocks after it), then clock until m_axis has been
// quiet for `idle` clocks with no frame half out. Returns the clocks used, or
// -1 when `max_cycles` ran out first.
int64_t nrl_process(void* hp, const uint8_t* data, const uint32_t* lens, const uint32_t* ports,
                    uint32_t count, uint32_t gap, uint32_t idle, uint64_t max_cycles) {
    Harness* h = (Harness*)hp;
    Top* t = h->top;
    uint64_t start = h->cycles;
    uint32_t f = 0;           // frame being sent
    uint32_t off = 0;         // its next byte
    uint64_t base = 0;        // offset of frame f in data
    uint32_t wait = 0;        // gap clocks left
    uint32_t quiet = 0;
    t->m_axis_tready = 1;
    while (true) {
        if (h->cycles - start >= max_cycles) { idle_inputs(t); return -1; }
        bool sending = f < count && wait == 0;
        if (sending) {
            uint32_t len = lens[f];
            uint32_t n = len - off < BPB ? len - off : BPB;
            uint8_t* d = (uint8_t*)&t->s_axis_tdata[0];
            std::memcpy(d, data + base + off, n);
            if (n < BPB) std::memset(d + n, 0, BPB - n);
            set_keep(t->s_axis_tkeep, n);
            uint32_t* u = (uint32_t*)&t->s_axis_tuser[0];
            for (unsigned i = 0; i < UWORDS; ++i) u[i] = 0;
            u[0] = (len & 0xFFFFu) | ((ports[f] & 0xFFu) << 16);
            t->s_axis_tlast = off + n >= len;
            t->s_axis_tvalid = 1;
        } else {
            t->s_axis_tvalid = 0;
            t->s_axis_tlast = 0;
        }
        settle(h);
        bool fire = sending && t->s_axis_tready;
        bool busy_out = t->m_axis_tvalid || h->in_frame;
        edge(h);
        if (fire) {
            h->beats_in++;
            uint32_t len = lens[f];
            off += BPB;
            if (off >= len) {
                h->last_in = h->cycles - 1;
                base += len;
                off = 0;
                ++f;
                wait = gap;
            }
        } else if (!sending && wait) {
            --wait;
        }
        if (f < count || busy_out || h->in_frame) quiet = 0;
        else if (++quiet >= idle) break;
    }
    t->s_axis_tvalid = 0;
    t->s_axis_tlast = 0;
    return (int64_t)(h->cycles - start);
}

// Frames collected so far: count, then copy out (and forget them).
uint32_t nrl_out_frames(void* hp) { return (uint32_t)(((Harness*)hp)->meta.size() / 4); }
uint64_t nrl_out_bytes(void* hp) { return ((Harness*)hp)->out.size(); }
void nrl_out_take(void* hp, uint8_t* buf, uint32_t* meta) {
    Harness* h = (Harness*)hp;
    if (!h->out.empty()) std::memcpy(buf, h->out.data(), h->out.size());
    if (!h->meta.empty()) std::memcpy(meta, h->meta.data(), h->meta.size() * 4);
    h->out.clear();
    h->meta.clear();
}

// AXI4-Lite write: returns BRESP, or -1 on timeout.
int nrl_axil_write(void* hp, uint32_t addr, uint32_t value, uint32_t timeout) {
    Harness* h = (Harness*)hp;
    Top* t = h->top;
    idle_inputs(t);
    t->s_axil_awaddr = addr;
    t->s_axil_awprot = 0;
    t->s_axil_awvalid = 1;
    t->s_axil_wdata = value;
    t->s_axil_wstrb = 0xF;
    t->s_axil_wvalid = 1;
    t->s_axil_bready = 1;
    bool aw_done = false, w_done = false;
    for (uint32_t i = 0; i < timeout; ++i) {
        settle(h);
        bool aw = t->s_axil_awvalid && t->s_axil_awready;
        bool w = t->s_axil_wvalid && t->s_axil_wready;
        bool b = t->s_axil_bvalid && aw_done && w_done;
        int resp = t->s_axil_bresp;
        edge(h);
        if (aw) { aw_done = true; t->s_axil_awvalid = 0; }
        if (w) { w_done = true; t->s_axil_wvalid = 0; }
        if (b) return resp;
    }
    t->s_axil_awvalid = 0;
    t->s_axil_wvalid = 0;
    return -1;
}

// AXI4-Lite read: returns RDATA | RRESP << 32, or -1 on timeout.
int64_t nrl_axil_read(void* hp, uint32_t addr, uint32_t timeout) {
    Harness* h = (Harness*)hp;
    Top* t = h->top;
    idle_inputs(t);
    t->s_axil_araddr = addr;
    t->s_axil_arprot = 0;
    t->s_axil_arvalid = 1;
    t->s_axil_rready = 1;
    bool ar_done = false;
    for (uint32_t i = 0; i < timeout; ++i) {
        settle(h);
        bool ar = t->s_axil_arvalid && t->s_axil_arready;
        bool r = t->s_axil_rvalid && ar_done;
        uint64_t v = (uint64_t)(uint32_t)t->s_axil_rdata | ((uint64_t)t->s_axil_rresp << 32);
        edge(h);
        if (ar) { ar_done = true; t->s_axil_arvalid = 0; }
        if (r) return (int64_t)v;
    }
    t->s_axil_arvalid = 0;
    return -1;
}

}  // extern "C"
