// SPDX-License-Identifier: MIT
/*

Copyright (c) 2025 netfpga-rl contributors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in
all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
THE SOFTWARE.

*/

// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Gradient aggregation engine ingress: checks, slot state and accumulation.
 *
 * Takes the protocol frames of grad_agg (s_axis, SUME TUSER: [15:0] length
 * in bytes, [23:16] one-hot source port) at one beat per clock, checks each
 * in the order of docs/protocol.md section 6 (one delimited block below),
 * looks up and updates the slot copy {slot, seq[0]} (state RAM of round,
 * contributor bitmap, tensor total, step id, aux, error, culprit, state;
 * section 4),
 * and adds or stores the payload into the slot copy's beats of the
 * accumulator RAM (one fp32_add or int32 adder per 32-bit lane).
 *
 * Pipeline (one input beat per clock):
 *   P0  input beat; header bytes captured; at the last header beat the slot
 *       state RAM is read and the accumulator base address loaded
 *   D1  header checks and state compares (registered flags); the copy's aux
 *       with this contribution added; the far-ahead bound against AGG_EPOCH
 *   D2  verdict: drop reason, state write (with forwarding to the next D1),
 *       payload mode (add / store / pass accumulator / none), counters
 *   HP1 (D2 + 1) reply request: what the engine sends for this frame
 *   P1  accumulator RAM data, forwarded from the adder output or the last
 *       write when a beat of the same address is still in flight
 *   P2  operand registers into LANES fp32_add (LATENCY 6) and int32 adders
 *   X   (P2 + 6) result written back and out as a payload beat
 * A payload beat waits (s_axis_tready low) while a beat of the same address
 * is fewer than 7 clocks ahead (the read-modify-write loop), and every beat
 * waits while out_stall is high.
 *
 * Interface to the rest of grad_agg (all outputs registered):
 *   out_stall       in: the output FIFOs are near full (registered by the
 *                   top; every frame in flight still fits)
 *   req_*           one reply per pulse of req_valid, one clock after the
 *                   verdict: req_kind (K_MCAST RESULT to the members,
 *                   K_RESEND RESULT to the sender, K_UP GRADIENT to the
 *                   parent), the header fields slot, seq, aux, total, error
 *                   flag and worker, and the sender's Ethernet/IPv4/UDP
 *                   source and ingress port (the RESEND destination)
 *   pay_*           the reply's payload beats, in the order of the replies,
 *                   pay_last on the last; no backpressure (out_stall)
 *   cnt_inc         one pulse per counter of grad_agg_regs (CNT_COUNT 19)
 */
module grad_agg_ingress #
(
    // Width of the AXI4-Stream data bus (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of tkeep (one bit per byte)
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of tuser (SUME layout in the low 32 bits)
    parameter USER_WIDTH = 128,
    // Slot memory depth (AGG_MAX_SLOTS), 1..64
    parameter MAX_SLOTS = 64,
    // Largest P (AGG_MAX_ELEMS), a multiple of 16 in 16..352
    parameter MAX_ELEMS = 352
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Protocol frames in
     */
    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]   s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire [USER_WIDTH-1:0]   s_axis_tuser,

    /*
     * Configuration (grad_agg_regs)
     */
    input  wire                    cfg_enable,
    input  wire [7:0]              cfg_job_id,
    input  wire [3:0]              cfg_members,
    input  wire [3:0]              cfg_threshold,
    input  wire [6:0]              cfg_slots,
    input  wire [8:0]              cfg_elems,
    input  wire                    cfg_dtype,
    input  wire                    cfg_mode,
    input  wire [31:0]             cfg_staleness,
    input  wire                    cfg_role,
    input  wire [7:0]              cfg_uplink_port,
    input  wire [31:0]             cfg_parent_ip,
    input  wire [31:0]             cfg_epoch,
    input  wire [8*8-1:0]          cfg_member_port,
    input  wire [8*32-1:0]         cfg_member_ip,
    input  wire [8*16-1:0]         cfg_member_udp,
    input  wire [8*3-1:0]          cfg_member_role,
    input  wire                    cfg_invalidate,

    /*
     * Output FIFOs near full
     */
    input  wire                    out_stall,

    /*
     * Reply requests out (header preparation in grad_agg_egress)
     */
    output wire                    req_valid,
    output wire [1:0]              req_kind,
    output wire [15:0]             req_slot,
    output wire [31:0]             req_seq,
    output wire [31:0]             req_aux,
    output wire                    req_error,
    output wire [2:0]              req_worker,
    output wire [31:0]             req_total,
    output wire [47:0]             req_eth_src,
    output wire [31:0]             req_ip_src,
    output wire [15:0]             req_udp_src,
    output wire [7:0]              req_port,

    /*
     * Reply payload beats out (payload FIFO)
     */
    output wire [DATA_WIDTH-1:0]   pay_data,
    output wire                    pay_last,
    output wire                    pay_valid,

    /*
     * Counter pulses (grad_agg_regs cnt_inc)
     */
    output wire [18:0]             cnt_inc
);

localparam BYTES = DATA_WIDTH/8;
localparam LANES = DATA_WIDTH/32;
// beats holding bytes 0..63 (Ethernet + IPv4 + UDP + protocol header)
localparam HDR_BEATS = 64/BYTES;
// beats per slot copy at MAX_ELEMS
localparam MAX_PAY_BEATS = MAX_ELEMS*4/BYTES;
localparam SLOT_W = MAX_SLOTS > 1 ? $clog2(MAX_SLOTS) : 1;
// slot copy index {slot, round[0]}
localparam COPY_W = SLOT_W + 1;
localparam COPY_N = 2**COPY_W;
localparam ACC_DEPTH = 2*MAX_SLOTS*MAX_PAY_BEATS;
localparam ACC_AW = $clog2(ACC_DEPTH);
// payload beat index, wide enough to saturate above MAX_PAY_BEATS
localparam PIDX_W = $clog2(MAX_PAY_BEATS+1);
// fp32_add latency (checked against the adder's out_valid in simulation)
localparam FP_LAT = 6;
// slot state word: step[141:110] (the aux of the GRADIENT that opened the
// copy: the step id in sync mode), state[109:108], error[107],
// culprit[106:104], total[103:72], aux[71:40] (RESULT aux; bits 3:0 the
// contribution count while OPEN), bitmap[39:32], round[31:0]
localparam ST_W = 142;
localparam [1:0] HDR_BEAT_CNT = HDR_BEATS[1:0];
localparam [1:0] HDR_BEAT_LAST = HDR_BEAT_CNT - 2'd1;

localparam [1:0] ST_OPEN = 2'd0, ST_UP = 2'd1, ST_DONE = 2'd2;
localparam [1:0] M_NONE = 2'd0, M_ADD = 2'd1, M_STORE = 2'd2, M_PASS = 2'd3;
// reply kinds (req_kind; grad_agg_egress has the same)
localparam [1:0] K_MCAST = 2'd0, K_RESEND = 2'd1, K_UP = 2'd2;

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
// verilator lint_on UNUSEDPARAM

// frame byte offsets of the Ethernet, IPv4 and UDP fields read here
localparam OFF_ETH_SRC = 6;                     // Ethernet source address
localparam OFF_IP_SRC = NRL_IP_OFFSET + 12;     // IPv4 source address
// flag bits below this are defined (NRL_FLAGS_MASK; nrl_hdr_check drops a frame setting others)
localparam FLAGS_DEFINED = $clog2(NRL_FLAGS_MASK + 1);
// frame bytes before the payload, as a 16-bit frame length (TUSER arithmetic)
localparam [15:0] LEN_PAYLOAD = NRL_PAYLOAD_OFFSET[15:0];
// far-ahead bound: (seq - AGG_EPOCH) mod 2^32 in [2^AHEAD_SHIFT, 2^31) is
// AHEAD, i.e. bit 31 of the difference clear and a bit of 30:AHEAD_SHIFT set
localparam AHEAD_SHIFT = $clog2(NRL_AGG_AHEAD_ROUNDS);
// bits of the difference's high half that decide it (31:AHEAD_SHIFT)
localparam AHEAD_W = 32 - AHEAD_SHIFT;

// bad parameter check
initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (KEEP_WIDTH*8 != DATA_WIDTH) begin
        $error("Error: KEEP_WIDTH must be DATA_WIDTH/8 (instance %m)");
        $finish;
    end
    if (USER_WIDTH < 32) begin
        $error("Error: USER_WIDTH must be at least 32 (instance %m)");
        $finish;
    end
    if (MAX_SLOTS < 1 || MAX_SLOTS > 64) begin
        $error("Error: MAX_SLOTS must be 1..64 (instance %m)");
        $finish;
    end
    if (MAX_ELEMS < 16 || MAX_ELEMS > 352 || MAX_ELEMS % 16 != 0) begin
        $error("Error: MAX_ELEMS must be a multiple of 16 in 16..352 (instance %m)");
        $finish;
    end
    // the check below looks at the high half of seq - AGG_EPOCH only
    if (NRL_AGG_AHEAD_ROUNDS != (1 << AHEAD_SHIFT) || AHEAD_SHIFT < 16 || AHEAD_SHIFT > 30) begin
        $error("Error: NRL_AGG_AHEAD_ROUNDS must be a power of two in 2^16..2^30 (instance %m)");
        $finish;
    end
end

integer i;
genvar gi;

// byte swaps from network order fields in AXI4-Stream byte lanes
function [15:0] bswap16(input [15:0] v);
    bswap16 = {v[7:0], v[15:8]};
endfunction

function [31:0] bswap32(input [31:0] v);
    bswap32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction

/*
 * Values derived from the configuration (registered; the registers are
 * only written while the engine is idle)
 */
reg [PIDX_W-1:0] cfg_pay_beats_reg;        // payload beats per packet
reg [PIDX_W-1:0] cfg_pay_beats_m1_reg;
reg [3:0]        cfg_needed_reg;           // contributions completing a round
reg              cfg_first_completes_reg;  // one contribution completes

wire [8:0] cfg_pay_beats_full = cfg_elems >> $clog2(BYTES/4);

always @(posedge clk) begin
    cfg_pay_beats_reg <= cfg_pay_beats_full[PIDX_W-1:0];
    cfg_pay_beats_m1_reg <= cfg_pay_beats_reg - 1'b1;
    cfg_needed_reg <= cfg_mode ? cfg_threshold : cfg_members;
    cfg_first_completes_reg <= cfg_needed_reg <= 4'd1;
end

/*
 * P0: input framing and header capture
 */
reg [1:0] in_cnt_reg, in_cnt_next;   // beats of this frame so far, saturating at HDR_BEATS
reg in_hazard_reg;                   // the next payload beat must wait

wire in_hdr = in_cnt_reg != HDR_BEAT_CNT;
assign s_axis_tready = !out_stall && !(!in_hdr && in_hazard_reg);
wire in_beat = s_axis_tvalid && s_axis_tready;
wire in_first = in_cnt_reg == 2'd0;
// last header beat (or a frame ending inside the header): the verdict starts
wire in_hdr_end = in_beat && in_hdr && (in_cnt_reg == HDR_BEAT_LAST || s_axis_tlast);
wire in_pay = in_beat && !in_hdr;

always @* begin
    in_cnt_next = in_cnt_reg;
    if (in_beat) begin
        if (s_axis_tlast) begin
            in_cnt_next = 2'd0;
        end else if (in_hdr) begin
            in_cnt_next = in_cnt_reg + 2'd1;
        end
    end
end

always @(posedge clk) begin
    in_cnt_reg <= in_cnt_next;
    if (rst) begin
        in_cnt_reg <= 2'd0;
    end
end

// bytes 0..63 as they stand at the last header beat
wire [511:0] hdr_now;

generate

if (HDR_BEATS == 1) begin : g_hdr1
    assign hdr_now = s_axis_tdata;
end else begin : g_hdr2
    reg [DATA_WIDTH-1:0] hdr0_reg;

    always @(posedge clk) begin
        if (in_beat && in_first) begin
            hdr0_reg <= s_axis_tdata;
        end
    end

    assign hdr_now = {s_axis_tdata, hdr0_reg};
end

endgenerate

// header fields at the last header beat
wire [31:0] hn_ip_src  = bswap32(hdr_now[8*OFF_IP_SRC +: 32]);
wire [15:0] hn_udp_src = bswap16(hdr_now[8*NRL_UDP_OFFSET +: 16]);
wire [7:0]  hn_op      = hdr_now[8*NRL_OFF_OPCODE +: 8];
wire [FLAGS_DEFINED-1:0] hn_flags = hdr_now[8*NRL_OFF_FLAGS +: FLAGS_DEFINED];  // defined bits
wire [7:0]  hn_job     = hdr_now[8*NRL_OFF_JOB +: 8];
wire [15:0] hn_worker  = bswap16(hdr_now[8*NRL_OFF_WORKER +: 16]);
wire [15:0] hn_slot    = bswap16(hdr_now[8*NRL_OFF_SLOT +: 16]);
wire [31:0] hn_seq     = bswap32(hdr_now[8*NRL_OFF_SEQ +: 32]);
wire [15:0] hn_count   = bswap16(hdr_now[8*NRL_OFF_COUNT +: 16]);
wire [31:0] hn_aux     = bswap32(hdr_now[8*NRL_OFF_AUX +: 32]);
wire [31:0] hn_total   = bswap32(hdr_now[8*NRL_OFF_TOTAL +: 32]);
// slot copy {slot, seq[0]} of the frame
wire [COPY_W-1:0] copy_now = {hn_slot[SLOT_W-1:0], hn_seq[0]};

// ingress port, captured at the first beat (TUSER)
reg  [7:0] port_reg;
wire [7:0] port_now = in_first ? s_axis_tuser[23:16] : port_reg;

always @(posedge clk) begin
    if (in_beat && in_first) begin
        port_reg <= s_axis_tuser[23:16];
    end
end

// header fields for D1, captured at the last header beat
reg            d1_valid_reg;
reg            hd_trunc_reg;
reg [31:0]     hd_ip_src_reg;
reg [15:0]     hd_udp_src_reg;
reg [7:0]      hd_op_reg;
reg [FLAGS_DEFINED-1:0] hd_flags_reg;
reg [7:0]      hd_job_reg;
reg [15:0]     hd_worker_reg;
reg [15:0]     hd_slot_reg;
reg [31:0]     hd_seq_reg;
reg [15:0]     hd_count_reg;
reg [31:0]     hd_aux_reg;
reg [31:0]     hd_total_reg;
reg            hd_total0_reg;
reg [47:0]     hd_eth_src_reg;
reg [COPY_W-1:0] hd_copy_reg;
// seq - aux (the contribution's lag, async staleness) in carry-select halves
reg [16:0]     hd_lag_lo_reg;
reg [15:0]     hd_lag_hi0_reg;
reg [15:0]     hd_lag_hi1_reg;
// seq - AGG_EPOCH (far-ahead bound) the same way: the borrow out of the low
// half and bits 31:AHEAD_SHIFT of the high half without and with it
reg            hd_ah_borrow_reg;
reg [AHEAD_W-1:0] hd_ah_hi0_reg;
reg [AHEAD_W-1:0] hd_ah_hi1_reg;

wire [15:0] hn_ah_hi0 = hn_seq[31:16] - cfg_epoch[31:16];
wire [15:0] hn_ah_hi1 = hn_seq[31:16] + ~cfg_epoch[31:16];

always @(posedge clk) begin
    d1_valid_reg <= in_hdr_end;
    if (in_hdr_end) begin
        hd_trunc_reg <= s_axis_tlast;
        hd_ip_src_reg <= hn_ip_src;
        hd_udp_src_reg <= hn_udp_src;
        hd_op_reg <= hn_op;
        hd_flags_reg <= hn_flags;
        hd_job_reg <= hn_job;
        hd_worker_reg <= hn_worker;
        hd_slot_reg <= hn_slot;
        hd_seq_reg <= hn_seq;
        hd_count_reg <= hn_count;
        hd_aux_reg <= hn_aux;
        hd_total_reg <= hn_total;
        hd_total0_reg <= hn_total == 32'd0;
        hd_eth_src_reg <= hdr_now[8*OFF_ETH_SRC +: 48];
        hd_copy_reg <= copy_now;
        hd_lag_lo_reg <= {1'b0, hn_seq[15:0]} - {1'b0, hn_aux[15:0]};
        hd_lag_hi0_reg <= hn_seq[31:16] - hn_aux[31:16];
        hd_lag_hi1_reg <= hn_seq[31:16] + ~hn_aux[31:16];
        hd_ah_borrow_reg <= hn_seq[15:0] < cfg_epoch[15:0];
        hd_ah_hi0_reg <= hn_ah_hi0[15 -: AHEAD_W];
        hd_ah_hi1_reg <= hn_ah_hi1[15 -: AHEAD_W];
    end
    if (rst) begin
        d1_valid_reg <= 1'b0;
    end
end

wire [2:0] worker = hd_worker_reg[2:0];
wire       is_grad = hd_op_reg == NRL_OP_GRADIENT;

/*
 * ---- Header checks (docs/protocol.md section 6) -------------------------
 *
 * In: the frame's TUSER length and port (first beat), the header fields at
 * the last header beat (hn_*, registered as hd_* for D1), the configuration.
 * Checks 1 and 2 depend on the frame alone (as does the RX count): the
 * shared nrl_hdr_check makes them, its flags arrive at D2. Checks 3..10 on
 * the configuration and the member table: at D1 one fail_* flag per check,
 * which D2 registers. D2 takes the first failing check of section 6's order
 * as the drop reason.
 */
// frame length, captured at the first beat (TUSER)
wire [15:0] tu_len = s_axis_tuser[15:0];

reg [15:0] len_reg;
reg [15:0] pay_len_reg;

always @(posedge clk) begin
    if (in_beat && in_first) begin
        len_reg <= tu_len;
        pay_len_reg <= tu_len - LEN_PAYLOAD;
    end
end

wire [15:0] len_now = in_first ? tu_len : len_reg;

// checks 1 (BAD_LENGTH) and 2 (BAD_HEADER) and the RX count: the frame alone,
// on the header and length of the last header beat; the flags are those of
// the frame at D2 (nrl_hdr_check latency 2 = in_hdr_end to D2)
wire hc_rx, hc_bad_length, hc_bad_header;

nrl_hdr_check #(
    .DATA_WIDTH(DATA_WIDTH),
    .REPLAY(0),
    .CHECK_BEATS(0),
    .IN_REG(0)
)
hdr_check_inst (
    .clk(clk),
    .hdr(hdr_now),
    .frame_len(len_now),
    .frame_beats(12'd0),
    .rx(hc_rx),
    .bad_length(hc_bad_length),
    .bad_header(hc_bad_header)
);

// checks 3..10 (BAD_JOB .. BAD_SLOT)
// authenticity against every member entry (ingress port, IPv4 and UDP
// source), at the last header beat; D1 picks the worker's bit
wire [7:0] auth_now;
reg  [7:0] hd_auth_reg;

generate

for (gi = 0; gi < 8; gi = gi + 1) begin : g_auth
    wire [15:0] udp = cfg_member_udp[16*gi +: 16];
    assign auth_now[gi] = (port_now & cfg_member_port[8*gi +: 8]) != 8'd0
                       && hn_ip_src == cfg_member_ip[32*gi +: 32]
                       && (udp == 16'd0 || hn_udp_src == udp);
end

endgenerate

always @(posedge clk) begin
    if (in_hdr_end) begin
        hd_auth_reg <= auth_now;
    end
end

wire [2:0] worker_role = cfg_member_role[3*worker +: 3];  // bit 0: may send GRADIENTs
wire worker_lt_members = hd_worker_reg[15:4] == 12'd0 && hd_worker_reg[3:0] < cfg_members;

wire fail_job = hd_job_reg != cfg_job_id;
wire fail_dis = !cfg_enable;
wire fail_unk = is_grad && !(worker_lt_members && worker_role[0]);
wire fail_spoof_grad = !hd_auth_reg[worker];
wire fail_spoof_res = !cfg_role || (port_reg & cfg_uplink_port) == 8'd0 || hd_ip_src_reg != cfg_parent_ip;
wire fail_spoof = is_grad ? fail_spoof_grad : fail_spoof_res;
wire fail_cnt = hd_count_reg != {7'd0, cfg_elems} || (is_grad && hd_total0_reg);
wire fail_len2 = pay_len_reg != {hd_count_reg[13:0], 2'b00} || hd_trunc_reg;
wire fail_dtype = hd_flags_reg[0] != cfg_dtype;
wire fail_slot = hd_slot_reg[15:7] != 9'd0 || hd_slot_reg[6:0] >= cfg_slots;
// GRADIENT round too far ahead of AGG_EPOCH (after BAD_SLOT, before STALE)
wire [AHEAD_W-1:0] ah_hi = hd_ah_borrow_reg ? hd_ah_hi1_reg : hd_ah_hi0_reg;
wire fail_ahead = is_grad && !ah_hi[AHEAD_W-1] && ah_hi[AHEAD_W-2:0] != {AHEAD_W-1{1'b0}};

/*
 * ---- end of header checks ------------------------------------------------
 */

/*
 * Slot state: RAM of {step, state, error, culprit, total, aux, bitmap,
 * round} per copy, valid bits in registers (cleared by reset and by
 * configuration writes)
 */
reg [ST_W-1:0] st_mem[0:COPY_N-1];
reg [ST_W-1:0] st_rdata_reg;
reg [COPY_N-1:0] st_valid_reg;
// the write of the cycle of the read, forwarded to D1
reg [ST_W-1:0] st_hist_reg;
reg            st_hist_we_reg;
reg            st_match_reg;

wire           st_we;
wire [ST_W-1:0] st_wdata;
reg [COPY_W-1:0] d2_copy_reg;

always @(posedge clk) begin
    if (st_we) begin
        st_mem[d2_copy_reg] <= st_wdata;
    end
    st_rdata_reg <= st_mem[copy_now];
end

// decoded valid-bit set (no variable-index write: that costs a carry chain)
wire [COPY_N-1:0] st_set;

generate

for (gi = 0; gi < COPY_N; gi = gi + 1) begin : g_vset
    localparam [COPY_W-1:0] IDX = gi;
    assign st_set[gi] = st_we && d2_copy_reg == IDX;
end

endgenerate

always @(posedge clk) begin
    st_hist_reg <= st_wdata;
    st_hist_we_reg <= st_we;
    st_match_reg <= d2_copy_reg == copy_now;
    st_valid_reg <= st_valid_reg | st_set;
    if (rst || cfg_invalidate) begin
        st_valid_reg <= {COPY_N{1'b0}};
        st_hist_we_reg <= 1'b0;
    end
end

/*
 * D1: state compares
 */
wire [ST_W-1:0] st_cur = (st_match_reg && st_hist_we_reg) ? st_hist_reg : st_rdata_reg;
wire [31:0] st_round = st_cur[31:0];
wire [7:0]  st_bitmap = st_cur[39:32];
wire [31:0] st_aux = st_cur[71:40];
wire [31:0] st_total = st_cur[103:72];
wire [2:0]  st_culprit = st_cur[106:104];
wire        st_error = st_cur[107];
wire [1:0]  st_state = st_cur[109:108];
wire [31:0] st_step = st_cur[141:110];
// contributions added so far (an OPEN copy's aux bits 3:0)
wire [3:0]  st_count = st_aux[3:0];

// (seq - aux) > AGG_STALENESS, in halves
wire [15:0] lag_hi = hd_lag_lo_reg[16] ? hd_lag_hi1_reg : hd_lag_hi0_reg;
wire lag_gt_hi = lag_hi > cfg_staleness[31:16];
wire lag_eq_hi = lag_hi == cfg_staleness[31:16];
wire lag_gt_lo = hd_lag_lo_reg[15:0] > cfg_staleness[15:0];

// copy round - seq, in halves: the sign decides newer / older
wire [16:0] rdiff_lo = {1'b0, st_round[15:0]} - {1'b0, hd_seq_reg[15:0]};
wire [15:0] rdiff_hi0 = st_round[31:16] - hd_seq_reg[31:16];
wire [15:0] rdiff_hi1 = st_round[31:16] + ~hd_seq_reg[31:16];
wire [4:0] count_p1 = {1'b0, st_count} + 5'd1;

// aux after adding worker to an OPEN copy: worker in order field st_count
// (bits 8+3j, j = count), count + 1 in bits 3:0
wire [23:0] order_add;

generate

for (gi = 0; gi < 8; gi = gi + 1) begin : g_ord
    localparam [3:0] J = gi;
    assign order_add[3*gi +: 3] = st_count == J ? worker : st_aux[8+3*gi +: 3];
end

endgenerate

reg            d2_valid_reg;
reg            d2_cfg_ok_reg;  // checks 3..10 pass
reg            d2_fail_job_reg;
reg            d2_fail_dis_reg;
reg            d2_fail_unk_reg;
reg            d2_fail_spoof_reg;
reg            d2_fail_cnt_reg;
reg            d2_fail_len2_reg;
reg            d2_fail_dtype_reg;
reg            d2_fail_slot_reg;
reg            d2_fail_ahead_reg;
reg            d2_is_grad_reg;
reg            d2_lag_gt_hi_reg;
reg            d2_lag_eq_hi_reg;
reg            d2_lag_gt_lo_reg;
reg            d2_copy_valid_reg;
reg            d2_same_round_reg;
reg            d2_rdiff_borrow_reg;
reg            d2_rdiff_neg0_reg;   // round - seq < 0, high half without the borrow
reg            d2_rdiff_neg1_reg;   // the same with the borrow
reg            d2_has_worker_reg;
reg            d2_add_completes_reg;
reg            d2_total_differs_reg;  // packet total != copy total
reg            d2_step_differs_reg;   // packet aux != copy step
reg [31:0]     d2_st_step_reg;
reg [31:0]     d2_aux_reg;            // the packet's aux (GRADIENT: its step id in sync mode)
reg [1:0]      d2_state_reg;
reg            d2_st_error_reg;
reg [2:0]      d2_st_culprit_reg;
reg [31:0]     d2_st_aux_reg;
reg [31:0]     d2_st_total_reg;
reg [31:0]     d2_aux_add_reg;  // copy aux with this contribution added
reg [7:0]      d2_bitmap_reg;
reg [31:0]     d2_round_reg;
reg [7:0]      d2_worker_bit_reg;
reg [2:0]      d2_worker_reg;
reg            d2_flag_err_reg; // flags.ERROR (RESULT)
reg [15:0]     d2_slot_reg;
reg [31:0]     d2_seq_reg;
reg [31:0]     d2_total_reg;
reg [31:0]     d2_aux_alt_reg;  // GRADIENT: its total (an error copy's aux); RESULT: its aux
reg [47:0]     d2_eth_src_reg;
reg [31:0]     d2_ip_src_reg;
reg [15:0]     d2_udp_src_reg;
reg [7:0]      d2_port_reg;

always @(posedge clk) begin
    d2_valid_reg <= d1_valid_reg;
    d2_cfg_ok_reg <= !(fail_job || fail_dis || fail_unk || fail_spoof || fail_cnt || fail_len2
                       || fail_dtype || fail_slot || fail_ahead);
    d2_fail_job_reg <= fail_job;
    d2_fail_dis_reg <= fail_dis;
    d2_fail_unk_reg <= fail_unk;
    d2_fail_spoof_reg <= fail_spoof;
    d2_fail_cnt_reg <= fail_cnt;
    d2_fail_len2_reg <= fail_len2;
    d2_fail_dtype_reg <= fail_dtype;
    d2_fail_slot_reg <= fail_slot;
    d2_fail_ahead_reg <= fail_ahead;
    d2_is_grad_reg <= is_grad;
    d2_lag_gt_hi_reg <= lag_gt_hi;
    d2_lag_eq_hi_reg <= lag_eq_hi;
    d2_lag_gt_lo_reg <= lag_gt_lo;
    d2_copy_valid_reg <= st_valid_reg[hd_copy_reg];
    d2_same_round_reg <= st_round == hd_seq_reg;
    d2_rdiff_borrow_reg <= rdiff_lo[16];
    d2_rdiff_neg0_reg <= rdiff_hi0[15];
    d2_rdiff_neg1_reg <= rdiff_hi1[15];
    d2_has_worker_reg <= st_bitmap[worker];
    d2_add_completes_reg <= count_p1 >= {1'b0, cfg_needed_reg};
    d2_total_differs_reg <= hd_total_reg != st_total;
    d2_step_differs_reg <= hd_aux_reg != st_step;
    d2_st_step_reg <= st_step;
    d2_aux_reg <= hd_aux_reg;
    d2_state_reg <= st_state;
    d2_st_error_reg <= st_error;
    d2_st_culprit_reg <= st_culprit;
    d2_st_aux_reg <= st_aux;
    d2_st_total_reg <= st_total;
    d2_aux_add_reg <= {order_add, 4'd0, count_p1[3:0]};
    d2_bitmap_reg <= st_bitmap;
    d2_round_reg <= st_round;
    d2_worker_bit_reg <= 8'd1 << worker;
    d2_worker_reg <= worker;
    d2_flag_err_reg <= hd_flags_reg[4];
    d2_copy_reg <= hd_copy_reg;
    d2_slot_reg <= hd_slot_reg;
    d2_seq_reg <= hd_seq_reg;
    d2_total_reg <= hd_total_reg;
    d2_aux_alt_reg <= is_grad ? hd_total_reg : hd_aux_reg;
    d2_eth_src_reg <= hd_eth_src_reg;
    d2_ip_src_reg <= hd_ip_src_reg;
    d2_udp_src_reg <= hd_udp_src_reg;
    d2_port_reg <= port_reg;
    if (rst) begin
        d2_valid_reg <= 1'b0;
    end
end

/*
 * D2: verdict
 */
// checks 1-10, first failing one wins: drop_* the drop reason, pass_* all
// checks before that one passed
wire drop_len1 = hc_bad_length;
wire drop_hdr = !drop_len1 && hc_bad_header;
wire pass_to_job = !hc_bad_length && !hc_bad_header;
wire drop_job = pass_to_job && d2_fail_job_reg;
wire pass_to_dis = pass_to_job && !d2_fail_job_reg;
wire drop_dis = pass_to_dis && d2_fail_dis_reg;
wire pass_to_unk = pass_to_dis && !d2_fail_dis_reg;
wire drop_unk = pass_to_unk && d2_fail_unk_reg;
wire pass_to_spoof = pass_to_unk && !d2_fail_unk_reg;
wire drop_spoof = pass_to_spoof && d2_fail_spoof_reg;
wire pass_to_cnt = pass_to_spoof && !d2_fail_spoof_reg;
wire drop_cnt = pass_to_cnt && d2_fail_cnt_reg;
wire pass_to_len2 = pass_to_cnt && !d2_fail_cnt_reg;
wire drop_len2 = pass_to_len2 && d2_fail_len2_reg;
wire pass_to_dtype = pass_to_len2 && !d2_fail_len2_reg;
wire drop_dtype = pass_to_dtype && d2_fail_dtype_reg;
wire pass_to_slot = pass_to_dtype && !d2_fail_dtype_reg;
wire drop_slot = pass_to_slot && d2_fail_slot_reg;
wire pass_to_ahead = pass_to_slot && !d2_fail_slot_reg;
wire drop_ahead = pass_to_ahead && d2_fail_ahead_reg;
// (checks 3..10 and AHEAD all passed: one register, so the reply logic sees a
// short chain)
wire checks_ok = pass_to_job && d2_cfg_ok_reg;

// GRADIENT, section 4 steps 1-7 (AHEAD, a header-only check, is above)
wire stale_lag = cfg_mode && (d2_lag_gt_hi_reg || (d2_lag_eq_hi_reg && d2_lag_gt_lo_reg));
wire rdiff_neg = d2_rdiff_borrow_reg ? d2_rdiff_neg1_reg : d2_rdiff_neg0_reg;
// the copy holds a newer round than the packet's
wire copy_newer = d2_copy_valid_reg && !d2_same_round_reg && !rdiff_neg;
wire g_open = !d2_copy_valid_reg || !d2_same_round_reg;
// the copy holds this round and another tensor length, or (sync mode) another
// step id: a newly opened copy takes the packet's
wire total_mismatch = !g_open && d2_total_differs_reg;
wire step_mismatch = !cfg_mode && !g_open && d2_step_differs_reg;
wire mismatch = total_mismatch || step_mismatch;
wire has_worker = !g_open && d2_has_worker_reg;
wire [1:0] copy_state = g_open ? ST_OPEN : d2_state_reg;
wire g_stale = stale_lag || copy_newer;
// a DONE copy of a newer round answers an old round; too stale (never added),
// a DONE copy of this round answers too (the async catch-up beyond the bound)
wire g_stale_resend = d2_state_reg == ST_DONE &&
                      (copy_newer || (stale_lag && d2_copy_valid_reg && d2_same_round_reg));
wire g_mis = !g_stale && mismatch;
// MISMATCH on a DONE copy re-sends its RESULT; on an OPEN or UP copy it
// makes an error copy (ERROR RESULT to every member)
wire g_mis_resend = g_mis && d2_state_reg == ST_DONE;
wire g_err = g_mis && d2_state_reg != ST_DONE;
// a step mismatch (same length) on a DONE copy that is no error copy: its
// RESULT goes to the sender with ERROR forced on, worker = the sender and
// aux = total (the copy is unchanged)
wire g_step_resend = g_mis_resend && !total_mismatch && !d2_st_error_reg;
wire g_dup = !g_stale && !mismatch && (has_worker || copy_state != ST_OPEN);
wire g_resend = g_dup && copy_state == ST_DONE;
wire g_upre = g_dup && copy_state == ST_UP && has_worker;
wire g_add = !g_stale && !mismatch && !g_dup;
wire complete = g_open ? cfg_first_completes_reg : d2_add_completes_reg;
// aux with this contribution added: the first one is the worker alone
wire [31:0] aux_new = g_open ? {21'd0, d2_worker_reg, 4'd0, 4'd1} : d2_aux_add_reg;
// a valid copy that holds this round (or a newer one): its total counts
wire use_copy_total = copy_newer || !g_open;

// RESULT (leaf)
wire r_replace = d2_copy_valid_reg && d2_same_round_reg && d2_state_reg == ST_UP;
wire r_dup = d2_copy_valid_reg && d2_same_round_reg && d2_state_reg == ST_DONE;

wire ok_grad = checks_ok && d2_is_grad_reg;
wire ok_res = checks_ok && !d2_is_grad_reg;

wire out_mcast = (ok_grad && ((g_add && complete && !cfg_role) || g_err)) || (ok_res && r_replace);
wire out_resend = ok_grad && (g_stale_resend || g_resend || g_mis_resend);
wire out_up = ok_grad && ((g_add && complete && cfg_role) || g_upre);
wire out_any = out_mcast || out_resend || out_up;

// written: GRADIENT add, GRADIENT error copy (mismatch), accepted RESULT;
// the round is the packet's (the copy's own unless the copy is opened now),
// the step the packet's aux when the copy is opened now, else the copy's
wire wr_add = d2_is_grad_reg && !mismatch;
wire wr_err = d2_is_grad_reg && mismatch;
assign st_we = d2_valid_reg && ((ok_grad && (g_add || g_err)) || (ok_res && r_replace));
assign st_wdata = {
    (d2_is_grad_reg && g_open) ? d2_aux_reg : d2_st_step_reg,
    wr_add ? (complete ? (cfg_role ? ST_UP : ST_DONE) : ST_OPEN) : ST_DONE,
    d2_is_grad_reg ? wr_err : d2_flag_err_reg,
    d2_worker_reg,
    wr_err ? d2_st_total_reg : d2_total_reg,
    wr_add ? aux_new : d2_aux_alt_reg,
    wr_add ? ((g_open ? 8'd0 : d2_bitmap_reg) | d2_worker_bit_reg) : d2_bitmap_reg,
    d2_seq_reg
};

// payload handling of the packet, used by its beats at P2
reg [1:0] pay_mode_reg;
reg       pay_out_reg;
reg       pay_int_reg;

always @(posedge clk) begin
    if (d2_valid_reg) begin
        if (ok_grad && g_add) begin
            pay_mode_reg <= g_open ? M_STORE : M_ADD;
        end else if (ok_res && r_replace) begin
            pay_mode_reg <= M_STORE;
        end else if (out_any) begin
            // resend, upward resend, error RESULT: the accumulator as it stands
            pay_mode_reg <= M_PASS;
        end else begin
            pay_mode_reg <= M_NONE;
        end
        pay_out_reg <= out_any;
        pay_int_reg <= cfg_dtype;
    end
    if (rst) begin
        pay_mode_reg <= M_NONE;
        pay_out_reg <= 1'b0;
    end
end

// counters
reg [18:0] cnt_inc_reg;

always @(posedge clk) begin
    cnt_inc_reg <= {19{d2_valid_reg}} & {
        drop_ahead,                                                // 18 AHEAD
        ok_grad && g_mis,                                          // 17 MISMATCH
        ok_grad && g_dup && !has_worker,                           // 16 LATE
        (ok_grad && g_dup && has_worker) || (ok_res && r_dup),     // 15 DUPLICATE
        (ok_grad && g_stale) || (ok_res && !r_replace && !r_dup),  // 14 STALE
        drop_slot,                                                 // 13 BAD_SLOT
        drop_dtype,                                                // 12 BAD_DTYPE
        drop_cnt,                                                  // 11 BAD_COUNT
        drop_spoof,                                                // 10 SPOOFED
        drop_unk,                                                  //  9 UNKNOWN_WORKER
        drop_dis,                                                  //  8 DISABLED
        drop_job,                                                  //  7 BAD_JOB
        drop_hdr,                                                  //  6 BAD_HEADER
        drop_len1 || drop_len2,                                    //  5 BAD_LENGTH
        out_up,                                                    //  4 TX_UP
        out_resend,                                                //  3 TX_RESEND
        out_mcast,                                                 //  2 TX_RESULT
        hc_rx && !d2_is_grad_reg,                                  //  1 RX_RESULT
        hc_rx && d2_is_grad_reg                                    //  0 RX_GRADIENT
    };
    if (rst) begin
        cnt_inc_reg <= 19'd0;
    end
end

assign cnt_inc = cnt_inc_reg;

/*
 * HP1: reply request (kind, header fields, the sender for a RESEND)
 */
reg        req_valid_reg;
reg [1:0]  req_kind_reg;
reg [15:0] req_slot_reg;
reg [31:0] req_seq_reg;
reg [31:0] req_aux_reg;
reg        req_error_reg;
reg [2:0]  req_worker_reg;
reg [31:0] req_total_reg;
reg [47:0] req_eth_src_reg;
reg [31:0] req_ip_src_reg;
reg [15:0] req_udp_src_reg;
reg [7:0]  req_port_reg;

always @(posedge clk) begin
    req_valid_reg <= d2_valid_reg && out_any;
    req_kind_reg <= out_resend ? K_RESEND : (out_up ? K_UP : K_MCAST);
    req_slot_reg <= d2_slot_reg;
    req_seq_reg <= (d2_is_grad_reg && copy_newer) ? d2_round_reg : d2_seq_reg;
    // RESULTs carry the copy's aux, total, ERROR flag and culprit (the
    // copy as it is written now for a multicast; a step mismatch re-sent
    // from a DONE copy: ERROR, the sender, aux = total); an upward GRADIENT
    // the copy's step as aux in sync mode (every GRADIENT that leads to one
    // carries it: a differing one is a mismatch), its round in async mode
    if (out_resend) begin
        req_aux_reg <= g_step_resend ? d2_st_total_reg : d2_st_aux_reg;
    end else if (out_up) begin
        req_aux_reg <= cfg_mode ? d2_seq_reg : d2_aux_reg;
    end else if (wr_add) begin
        req_aux_reg <= aux_new;
    end else begin
        req_aux_reg <= d2_aux_alt_reg;
    end
    if (out_resend) begin
        req_error_reg <= d2_st_error_reg || g_step_resend;
        req_worker_reg <= g_step_resend ? d2_worker_reg : (d2_st_error_reg ? d2_st_culprit_reg : 3'd0);
    end else begin
        req_error_reg <= d2_is_grad_reg ? mismatch : d2_flag_err_reg;
        req_worker_reg <= (d2_is_grad_reg ? mismatch : d2_flag_err_reg) ? d2_worker_reg : 3'd0;
    end
    req_total_reg <= (d2_is_grad_reg && use_copy_total) ? d2_st_total_reg : d2_total_reg;
    req_eth_src_reg <= d2_eth_src_reg;
    req_ip_src_reg <= d2_ip_src_reg;
    req_udp_src_reg <= d2_udp_src_reg;
    req_port_reg <= d2_port_reg;
    if (rst) begin
        req_valid_reg <= 1'b0;
    end
end

assign req_valid = req_valid_reg;
assign req_kind = req_kind_reg;
assign req_slot = req_slot_reg;
assign req_seq = req_seq_reg;
assign req_aux = req_aux_reg;
assign req_error = req_error_reg;
assign req_worker = req_worker_reg;
assign req_total = req_total_reg;
assign req_eth_src = req_eth_src_reg;
assign req_ip_src = req_ip_src_reg;
assign req_udp_src = req_udp_src_reg;
assign req_port = req_port_reg;

/*
 * Payload path
 */
reg [ACC_AW-1:0] rd_addr_reg;      // accumulator address of the next payload beat
reg [ACC_AW-1:0] rd_addr_p1_reg;   // rd_addr_reg + 1
reg [PIDX_W-1:0] pidx_reg;         // index of the next payload beat (saturating)
reg [PIDX_W-1:0] pidx_p1_reg;      // pidx_reg + 1 (saturating)
reg [COPY_W-1:0] pkt_copy_reg;     // slot copy of the frame streaming in

// accumulator base address of each slot copy (and + 1), constant tables
wire [ACC_AW-1:0] base_rom[0:COPY_N-1];
wire [ACC_AW-1:0] base_p1_rom[0:COPY_N-1];

generate

for (gi = 0; gi < COPY_N; gi = gi + 1) begin : g_base
    localparam integer BASE_I = gi < 2*MAX_SLOTS ? gi*MAX_PAY_BEATS : 0;
    localparam [ACC_AW-1:0] BASE = BASE_I[ACC_AW-1:0];
    localparam [ACC_AW-1:0] BASE_P1 = BASE + 1'b1;
    assign base_rom[gi] = BASE;
    assign base_p1_rom[gi] = BASE_P1;
end

endgenerate

always @(posedge clk) begin
    if (in_hdr_end) begin
        rd_addr_reg <= base_rom[copy_now];
        rd_addr_p1_reg <= base_p1_rom[copy_now];
        pidx_reg <= {PIDX_W{1'b0}};
        pidx_p1_reg <= {{PIDX_W-1{1'b0}}, 1'b1};
        pkt_copy_reg <= copy_now;
    end else if (in_pay) begin
        rd_addr_reg <= rd_addr_p1_reg;
        rd_addr_p1_reg <= rd_addr_p1_reg + 1'b1;
        pidx_reg <= pidx_p1_reg;
        if (pidx_p1_reg != {PIDX_W{1'b1}}) begin
            pidx_p1_reg <= pidx_p1_reg + 1'b1;
        end
    end
end

// accumulator RAM: one beat of LANES elements per word
reg [DATA_WIDTH-1:0] acc_mem[0:ACC_DEPTH-1];
reg [DATA_WIDTH-1:0] acc_rdata_reg;

// exit stage (X) signals
wire                  x_we;
wire [ACC_AW-1:0]     x_addr;
wire [DATA_WIDTH-1:0] x_data;

always @(posedge clk) begin
    if (x_we) begin
        acc_mem[x_addr] <= x_data;
    end
    acc_rdata_reg <= acc_mem[rd_addr_reg];
end

// control pipeline, index k = clocks after P2 (k = FP_LAT is X)
reg                  f_valid_reg[1:FP_LAT];
reg                  f_we_reg[1:FP_LAT];     // written back
reg                  f_out_reg[1:FP_LAT];    // a reply payload beat
reg                  f_last_reg[1:FP_LAT];
reg                  f_sum_reg[1:FP_LAT];    // the adder's sum (else f_pass_reg)
reg                  f_int_reg[1:FP_LAT];
reg [ACC_AW-1:0]     f_addr_reg[1:FP_LAT];
reg [DATA_WIDTH-1:0] f_pass_reg[1:FP_LAT];

// P1
reg                  p1_valid_reg;
reg [DATA_WIDTH-1:0] p1_data_reg;
reg [ACC_AW-1:0]     p1_addr_reg;
reg [PIDX_W-1:0]     p1_pidx_reg;
reg                  p1_same_copy_reg;
reg [COPY_W-1:0]     p1_copy_reg;
reg                  p1_in_range_reg;  // a beat of the packet's payload (not past P)
reg                  p1_last_reg;
reg                  p1_fwd_x_reg;     // operand from the beat leaving X now
reg                  p1_fwd_hist_reg;  // operand from the beat that left X (x_hist_reg)
// P2
reg                  p2_valid_reg;
reg [DATA_WIDTH-1:0] p2_a_reg;
reg [DATA_WIDTH-1:0] p2_b_reg;
reg [ACC_AW-1:0]     p2_addr_reg;
reg [PIDX_W-1:0]     p2_pidx_reg;
reg                  p2_same_copy_reg;
reg [COPY_W-1:0]     p2_copy_reg;
reg                  p2_in_range_reg;
reg                  p2_last_reg;
// last written beat (one clock old)
reg [DATA_WIDTH-1:0] x_hist_reg;

// payload index, slot copy and "same copy as the frame streaming in" of the
// beats in f1..f3 (hazard check)
reg [PIDX_W-1:0]     f_pidx_reg[1:3];
reg [COPY_W-1:0]     f_copy_reg[1:3];
reg [3:1]            f_same_copy_reg;

/*
 * Read-after-write hazard: a payload beat may not start while a beat of the
 * same slot copy and index (same address) is fewer than FP_LAT+1 clocks
 * ahead (in P1, P2, f1..f4): its sum is not ready to be forwarded. Computed
 * a clock early for the beat that comes next, against P1, P2, f1..f3 (one
 * step further down by then): index 0 of the slot copy whose header
 * completes now, the index after the payload beat taken now, or the index
 * of the beat that waits. Beats of the frame streaming in carry "same copy";
 * a completing header re-evaluates it for every beat in flight.
 *
 * The three candidates are kept as nets (keep: the LUT mapper may not merge
 * them with the select into one deep tree of wide LUTs; at the switch level
 * it built 11 levels from p2_pidx_reg to in_hazard_reg without the cut).
 */
(* keep *)
wire hz_first = (p1_valid_reg && p1_pidx_reg == {PIDX_W{1'b0}} && p1_copy_reg == copy_now)
             || (p2_valid_reg && p2_pidx_reg == {PIDX_W{1'b0}} && p2_copy_reg == copy_now)
             || (f_valid_reg[1] && f_pidx_reg[1] == {PIDX_W{1'b0}} && f_copy_reg[1] == copy_now)
             || (f_valid_reg[2] && f_pidx_reg[2] == {PIDX_W{1'b0}} && f_copy_reg[2] == copy_now)
             || (f_valid_reg[3] && f_pidx_reg[3] == {PIDX_W{1'b0}} && f_copy_reg[3] == copy_now);
(* keep *)
wire hz_adv = (p1_valid_reg && p1_same_copy_reg && p1_pidx_reg == pidx_p1_reg)
           || (p2_valid_reg && p2_same_copy_reg && p2_pidx_reg == pidx_p1_reg)
           || (f_valid_reg[1] && f_same_copy_reg[1] && f_pidx_reg[1] == pidx_p1_reg)
           || (f_valid_reg[2] && f_same_copy_reg[2] && f_pidx_reg[2] == pidx_p1_reg)
           || (f_valid_reg[3] && f_same_copy_reg[3] && f_pidx_reg[3] == pidx_p1_reg);
(* keep *)
wire hz_stay = (p1_valid_reg && p1_same_copy_reg && p1_pidx_reg == pidx_reg)
            || (p2_valid_reg && p2_same_copy_reg && p2_pidx_reg == pidx_reg)
            || (f_valid_reg[1] && f_same_copy_reg[1] && f_pidx_reg[1] == pidx_reg)
            || (f_valid_reg[2] && f_same_copy_reg[2] && f_pidx_reg[2] == pidx_reg)
            || (f_valid_reg[3] && f_same_copy_reg[3] && f_pidx_reg[3] == pidx_reg);

always @(posedge clk) begin
    in_hazard_reg <= in_hdr_end ? hz_first : (in_pay ? hz_adv : hz_stay);
    f_pidx_reg[1] <= p2_pidx_reg;
    f_copy_reg[1] <= p2_copy_reg;
    f_same_copy_reg[1] <= in_hdr_end ? p2_copy_reg == copy_now : p2_same_copy_reg;
    f_pidx_reg[2] <= f_pidx_reg[1];
    f_copy_reg[2] <= f_copy_reg[1];
    f_same_copy_reg[2] <= in_hdr_end ? f_copy_reg[1] == copy_now : f_same_copy_reg[1];
    f_pidx_reg[3] <= f_pidx_reg[2];
    f_copy_reg[3] <= f_copy_reg[2];
    f_same_copy_reg[3] <= in_hdr_end ? f_copy_reg[2] == copy_now : f_same_copy_reg[2];
    if (rst) begin
        in_hazard_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    p1_valid_reg <= in_pay;
    p1_data_reg <= s_axis_tdata;
    p1_addr_reg <= rd_addr_reg;
    p1_pidx_reg <= pidx_reg;
    p1_same_copy_reg <= 1'b1;
    p1_copy_reg <= pkt_copy_reg;
    p1_in_range_reg <= pidx_reg < cfg_pay_beats_reg;
    p1_last_reg <= s_axis_tlast || pidx_reg == cfg_pay_beats_m1_reg;
    // the beat leaving X next clock, or the one leaving now (then in x_hist_reg)
    p1_fwd_x_reg <= f_valid_reg[FP_LAT-1] && f_we_reg[FP_LAT-1] && f_addr_reg[FP_LAT-1] == rd_addr_reg;
    p1_fwd_hist_reg <= f_valid_reg[FP_LAT] && f_we_reg[FP_LAT] && f_addr_reg[FP_LAT] == rd_addr_reg;

    p2_valid_reg <= p1_valid_reg;
    p2_a_reg <= p1_fwd_x_reg ? x_data : (p1_fwd_hist_reg ? x_hist_reg : acc_rdata_reg);
    p2_b_reg <= p1_data_reg;
    p2_addr_reg <= p1_addr_reg;
    p2_pidx_reg <= p1_pidx_reg;
    p2_same_copy_reg <= in_hdr_end ? p1_copy_reg == copy_now : p1_same_copy_reg;
    p2_copy_reg <= p1_copy_reg;
    p2_in_range_reg <= p1_in_range_reg;
    p2_last_reg <= p1_last_reg;

    x_hist_reg <= x_data;

    if (rst) begin
        p1_valid_reg <= 1'b0;
        p2_valid_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    f_valid_reg[1] <= p2_valid_reg;
    f_we_reg[1] <= p2_in_range_reg && (pay_mode_reg == M_ADD || pay_mode_reg == M_STORE);
    f_out_reg[1] <= p2_in_range_reg && pay_out_reg;
    f_last_reg[1] <= p2_last_reg;
    f_sum_reg[1] <= pay_mode_reg == M_ADD;
    f_int_reg[1] <= pay_int_reg;
    f_addr_reg[1] <= p2_addr_reg;
    f_pass_reg[1] <= pay_mode_reg == M_STORE ? p2_b_reg : p2_a_reg;
    for (i = 2; i <= FP_LAT; i = i + 1) begin
        f_valid_reg[i] <= f_valid_reg[i-1];
        f_we_reg[i] <= f_we_reg[i-1];
        f_out_reg[i] <= f_out_reg[i-1];
        f_last_reg[i] <= f_last_reg[i-1];
        f_sum_reg[i] <= f_sum_reg[i-1];
        f_int_reg[i] <= f_int_reg[i-1];
        f_addr_reg[i] <= f_addr_reg[i-1];
        f_pass_reg[i] <= f_pass_reg[i-1];
    end
    if (rst) begin
        for (i = 1; i <= FP_LAT; i = i + 1) begin
            f_valid_reg[i] <= 1'b0;
        end
    end
end

// adder lanes: fp32 (fp32_add) and int32 (two 16-bit halves, then delayed)
wire [DATA_WIDTH-1:0] fp_sum;
wire [LANES-1:0]      fp_out_valid;  // lane 0 checks FP_LAT in simulation
wire [DATA_WIDTH-1:0] int_sum;
reg  [DATA_WIDTH-1:0] int_sum_reg[3:FP_LAT];

generate

for (gi = 0; gi < LANES; gi = gi + 1) begin : g_lane
    // verilator lint_off UNUSEDSIGNAL
    wire lane_tag;
    // verilator lint_on UNUSEDSIGNAL

    fp32_add #(
        .TAG_WIDTH(1)
    )
    add_inst (
        .clk(clk),
        .rst(rst),
        .in_valid(p2_valid_reg),
        .in_a(p2_a_reg[32*gi +: 32]),
        .in_b(p2_b_reg[32*gi +: 32]),
        .in_tag(1'b0),
        .out_valid(fp_out_valid[gi]),
        .out_sum(fp_sum[32*gi +: 32]),
        .out_tag(lane_tag)
    );

    // int32: low halves, then high halves with the carry
    reg [16:0] lo_reg;
    reg [15:0] ahi_reg;
    reg [15:0] bhi_reg;
    reg [31:0] sum_reg;

    always @(posedge clk) begin
        lo_reg <= {1'b0, p2_a_reg[32*gi +: 16]} + {1'b0, p2_b_reg[32*gi +: 16]};
        ahi_reg <= p2_a_reg[32*gi+16 +: 16];
        bhi_reg <= p2_b_reg[32*gi+16 +: 16];
        sum_reg <= {ahi_reg + bhi_reg + {15'd0, lo_reg[16]}, lo_reg[15:0]};
    end

    assign int_sum[32*gi +: 32] = sum_reg;
end

endgenerate

always @(posedge clk) begin
    int_sum_reg[3] <= int_sum;
    for (i = 4; i <= FP_LAT; i = i + 1) begin
        int_sum_reg[i] <= int_sum_reg[i-1];
    end
end

// X: result, write back, reply payload beat
assign x_data = f_sum_reg[FP_LAT] ? (f_int_reg[FP_LAT] ? int_sum_reg[FP_LAT] : fp_sum) : f_pass_reg[FP_LAT];
assign x_we = f_valid_reg[FP_LAT] && f_we_reg[FP_LAT];
assign x_addr = f_addr_reg[FP_LAT];

assign pay_data = x_data;
assign pay_last = f_last_reg[FP_LAT];
assign pay_valid = f_valid_reg[FP_LAT] && f_out_reg[FP_LAT];

`ifndef SYNTHESIS
always @(posedge clk) begin
    if (!rst && fp_out_valid[0] != f_valid_reg[FP_LAT]) begin
        $error("Error: fp32_add latency differs from FP_LAT (instance %m)");
        $finish;
    end
end
`endif

// inputs and fields the engine does not look at
// verilator lint_off UNUSEDSIGNAL
wire unused_in = &{1'b0, s_axis_tkeep, s_axis_tuser[USER_WIDTH-1:24], fp_out_valid,
                   hdr_now, cfg_pay_beats_full, hd_flags_reg[FLAGS_DEFINED-1:5], hd_flags_reg[3:1],
                   worker_role[2:1], rdiff_lo[15:0], rdiff_hi0[14:0], rdiff_hi1[14:0],
                   hn_ah_hi0[15-AHEAD_W:0], hn_ah_hi1[15-AHEAD_W:0]};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
