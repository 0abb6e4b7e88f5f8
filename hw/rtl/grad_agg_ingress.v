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
 * section 4: grad_agg_verdict),
 * and adds or stores the payload into the slot copy's beats of the
 * accumulator RAM (one fp32_add or int32 adder per 32-bit lane:
 * grad_agg_accum). This module holds the input framing, the header capture
 * and the header checks, and connects the two.
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
 * (P0 and the D1 header checks here; D1 state compares to HP1 in
 * grad_agg_verdict; P1 to X in grad_agg_accum.)
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
    parameter MAX_ELEMS = 352,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of a configuration word (grad_agg_cfg.vh CF_W; do not override)
    parameter CF_WIDTH = 644
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
    // the job the beat's bytes select (grad_agg_job: valid at the last
    // header beat): index (0 when none), found, configuration word, memory
    // slot (JOB_SLOT_BASE + slot), min(AGG_SLOTS, JOB_SLOT_COUNT)
    input  wire [JW-1:0]           s_axis_job,
    input  wire                    s_axis_found,
    input  wire [CF_WIDTH-1:0]     s_axis_cfg,
    input  wire [6:0]              s_axis_mslot,
    input  wire [6:0]              s_axis_nslots,

    /*
     * Configuration (grad_agg_regs; the job's own: s_axis_cfg)
     */
    input  wire                    cfg_enable,
    input  wire                    cfg_invalidate,
    input  wire [MAX_SLOTS-1:0]    slot_free,

    /*
     * Output FIFOs near full
     */
    input  wire                    out_stall,

    /*
     * Reply requests out (header preparation in grad_agg_egress)
     */
    output wire                    req_valid,
    output wire [JW-1:0]           req_job,
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
    output wire [18:0]             cnt_inc,
    output wire [JW-1:0]           cnt_job
);

localparam BYTES = DATA_WIDTH/8;
// beats holding bytes 0..63 (Ethernet + IPv4 + UDP + protocol header)
localparam HDR_BEATS = 64/BYTES;
localparam SLOT_W = MAX_SLOTS > 1 ? $clog2(MAX_SLOTS) : 1;
// slot copy index {slot, round[0]}
localparam COPY_W = SLOT_W + 1;
localparam [1:0] HDR_BEAT_CNT = HDR_BEATS[1:0];
localparam [1:0] HDR_BEAT_LAST = HDR_BEAT_CNT - 2'd1;

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
`include "grad_agg_cfg.vh"
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
    if (CF_WIDTH != CF_W) begin
        $error("Error: CF_WIDTH is computed (instance %m)");
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

genvar gi;

// byte swaps from network order fields in AXI4-Stream byte lanes
function [15:0] bswap16(input [15:0] v);
    bswap16 = {v[7:0], v[15:8]};
endfunction

function [31:0] bswap32(input [31:0] v);
    bswap32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction

/*
 * P0: input framing and header capture
 */
reg [1:0] in_cnt_reg, in_cnt_next;   // beats of this frame so far, saturating at HDR_BEATS
wire in_hazard;                      // the next payload beat must wait (grad_agg_accum)

wire in_hdr = in_cnt_reg != HDR_BEAT_CNT;
assign s_axis_tready = !out_stall && !(!in_hdr && in_hazard);
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
wire [15:0] hn_worker  = bswap16(hdr_now[8*NRL_OFF_WORKER +: 16]);
wire [15:0] hn_slot    = bswap16(hdr_now[8*NRL_OFF_SLOT +: 16]);
wire [31:0] hn_seq     = bswap32(hdr_now[8*NRL_OFF_SEQ +: 32]);
wire [15:0] hn_count   = bswap16(hdr_now[8*NRL_OFF_COUNT +: 16]);
wire [31:0] hn_aux     = bswap32(hdr_now[8*NRL_OFF_AUX +: 32]);
wire [31:0] hn_total   = bswap32(hdr_now[8*NRL_OFF_TOTAL +: 32]);
// slot copy {memory slot, seq[0]} of the frame: the memory slot is
// JOB_SLOT_BASE + slot (a slot at or beyond the job's range is BAD_SLOT: its
// copy is read, never written)
wire [COPY_W-1:0] copy_now = {s_axis_mslot[SLOT_W-1:0], hn_seq[0]};

// the frame's job's registers read at P0
wire [31:0]    cfg_epoch = s_axis_cfg[CF_EPOCH +: 32];
wire [8*8-1:0] cfg_member_port = s_axis_cfg[CF_MPORT +: 64];
wire [8*32-1:0] cfg_member_ip = s_axis_cfg[CF_MIP +: 256];
wire [8*16-1:0] cfg_member_udp = s_axis_cfg[CF_MUDP +: 128];

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
// the frame's length (TUSER) at the last header beat; a frame too short to hold
// the job byte names no job (its counts are job 0's, as the model counts them)
wire [15:0] len_now;
wire        job_in_frame = len_now > NRL_OFF_JOB[15:0];

// the frame's job (index, found), its configuration word, slot bound and
// the contributions completing its rounds (AGG_THRESHOLD or AGG_MEMBERS)
reg [JW-1:0]   hd_jidx_reg;
reg            hd_found_reg;
reg [CF_W-1:0] hd_cfg_reg;
reg [6:0]      hd_nslots_reg;
reg [3:0]      hd_needed_reg;
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
        hd_jidx_reg <= job_in_frame ? s_axis_job : {JW{1'b0}};
        hd_found_reg <= s_axis_found && job_in_frame;
        hd_cfg_reg <= s_axis_cfg;
        hd_nslots_reg <= s_axis_nslots;
        hd_needed_reg <= s_axis_cfg[CF_MODE] ? s_axis_cfg[CF_THRESHOLD +: 4] : s_axis_cfg[CF_MEMBERS +: 4];
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

// the frame's job's registers read from D1 on
wire [3:0]     cfg_members = hd_cfg_reg[CF_MEMBERS +: 4];
wire [8:0]     cfg_elems_d1 = hd_cfg_reg[CF_ELEMS +: 9];
wire           cfg_dtype = hd_cfg_reg[CF_DTYPE];
wire           cfg_mode = hd_cfg_reg[CF_MODE];
wire [31:0]    cfg_staleness = hd_cfg_reg[CF_STALENESS +: 32];
wire           cfg_role = hd_cfg_reg[CF_ROLE];
wire [7:0]     cfg_uplink_port = hd_cfg_reg[CF_UPLINK +: 8];
wire [31:0]    cfg_parent_ip = hd_cfg_reg[CF_PARENT_IP +: 32];
wire [8*3-1:0] cfg_member_role = hd_cfg_reg[CF_MROLE +: 24];
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

assign len_now = in_first ? tu_len : len_reg;

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

wire fail_job = !hd_found_reg;
wire fail_dis = !cfg_enable;
wire fail_unk = is_grad && !(worker_lt_members && worker_role[0]);
wire fail_spoof_grad = !hd_auth_reg[worker];
wire fail_spoof_res = !cfg_role || (port_reg & cfg_uplink_port) == 8'd0 || hd_ip_src_reg != cfg_parent_ip;
wire fail_spoof = is_grad ? fail_spoof_grad : fail_spoof_res;
wire fail_cnt = hd_count_reg != {7'd0, cfg_elems_d1} || (is_grad && hd_total0_reg);
wire fail_len2 = pay_len_reg != {hd_count_reg[13:0], 2'b00} || hd_trunc_reg;
wire fail_dtype = hd_flags_reg[0] != cfg_dtype;
wire fail_slot = hd_slot_reg[15:7] != 9'd0 || hd_slot_reg[6:0] >= hd_nslots_reg;
// GRADIENT round too far ahead of AGG_EPOCH (after BAD_SLOT, before STALE)
wire [AHEAD_W-1:0] ah_hi = hd_ah_borrow_reg ? hd_ah_hi1_reg : hd_ah_hi0_reg;
wire fail_ahead = is_grad && !ah_hi[AHEAD_W-1] && ah_hi[AHEAD_W-2:0] != {AHEAD_W-1{1'b0}};

/*
 * ---- end of header checks ------------------------------------------------
 */


/*
 * D1 state compares, D2 verdict, HP1 reply request
 */
// the payload handling of the last verdict (for grad_agg_accum)
wire [1:0] pay_mode;
wire       pay_out;
wire       pay_int;

grad_agg_verdict #(
    .MAX_SLOTS(MAX_SLOTS),
    .JOBS(JOBS)
)
verdict_inst (
    .clk(clk),
    .rst(rst),
    .cfg_needed(hd_needed_reg),
    .cfg_dtype(cfg_dtype),
    .cfg_mode(cfg_mode),
    .cfg_staleness(cfg_staleness),
    .cfg_role(cfg_role),
    .cfg_invalidate(cfg_invalidate),
    .slot_free(slot_free),
    .copy_now(copy_now),
    .d1_valid(d1_valid_reg),
    .hd_job(hd_jidx_reg),
    .hd_is_grad(is_grad),
    .hd_worker(worker),
    .hd_flag_err(hd_flags_reg[4]),
    .hd_copy(hd_copy_reg),
    .hd_slot(hd_slot_reg),
    .hd_seq(hd_seq_reg),
    .hd_aux(hd_aux_reg),
    .hd_total(hd_total_reg),
    .hd_lag_lo(hd_lag_lo_reg),
    .hd_lag_hi0(hd_lag_hi0_reg),
    .hd_lag_hi1(hd_lag_hi1_reg),
    .hd_eth_src(hd_eth_src_reg),
    .hd_ip_src(hd_ip_src_reg),
    .hd_udp_src(hd_udp_src_reg),
    .hd_port(port_reg),
    .fail_job(fail_job),
    .fail_dis(fail_dis),
    .fail_unk(fail_unk),
    .fail_spoof(fail_spoof),
    .fail_cnt(fail_cnt),
    .fail_len2(fail_len2),
    .fail_dtype(fail_dtype),
    .fail_slot(fail_slot),
    .fail_ahead(fail_ahead),
    .hc_rx(hc_rx),
    .hc_bad_length(hc_bad_length),
    .hc_bad_header(hc_bad_header),
    .req_valid(req_valid),
    .req_job(req_job),
    .req_kind(req_kind),
    .req_slot(req_slot),
    .req_seq(req_seq),
    .req_aux(req_aux),
    .req_error(req_error),
    .req_worker(req_worker),
    .req_total(req_total),
    .req_eth_src(req_eth_src),
    .req_ip_src(req_ip_src),
    .req_udp_src(req_udp_src),
    .req_port(req_port),
    .pay_mode(pay_mode),
    .pay_out(pay_out),
    .pay_int(pay_int),
    .cnt_inc(cnt_inc),
    .cnt_job(cnt_job)
);

/*
 * Payload path: P1, P2, adder lanes, X
 */

grad_agg_accum #(
    .DATA_WIDTH(DATA_WIDTH),
    .MAX_SLOTS(MAX_SLOTS),
    .MAX_ELEMS(MAX_ELEMS)
)
accum_inst (
    .clk(clk),
    .rst(rst),
    .cfg_elems(s_axis_cfg[CF_ELEMS +: 9]),
    .in_hdr_end(in_hdr_end),
    .copy_now(copy_now),
    .in_pay(in_pay),
    .in_data(s_axis_tdata),
    .in_last(s_axis_tlast),
    .hazard(in_hazard),
    .pay_mode(pay_mode),
    .pay_out(pay_out),
    .pay_int(pay_int),
    .pay_data(pay_data),
    .pay_last(pay_last),
    .pay_valid(pay_valid)
);

// inputs and fields the engine does not look at
// verilator lint_off UNUSEDSIGNAL
wire unused_in = &{1'b0, s_axis_tkeep, s_axis_tuser[USER_WIDTH-1:24], hdr_now,
                   hd_cfg_reg[CF_W-1:CF_MROLE+24], hd_cfg_reg[CF_MROLE-1:CF_EPOCH],
                   hd_cfg_reg[CF_PARENT_UDP +: 16], hd_cfg_reg[CF_LEAF_ID +: 3], hd_cfg_reg[CF_SLOTS +: 7],
                   hd_cfg_reg[CF_THRESHOLD +: 4], s_axis_mslot[6:SLOT_W],
                   s_axis_cfg[CF_W-1:CF_MROLE], s_axis_cfg[CF_EPOCH-1:0],
                   hd_flags_reg[FLAGS_DEFINED-1:5], hd_flags_reg[3:1],
                   worker_role[2:1], hn_ah_hi0[15-AHEAD_W:0], hn_ah_hi1[15-AHEAD_W:0]};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
