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
 * In-network experience replay engine (docs/protocol.md section 5).
 *
 * Input: the replay protocol frames (opcodes 3..7) the switch lookup sends
 * here. Output: PUSH_ACK and SAMPLE_RESP frames, TUSER[31:24] = the
 * requester's ingress port. AXI4-Lite: the replay view of the register map.
 *
 *   replay_ingress  header capture, checks of section 6, payload and meta
 *                   FIFOs (one frame per clock)
 *   executor        pops one request at a time, in arrival order:
 *                   PUSH   records -> record memory (one beat per clock),
 *                          leaves wp.. -> sum tree (one per clock), PUSH_ACK
 *                   UPDATE one (index, priority) pair per clock -> sum tree
 *                   SAMPLE one xorshift32 draw per clock -> replay_mul ->
 *                          replay_sum_tree descent -> response queue
 *   responder       one beat per clock: 64-byte header, descriptor and the
 *                   record read from the record memory
 *
 * Ordering: the sum tree is either updating or descending, never both. A
 * SAMPLE_REQ waits until the updates before it have left the update
 * pipeline (at most 5 clocks); an UPDATE or PUSH waits until the samples
 * before it have left the descent pipeline (about 4 log2(C) + 14 clocks); a
 * PUSH also waits until the responder has read every record it will
 * overwrite. So every request sees exactly the state its predecessors left,
 * as in hostdrv.model.
 */
module replay_engine #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // Replay capacity C in records (power of two, 4 .. 65536)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64)
    parameter RECORD_BYTES = 128,
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * Replay protocol frames in
     */
    input  wire [DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire                   s_axis_tvalid,
    output wire                   s_axis_tready,
    input  wire                   s_axis_tlast,
    input  wire [USER_WIDTH-1:0]  s_axis_tuser,

    /*
     * Replies out
     */
    output wire [DATA_WIDTH-1:0]  m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_tkeep,
    output wire                   m_axis_tvalid,
    input  wire                   m_axis_tready,
    output wire                   m_axis_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_tuser,

    /*
     * AXI4-Lite slave (registers)
     */
    input  wire [11:0]            s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [31:0]            s_axil_wdata,
    input  wire [3:0]             s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output wire [1:0]             s_axil_bresp,
    output wire                   s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [11:0]            s_axil_araddr,
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [31:0]            s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready
);

localparam BEAT_BYTES = KEEP_WIDTH;
localparam INDEX_W = $clog2(CAPACITY);
localparam SUM_W = 32 + INDEX_W;
localparam HDR_BEATS = 64 / BEAT_BYTES;
localparam REC_BEATS = RECORD_BYTES / BEAT_BYTES;
localparam REC_BEAT_W = REC_BEATS > 1 ? $clog2(REC_BEATS) : 1;
localparam REC_ADDR_W = INDEX_W + REC_BEAT_W;
localparam PAIRS_PER_BEAT = BEAT_BYTES / 8;                 // UPDATE pairs per beat
localparam PAIR_LANE_W = $clog2(PAIRS_PER_BEAT);
localparam MAX_PL_BEATS = (64 + 16*RECORD_BYTES) / BEAT_BYTES;
localparam PL_BEATS_W = $clog2(MAX_PL_BEATS + 1);
localparam PL_ADDR_WIDTH = $clog2(2*MAX_PL_BEATS);
localparam META_ADDR_WIDTH = 5;
localparam META_WIDTH = 1 + 16 + 2 + 1 + 3 + 32 + 8 + 48 + 32 + 16 + 8 + PL_BEATS_W;
localparam RESP_BEATS = HDR_BEATS + HDR_BEATS + REC_BEATS;  // header, descriptor, record
localparam CTX_TAG_W = 2;  // 4 request contexts
localparam RESP_Q_ADDR_W = 7;  // response queue: 128 entries
localparam RESP_Q_DEPTH = 2**RESP_Q_ADDR_W;
localparam OUT_ADDR_W = 4;
localparam MUL_LAT = 9;
localparam SMP_USER_W = CTX_TAG_W + 6 + 1 + 1;  // sample side band: tag, i, last, uniform
localparam RESP_ENTRY_W = 1 + 1 + CTX_TAG_W + 6 + INDEX_W + 32;
localparam NCNT = 14;

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"  // RST_RPL_SEED
`include "nrl_protocol.vh"  // frame and header constants of the replies
// verilator lint_on UNUSEDPARAM

localparam HDR_BEATS_M1 = HDR_BEATS - 1;
localparam REC_BEATS_M1 = REC_BEATS - 1;
localparam PAIRS_PER_BEAT_M1 = PAIRS_PER_BEAT - 1;
localparam REC_START = 2*HDR_BEATS;
localparam [PL_BEATS_W-1:0] PB_LAST = HDR_BEATS_M1[PL_BEATS_W-1:0];  // last beat of the priority block
localparam [REC_BEAT_W-1:0] REC_LAST = REC_BEATS_M1[REC_BEAT_W-1:0];
localparam [INDEX_W:0] CAP_B = CAPACITY[INDEX_W:0];
localparam [PAIR_LANE_W-1:0] PAIR_LANE_LAST = PAIRS_PER_BEAT_M1[PAIR_LANE_W-1:0];
localparam [7:0] ACK_BEATS_B = HDR_BEATS[7:0];
localparam [7:0] RESP_BEATS_B = RESP_BEATS[7:0];
localparam [7:0] HDR_BEATS_B = HDR_BEATS[7:0];
localparam [7:0] REC_START_B = REC_START[7:0];

initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end
    if (USER_WIDTH < 32) begin
        $error("Error: USER_WIDTH must hold the SUME port fields [31:16] (instance %m)");
        $finish;
    end
    if (CAPACITY < 4 || CAPACITY > 65536 || (CAPACITY & (CAPACITY - 1)) != 0) begin
        $error("Error: CAPACITY must be a power of two in 4 .. 65536 (instance %m)");
        $finish;
    end
    if (RECORD_BYTES < 64 || RECORD_BYTES % 64 != 0 || RECORD_BYTES > 4032) begin
        $error("Error: RECORD_BYTES must be a multiple of 64 in 64..4032 (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// registers

wire rpl_enable;
wire [7:0] job_id;
wire [15:0] udp_port;
wire [31:0] switch_ip;
wire [47:0] switch_mac;
wire [8*8-1:0] member_port;
wire [8*32-1:0] member_ip;
wire [8*16-1:0] member_udp;
wire [8*3-1:0] member_role;
wire [31:0] seed;
wire seed_wr;
wire rpl_reset;
wire [NCNT-1:0] cnt_inc;

reg [INDEX_W-1:0] wp_reg, wp_next;
reg [INDEX_W:0] size_reg, size_next;
wire [SUM_W-1:0] tree_total;

replay_regs #(
    .CAPACITY(CAPACITY),
    .RECORD_BYTES(RECORD_BYTES),
    .BUILD_HASH(BUILD_HASH),
    .NCNT(NCNT)
)
regs_inst (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(s_axil_awaddr),
    .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata),
    .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid),
    .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid),
    .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata),
    .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .rpl_enable(rpl_enable),
    .job_id(job_id),
    .udp_port(udp_port),
    .switch_ip(switch_ip),
    .switch_mac(switch_mac),
    .member_port(member_port),
    .member_ip(member_ip),
    .member_udp(member_udp),
    .member_role(member_role),
    .seed(seed),
    .seed_wr(seed_wr),
    .rpl_reset(rpl_reset),
    .rpl_size({{31-INDEX_W{1'b0}}, size_reg}),
    .rpl_wptr({{32-INDEX_W{1'b0}}, wp_reg}),
    .rpl_total({{64-SUM_W{1'b0}}, tree_total}),
    .cnt_inc(cnt_inc)
);

// ---------------------------------------------------------------------------
// ingress

wire [DATA_WIDTH-1:0] pl_data;
wire pl_valid;
reg pl_ready;
wire [META_WIDTH-1:0] meta_data;
wire meta_valid;
reg meta_ready;
wire stat_rx_push, stat_rx_sample, stat_rx_update;
wire [6:0] stat_drop;

replay_ingress #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .RECORD_BYTES(RECORD_BYTES),
    .PL_ADDR_WIDTH(PL_ADDR_WIDTH),
    .META_ADDR_WIDTH(META_ADDR_WIDTH),
    .META_WIDTH(META_WIDTH)
)
ingress_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(s_axis_tdata),
    .s_axis_tkeep(s_axis_tkeep),
    .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready),
    .s_axis_tlast(s_axis_tlast),
    .s_axis_tuser(s_axis_tuser),
    .rpl_enable(rpl_enable),
    .job_id(job_id),
    .switch_ip(switch_ip),
    .member_port(member_port),
    .member_ip(member_ip),
    .member_udp(member_udp),
    .member_role(member_role),
    .pl_data(pl_data),
    .pl_valid(pl_valid),
    .pl_ready(pl_ready),
    .meta_data(meta_data),
    .meta_valid(meta_valid),
    .meta_ready(meta_ready),
    .stat_rx_push(stat_rx_push),
    .stat_rx_sample(stat_rx_sample),
    .stat_rx_update(stat_rx_update),
    .stat_drop(stat_drop)
);

// meta entry fields
wire [PL_BEATS_W-1:0] m_plb = meta_data[0 +: PL_BEATS_W];
localparam MO_PORT = PL_BEATS_W;
localparam MO_UDP = MO_PORT + 8;
localparam MO_IP = MO_UDP + 16;
localparam MO_ETH = MO_IP + 32;
localparam MO_CNT = MO_ETH + 48;
localparam MO_SEQ = MO_CNT + 8;
localparam MO_W = MO_SEQ + 32;
localparam MO_PRIO = MO_W + 3;
localparam MO_OP = MO_PRIO + 1;
localparam MO_CSUM = MO_OP + 2;
localparam MO_OK = MO_CSUM + 16;
wire [7:0] m_count = meta_data[MO_CNT +: 8];
wire m_prio = meta_data[MO_PRIO];
wire [1:0] m_op = meta_data[MO_OP +: 2];
wire m_ok = meta_data[MO_OK];

// ---------------------------------------------------------------------------
// sum tree and sampler arithmetic

reg tree_clear;
wire tree_clearing;
reg tu_v_reg, tu_v_next;
reg tu_check_reg, tu_check_next;
reg [31:0] tu_idx_reg, tu_idx_next;
reg [31:0] tu_prio_reg, tu_prio_next;
wire tu_bad = tu_check_reg && (tu_idx_reg[31:INDEX_W+1] != 0 || tu_idx_reg[INDEX_W:0] >= size_reg);
wire upd_busy;
wire q_busy;

wire mul_valid;
// verilator lint_off UNUSEDSIGNAL
wire [47:0] mul_p;   // bits above SUM_WIDTH are 0
wire [SMP_USER_W-1:0] r_user;  // bit 0 (uniform) is used before the tree
// verilator lint_on UNUSEDSIGNAL
wire [SMP_USER_W-1:0] mul_user;
reg mul_in_valid;
reg [37:0] mul_in_a;
reg [47:0] mul_in_b;
reg [SMP_USER_W-1:0] mul_in_user;

wire r_valid;
wire [INDEX_W-1:0] r_index;
wire [31:0] r_prio;

replay_mul #(
    .A_WIDTH(38),
    .B_WIDTH(48),
    .OUT_WIDTH(48),
    .USER_WIDTH(SMP_USER_W),
    .LATENCY(MUL_LAT)
)
mul_inst (
    .clk(clk),
    .rst(rst),
    .in_valid(mul_in_valid),
    .in_a(mul_in_a),
    .in_b(mul_in_b),
    .in_user(mul_in_user),
    .out_valid(mul_valid),
    .out_p(mul_p),
    .out_user(mul_user)
);

replay_sum_tree #(
    .CAPACITY(CAPACITY),
    .USER_WIDTH(SMP_USER_W)
)
tree_inst (
    .clk(clk),
    .rst(rst),
    .clear_start(tree_clear),
    .clearing(tree_clearing),
    .upd_valid(tu_v_reg && !tu_bad),
    .upd_index(tu_idx_reg[INDEX_W-1:0]),
    .upd_prio(tu_prio_reg),
    .upd_busy(upd_busy),
    .q_valid(mul_valid),
    .q_uniform(mul_user[0]),
    .q_target(mul_p[SUM_W-1:0]),
    .q_index(mul_p[INDEX_W-1:0]),
    .q_user(mul_user),
    .q_busy(q_busy),
    .r_valid(r_valid),
    .r_index(r_index),
    .r_prio(r_prio),
    .r_user(r_user),
    .total(tree_total)
);

// ---------------------------------------------------------------------------
// record memory

reg [DATA_WIDTH-1:0] rec_mem[(2**REC_ADDR_W)-1:0];
reg rec_we;
reg [REC_ADDR_W-1:0] rec_wa;
reg [REC_ADDR_W-1:0] rec_ra;
reg [DATA_WIDTH-1:0] rec_rd_reg;

always @(posedge clk) begin
    if (rec_we) begin
        rec_mem[rec_wa] <= pl_data;
    end
    rec_rd_reg <= rec_mem[rec_ra];
end

// ---------------------------------------------------------------------------
// request contexts (what a reply echoes), written by the executor, read by
// the responder

localparam CTX_WIDTH = 48 + 32 + 16 + 8 + 3 + 32 + 16 + 8 + SUM_W + (INDEX_W+1);
reg [CTX_WIDTH-1:0] ctx_mem[(2**CTX_TAG_W)-1:0];
reg ctx_we;
reg [CTX_WIDTH-1:0] ctx_wd;
reg [CTX_TAG_W-1:0] ctx_wr_reg, ctx_wr_next;
reg [CTX_TAG_W:0] ctx_used_reg;
reg ctx_free;  // responder releases one context

always @(posedge clk) begin
    if (ctx_we) begin
        ctx_mem[ctx_wr_reg] <= ctx_wd;
    end
end

always @(posedge clk) begin
    ctx_used_reg <= ctx_used_reg + {{CTX_TAG_W{1'b0}}, ctx_we} - {{CTX_TAG_W{1'b0}}, ctx_free};
    if (rst) begin
        ctx_used_reg <= {CTX_TAG_W+1{1'b0}};
    end
end

wire ctx_room = ctx_used_reg < 2**CTX_TAG_W;

// ---------------------------------------------------------------------------
// response queue

reg rq_push;
reg [RESP_ENTRY_W-1:0] rq_push_data;
wire [RESP_ENTRY_W-1:0] rq_data;
wire rq_valid;
reg rq_pop;
wire rq_in_ready;
wire [RESP_Q_ADDR_W+1:0] rq_count;

nrl_fifo #(
    .WIDTH(RESP_ENTRY_W),
    .ADDR_WIDTH(RESP_Q_ADDR_W)
)
rq_inst (
    .clk(clk),
    .rst(rst),
    .in_data(rq_push_data),
    .in_valid(rq_push),
    .in_ready(rq_in_ready),
    .out_data(rq_data),
    .out_valid(rq_valid),
    .out_ready(rq_pop),
    .count(rq_count)
);

// entries reserved: samples issued or queued, acks queued; released when the
// responder has issued the frame's last beat
reg [RESP_Q_ADDR_W+1:0] rq_used_reg;
reg rq_take;
// samples between issue and the tree output
reg [7:0] inflight_reg;
reg smp_issue;

always @(posedge clk) begin
    rq_used_reg <= rq_used_reg + {{RESP_Q_ADDR_W+1{1'b0}}, rq_take} - {{RESP_Q_ADDR_W+1{1'b0}}, rq_pop};
    inflight_reg <= inflight_reg + {7'd0, smp_issue} - {7'd0, r_valid};
    if (rst) begin
        rq_used_reg <= {RESP_Q_ADDR_W+2{1'b0}};
        inflight_reg <= 8'd0;
    end
end

// ---------------------------------------------------------------------------
// executor

localparam [3:0]
    S_IDLE = 4'd0,
    S_SKIP = 4'd1,
    S_PUSH_WAIT = 4'd2,
    S_PUSH_BLK = 4'd3,
    S_PUSH_REC = 4'd4,
    S_PUSH_END = 4'd5,
    S_UPD_WAIT = 4'd6,
    S_UPD = 4'd7,
    S_SMP_WAIT = 4'd8,
    S_SMP_SETUP = 4'd9,
    S_SMP_ISSUE = 4'd10;

reg [3:0] state_reg, state_next;
reg [PL_BEATS_W-1:0] cnt_reg, cnt_next;
reg [INDEX_W:0] size_sat_reg;  // min(size + count, C) for the PUSH in progress
reg [2*DATA_WIDTH-1:0] blk_reg, blk_next;  // the priority block (first 64 bytes)
reg [4:0] rec_j_reg, rec_j_next;
reg [REC_BEAT_W-1:0] rec_b_reg, rec_b_next;
reg [INDEX_W-1:0] rec_idx_reg, rec_idx_next;
reg [4:0] tu_j_reg, tu_j_next;
reg [7:0] pair_reg, pair_next;
reg [7:0] left_reg, left_next;  // pairs or samples still to go in this request
wire left_last = left_reg == 8'd1;
reg [31:0] rng_reg, rng_next;
reg [47:0] y_reg, y_next;
reg [6:0] smp_i_reg, smp_i_next;
reg reset_pend_reg, reset_pend_next;
reg stat_empty;

function [31:0] xorshift32(input [31:0] x);
    reg [31:0] t;
    begin
        t = x ^ (x << 13);
        t = t ^ (t >> 17);
        xorshift32 = t ^ (t << 5);
    end
endfunction

// log2 of a power-of-two batch size 1..64
// verilator lint_off UNUSEDSIGNAL
function [2:0] log2b(input [7:0] b);
    begin
        log2b = b[1] ? 3'd1 : b[2] ? 3'd2 : b[3] ? 3'd3 : b[4] ? 3'd4 :
                b[5] ? 3'd5 : b[6] ? 3'd6 : 3'd0;
    end
endfunction
// verilator lint_on UNUSEDSIGNAL

wire [CTX_WIDTH-1:0] ctx_common = {meta_data[MO_ETH +: 48], meta_data[MO_IP +: 32],
                                   meta_data[MO_UDP +: 16], meta_data[MO_PORT +: 8],
                                   meta_data[MO_W +: 3], meta_data[MO_SEQ +: 32],
                                   meta_data[MO_CSUM +: 16], m_count, {SUM_W{1'b0}}, {INDEX_W+1{1'b0}}};

// registered: the tree and size are stable for at least one clock when a SAMPLE_REQ
// reaches S_SMP_SETUP (it waits for the update pipeline to drain first)
reg size_zero_reg, total_zero_reg;
wire m_empty = size_zero_reg || (m_prio && total_zero_reg);
wire [SUM_W-1:0] seg = tree_total >> log2b(m_count);
wire [31:0] size_add32 = {{31-INDEX_W{1'b0}}, size_reg} + {27'd0, m_count[4:0]};
wire [INDEX_W:0] size_add = size_add32[INDEX_W:0];
// verilator lint_off UNUSEDSIGNAL
wire [31:0] wp_plus_j = {{32-INDEX_W{1'b0}}, wp_reg} + {27'd0, tu_j_reg};
wire [31:0] wp_plus_k = {{32-INDEX_W{1'b0}}, wp_reg} + {27'd0, m_count[4:0]};
// verilator lint_on UNUSEDSIGNAL
wire [PAIR_LANE_W-1:0] pair_lane = pair_reg[PAIR_LANE_W-1:0];
wire [63:0] pair_data = pl_data[pair_lane*64 +: 64];

always @* begin
    state_next = state_reg;
    cnt_next = cnt_reg;
    blk_next = blk_reg;
    rec_j_next = rec_j_reg;
    rec_b_next = rec_b_reg;
    rec_idx_next = rec_idx_reg;
    tu_j_next = tu_j_reg;
    pair_next = pair_reg;
    left_next = left_reg;
    rng_next = rng_reg;
    y_next = y_reg;
    smp_i_next = smp_i_reg;
    wp_next = wp_reg;
    size_next = size_reg;
    ctx_wr_next = ctx_wr_reg;
    reset_pend_next = reset_pend_reg || rpl_reset;

    tu_v_next = 1'b0;
    tu_check_next = 1'b0;
    tu_idx_next = tu_idx_reg;
    tu_prio_next = tu_prio_reg;

    pl_ready = 1'b0;
    meta_ready = 1'b0;
    rec_we = 1'b0;
    rec_wa = {rec_idx_reg, rec_b_reg};
    tree_clear = 1'b0;
    ctx_we = 1'b0;
    ctx_wd = ctx_common;
    rq_take = 1'b0;
    smp_issue = 1'b0;
    stat_empty = 1'b0;
    mul_in_valid = 1'b0;
    mul_in_a = {6'd0, xorshift32(rng_reg)};
    mul_in_b = y_reg;
    mul_in_user = {ctx_wr_reg, smp_i_reg[5:0], 1'b0, !m_prio};

    case (state_reg)
        S_IDLE: begin
            if (reset_pend_reg) begin
                // empty the memory once nothing is in flight
                if (!upd_busy && !tu_v_reg && inflight_reg == 0 && !q_busy) begin
                    tree_clear = 1'b1;
                    wp_next = {INDEX_W{1'b0}};
                    size_next = {INDEX_W+1{1'b0}};
                    reset_pend_next = rpl_reset;
                end
            end else if (!tree_clearing && meta_valid) begin
                if (!m_ok) begin
                    if (m_plb == 0) begin
                        meta_ready = 1'b1;
                    end else begin
                        cnt_next = m_plb;
                        state_next = S_SKIP;
                    end
                end else if (m_op == 2'd0) begin
                    state_next = S_PUSH_WAIT;
                end else if (m_op == 2'd1) begin
                    state_next = S_SMP_WAIT;
                end else if (inflight_reg == 0 && !q_busy) begin
                    // UPDATE with the descent pipeline already empty: start now
                    pair_next = 8'd0;
                    left_next = m_count;
                    state_next = S_UPD;
                end else begin
                    state_next = S_UPD_WAIT;
                end
            end
        end
        S_SKIP: begin
            pl_ready = 1'b1;
            if (pl_valid) begin
                cnt_next = cnt_reg - 1'b1;
                if (cnt_reg == 1) begin
                    meta_ready = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        S_PUSH_WAIT: begin
            if (inflight_reg == 0 && !q_busy && rq_used_reg == 0 && ctx_room) begin
                cnt_next = {PL_BEATS_W{1'b0}};
                state_next = S_PUSH_BLK;
            end
        end
        S_PUSH_BLK: begin
            pl_ready = 1'b1;
            if (pl_valid) begin
                if (cnt_reg[0]) begin
                    blk_next[DATA_WIDTH +: DATA_WIDTH] = pl_data;
                end else begin
                    blk_next[0 +: DATA_WIDTH] = pl_data;
                end
                cnt_next = cnt_reg + 1'b1;
                if (cnt_reg == PB_LAST) begin
                    rec_j_next = 5'd0;
                    rec_b_next = {REC_BEAT_W{1'b0}};
                    rec_idx_next = wp_reg;
                    tu_j_next = 5'd0;
                    state_next = S_PUSH_REC;
                end
            end
        end
        S_PUSH_REC: begin
            // record beats
            if (rec_j_reg != m_count[4:0]) begin
                pl_ready = 1'b1;
                if (pl_valid) begin
                    rec_we = 1'b1;
                    if (rec_b_reg == REC_LAST) begin
                        rec_b_next = {REC_BEAT_W{1'b0}};
                        rec_j_next = rec_j_reg + 1'b1;
                        rec_idx_next = rec_idx_reg + 1'b1;
                    end else begin
                        rec_b_next = rec_b_reg + 1'b1;
                    end
                end
            end
            // leaves, one per clock
            if (tu_j_reg != m_count[4:0]) begin
                tu_v_next = 1'b1;
                tu_idx_next = {{32-INDEX_W{1'b0}}, wp_plus_j[INDEX_W-1:0]};
                tu_prio_next = blk_reg[tu_j_reg[3:0]*32 +: 32];
                tu_j_next = tu_j_reg + 1'b1;
            end
            if (rec_j_reg == m_count[4:0] && tu_j_reg == m_count[4:0]) begin
                state_next = S_PUSH_END;
            end
        end
        S_PUSH_END: begin
            ctx_we = 1'b1;
            ctx_wr_next = ctx_wr_reg + 1'b1;
            rq_take = 1'b1;
            wp_next = wp_plus_k[INDEX_W-1:0];
            size_next = size_sat_reg;
            meta_ready = 1'b1;
            state_next = S_IDLE;
        end
        S_UPD_WAIT: begin
            if (inflight_reg == 0 && !q_busy) begin
                pair_next = 8'd0;
                left_next = m_count;
                state_next = S_UPD;
            end
        end
        S_UPD: begin
            if (pl_valid) begin
                tu_v_next = 1'b1;
                tu_check_next = 1'b1;
                tu_idx_next = pair_data[31:0];
                tu_prio_next = pair_data[63:32];
                pair_next = pair_reg + 1'b1;
                left_next = left_reg - 8'd1;
                if (pair_lane == PAIR_LANE_LAST || left_last) begin
                    pl_ready = 1'b1;
                end
                if (left_last) begin
                    meta_ready = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        S_SMP_WAIT: begin
            if (!upd_busy && !tu_v_reg && ctx_room) begin
                state_next = S_SMP_SETUP;
            end
        end
        S_SMP_SETUP: begin
            if (m_empty) begin
                stat_empty = 1'b1;
                meta_ready = 1'b1;
                state_next = S_IDLE;
            end else begin
                y_next = m_prio ? {{48-SUM_W{1'b0}}, seg} : {{47-INDEX_W{1'b0}}, size_reg};
                ctx_we = 1'b1;
                ctx_wd[INDEX_W+1 +: SUM_W] = m_prio ? tree_total : {{SUM_W-INDEX_W-1{1'b0}}, size_reg};
                ctx_wd[0 +: INDEX_W+1] = size_reg;
                smp_i_next = 7'd0;
                left_next = m_count;
                state_next = S_SMP_ISSUE;
            end
        end
        S_SMP_ISSUE: begin
            if (rq_used_reg < RESP_Q_DEPTH) begin
                smp_issue = 1'b1;
                rq_take = 1'b1;
                rng_next = xorshift32(rng_reg);
                mul_in_valid = 1'b1;
                mul_in_a = {m_prio ? smp_i_reg[5:0] : 6'd0, rng_next};
                smp_i_next = smp_i_reg + 1'b1;
                left_next = left_reg - 8'd1;
                if (left_last) begin
                    mul_in_user[1] = 1'b1;  // last sample of the request
                    ctx_wr_next = ctx_wr_reg + 1'b1;
                    meta_ready = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        default: begin
            state_next = S_IDLE;
        end
    endcase

    if (seed_wr) begin
        rng_next = seed == 0 ? RST_RPL_SEED : seed;
    end
end

always @(posedge clk) begin
    state_reg <= state_next;
    cnt_reg <= cnt_next;
    blk_reg <= blk_next;
    rec_j_reg <= rec_j_next;
    rec_b_reg <= rec_b_next;
    rec_idx_reg <= rec_idx_next;
    tu_j_reg <= tu_j_next;
    pair_reg <= pair_next;
    left_reg <= left_next;
    rng_reg <= rng_next;
    y_reg <= y_next;
    smp_i_reg <= smp_i_next;
    wp_reg <= wp_next;
    size_reg <= size_next;
    ctx_wr_reg <= ctx_wr_next;
    reset_pend_reg <= reset_pend_next;
    tu_v_reg <= tu_v_next;
    tu_check_reg <= tu_check_next;
    tu_idx_reg <= tu_idx_next;
    tu_prio_reg <= tu_prio_next;
    size_sat_reg <= size_add32 > CAPACITY ? CAP_B : size_add;
    size_zero_reg <= size_reg == 0;
    total_zero_reg <= tree_total == 0;

    if (rst) begin
        state_reg <= S_IDLE;
        wp_reg <= {INDEX_W{1'b0}};
        size_reg <= {INDEX_W+1{1'b0}};
        rng_reg <= RST_RPL_SEED;
        ctx_wr_reg <= {CTX_TAG_W{1'b0}};
        reset_pend_reg <= 1'b0;
        tu_v_reg <= 1'b0;
        tu_check_reg <= 1'b0;
    end
end

// response queue input: the ack (executor) or a sample (tree); never both,
// since a PUSH waits for every earlier sample to leave the tree
always @* begin
    rq_push = 1'b0;
    rq_push_data = {1'b0, r_user[1], r_user[SMP_USER_W-1 -: CTX_TAG_W], r_user[7:2], r_index, r_prio};
    if (state_reg == S_PUSH_END) begin
        rq_push = 1'b1;
        rq_push_data = {1'b1, 1'b1, ctx_wr_reg, 6'd0, wp_reg, 32'd0};
    end else if (r_valid) begin
        rq_push = 1'b1;
    end
end

// ---------------------------------------------------------------------------
// responder: one beat per clock into the output FIFO

wire rq_ack = rq_data[RESP_ENTRY_W-1];
wire rq_last = rq_data[RESP_ENTRY_W-2];
wire [CTX_TAG_W-1:0] rq_tag = rq_data[RESP_ENTRY_W-3 -: CTX_TAG_W];
wire [5:0] rq_i = rq_data[32+INDEX_W +: 6];
wire [INDEX_W-1:0] rq_index = rq_data[32 +: INDEX_W];
wire [31:0] rq_prio = rq_data[31:0];

wire [CTX_WIDTH-1:0] ctx = ctx_mem[rq_tag];
wire [INDEX_W:0] c_size = ctx[0 +: INDEX_W+1];
wire [SUM_W-1:0] c_total = ctx[INDEX_W+1 +: SUM_W];
wire [7:0] c_count = ctx[INDEX_W+1+SUM_W +: 8];
wire [15:0] c_csum = ctx[INDEX_W+1+SUM_W+8 +: 16];
wire [31:0] c_seq = ctx[INDEX_W+1+SUM_W+24 +: 32];
wire [2:0] c_w = ctx[INDEX_W+1+SUM_W+56 +: 3];
wire [7:0] c_port = ctx[INDEX_W+1+SUM_W+59 +: 8];
wire [15:0] c_udp = ctx[INDEX_W+1+SUM_W+67 +: 16];
wire [31:0] c_ip = ctx[INDEX_W+1+SUM_W+83 +: 32];
wire [47:0] c_eth = ctx[INDEX_W+1+SUM_W+115 +: 48];

wire [OUT_ADDR_W+1:0] out_count;
reg [7:0] beat_reg, beat_next;
reg g1_v_reg;
reg g1_rec_reg;
reg g1_last_reg;
reg [DATA_WIDTH-1:0] g1_data_reg;
reg [31:0] g1_user_reg;
reg stat_tx_ack, stat_tx_resp;

// beats issued and not yet taken by m_axis (in G1 or in the output FIFO), registered so the
// credit check is one compare
reg [OUT_ADDR_W+1:0] out_used_reg;
localparam [OUT_ADDR_W+1:0] OUT_LIMIT = (2**OUT_ADDR_W) - 2;
wire gen_credit = out_used_reg < OUT_LIMIT;
// last beat of the frame: compared against each constant, then selected, so
// no subtract/compare carry chain sits between the queue head and rq_pop
wire beat_is_last = rq_ack ? beat_reg == ACK_BEATS_B - 8'd1 : beat_reg == RESP_BEATS_B - 8'd1;
wire [15:0] frame_len = rq_ack ? 16'd64 : 16'd128 + RECORD_BYTES;

reg [511:0] hdr;
reg [511:0] desc;

// byte swaps: a big-endian field of the frame, placed at its byte offset
// on the little-endian bus (byte 0 in bits 7:0)
function [15:0] be16(input [15:0] v);
    be16 = {v[7:0], v[15:8]};
endfunction

function [31:0] be32(input [31:0] v);
    be32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction

function [47:0] be48(input [47:0] v);
    be48 = {v[7:0], v[15:8], v[23:16], v[31:24], v[39:32], v[47:40]};
endfunction

always @* begin
    hdr = 512'd0;
    hdr[0*8 +: 48] = be48(c_eth);
    hdr[6*8 +: 48] = be48(switch_mac);
    hdr[12*8 +: 16] = be16(NRL_ETHERTYPE_IPV4);
    hdr[14*8 +: 16] = be16({NRL_IPV4_VER_IHL, 8'h00});
    hdr[16*8 +: 16] = be16(frame_len - 16'd14);
    hdr[20*8 +: 16] = be16(NRL_IP_FLAGS_DF);
    hdr[22*8 +: 16] = be16({NRL_IP_TTL, NRL_IP_PROTO_UDP});
    hdr[24*8 +: 16] = be16(c_csum);
    hdr[26*8 +: 32] = be32(switch_ip);
    hdr[30*8 +: 32] = be32(c_ip);
    hdr[34*8 +: 16] = be16(udp_port);
    hdr[36*8 +: 16] = be16(c_udp);
    hdr[38*8 +: 16] = be16(frame_len - 16'd34);
    hdr[42*8 +: 8] = NRL_VERSION;
    hdr[43*8 +: 8] = rq_ack ? NRL_OP_PUSH_ACK : NRL_OP_SAMPLE_RESP;
    hdr[44*8 +: 8] = NRL_FLAG_FROM_SWITCH;
    hdr[45*8 +: 8] = job_id;
    hdr[46*8 +: 16] = be16({13'd0, c_w});
    hdr[50*8 +: 32] = be32(c_seq);
    hdr[54*8 +: 16] = be16(rq_ack ? {8'd0, c_count} : 16'd1);
    hdr[56*8 +: 32] = be32(rq_ack ? {{32-INDEX_W{1'b0}}, rq_index} : {26'd0, rq_i});

    desc = 512'd0;
    desc[0 +: 32] = {{32-INDEX_W{1'b0}}, rq_index};
    desc[32 +: 32] = rq_prio;
    desc[64 +: 64] = {{64-SUM_W{1'b0}}, c_total};
    desc[128 +: 32] = {24'd0, c_count};
    desc[160 +: 32] = {{31-INDEX_W{1'b0}}, c_size};
end

// verilator lint_off UNUSEDSIGNAL
wire [7:0] rec_beat = beat_reg - REC_START_B;
wire [7:0] desc_beat = beat_reg - HDR_BEATS_B;
// verilator lint_on UNUSEDSIGNAL
// which half of the 64-byte header / descriptor a 256-bit beat carries
wire hdr_half = HDR_BEATS == 2 ? beat_reg[0] : 1'b0;
wire desc_half = HDR_BEATS == 2 ? desc_beat[0] : 1'b0;
wire gen_go = rq_valid && gen_credit;

always @* begin
    beat_next = beat_reg;
    rq_pop = 1'b0;
    ctx_free = 1'b0;
    stat_tx_ack = 1'b0;
    stat_tx_resp = 1'b0;
    rec_ra = {rq_index, rec_beat[REC_BEAT_W-1:0]};
    if (gen_go) begin
        if (beat_is_last) begin
            beat_next = 8'd0;
            rq_pop = 1'b1;
            ctx_free = rq_last;
            stat_tx_ack = rq_ack;
            stat_tx_resp = !rq_ack;
        end else begin
            beat_next = beat_reg + 1'b1;
        end
    end
end

always @(posedge clk) begin
    beat_reg <= beat_next;
    g1_v_reg <= gen_go;
    g1_rec_reg <= beat_reg >= REC_START_B;
    g1_last_reg <= beat_is_last;
    g1_data_reg <= beat_reg < HDR_BEATS_B ? hdr[hdr_half*DATA_WIDTH +: DATA_WIDTH] :
                   desc[desc_half*DATA_WIDTH +: DATA_WIDTH];
    g1_user_reg <= {c_port, 8'd0, frame_len};
    out_used_reg <= out_used_reg + {{OUT_ADDR_W+1{1'b0}}, gen_go} -
                    {{OUT_ADDR_W+1{1'b0}}, m_axis_tvalid && m_axis_tready};
    if (rst) begin
        beat_reg <= 8'd0;
        g1_v_reg <= 1'b0;
        out_used_reg <= {OUT_ADDR_W+2{1'b0}};
    end
end

wire [DATA_WIDTH+32:0] out_data;
wire out_in_ready;

nrl_fifo #(
    .WIDTH(DATA_WIDTH + 33),
    .ADDR_WIDTH(OUT_ADDR_W)
)
out_inst (
    .clk(clk),
    .rst(rst),
    .in_data({g1_last_reg, g1_user_reg, g1_rec_reg ? rec_rd_reg : g1_data_reg}),
    .in_valid(g1_v_reg),
    .in_ready(out_in_ready),
    .out_data(out_data),
    .out_valid(m_axis_tvalid),
    .out_ready(m_axis_tready),
    .count(out_count)
);

assign m_axis_tdata = out_data[DATA_WIDTH-1:0];
assign m_axis_tkeep = {KEEP_WIDTH{1'b1}};
assign m_axis_tlast = out_data[DATA_WIDTH+32];
assign m_axis_tuser = {{USER_WIDTH-32{1'b0}}, out_data[DATA_WIDTH +: 32]};

// ---------------------------------------------------------------------------
// counters

assign cnt_inc = {tu_v_reg && tu_bad, stat_empty, stat_drop, stat_tx_resp, stat_tx_ack,
                  stat_rx_update, stat_rx_sample, stat_rx_push};

// verilator lint_off UNUSEDSIGNAL
wire unused_ok = out_in_ready | rq_in_ready | (|rq_count) | (|out_count);
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
