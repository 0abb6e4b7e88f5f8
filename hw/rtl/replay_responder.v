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
 * Replay engine responder: builds the PUSH_ACK and SAMPLE_RESP frames.
 *
 * Takes the head of the response queue (one entry per PUSH_ACK or
 * NOT_YET, pushed by replay_executor, and per sample or stack position,
 * pushed by replay_stack) and issues one beat per clock:
 *
 *   PUSH_ACK     the 64-byte header (count = the records written, index =
 *                the first slot written)
 *   SAMPLE_RESP  the 64-byte header, the 64-byte descriptor (index,
 *                priority, total, batch, size; for a stacked sample also
 *                stack = k, pos, valid) and the record, read from the
 *                record memory; a stack position whose chain broke (brk)
 *                has index NO_INDEX, valid 0 and an all-zero record
 *   NOT_YET      the 64-byte header of a PUSH_ACK or SAMPLE_RESP with flag
 *                NOT_YET, count 0, slot = the reason, aux = size (an ack
 *                entry with i[5] set: i[4] sample, i[1:0] reason, prio size)
 *
 * Addresses, ports, seq, the IPv4 checksum and the request's job (its
 * JOB_ID, its SAMPLE_RESP's length and last beat from the job's record
 * size, its table's index mask: a descriptor's index is the record's in
 * its table) come from the request context the entry names (ctx_raddr,
 * read combinationally); the switch's own MAC, IP and UDP port from the
 * registers. Byte order on the bus
 * is little endian (frame byte 0 in bits 7:0).
 *
 * Pipeline: the header and descriptor beats are formed from the queue head
 * in G1 while the record memory read (rec_raddr, data REC_RD_LAT clocks
 * later on rec_rdata) runs alongside; G1, delayed by REC_RD_LAT - 1 more
 * register stages to meet the record data, then enters the output FIFO
 * (nrl_fifo, 16 beats). Beats are issued only with room in the output FIFO
 * (a registered credit count), so m_axis_tready backpressure stops the
 * responder without a combinational path to the queue. When a frame's last
 * beat is issued the entry is popped (rq_pop) and, at a request's last
 * entry, its context released (ctx_free).
 *
 * Response queue entry and request context: see replay_egress.
 * TUSER[31:24] = the requester's ingress port, TUSER[15:0] = frame length.
 * m_axis_tzero: the frame's record beats are zeros (a broken stack position;
 * with an external record store, replay_rec_store_axi has no data for it).
 */
module replay_responder #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64, at most 8192)
    parameter RECORD_BYTES = 128,
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Clocks from rec_raddr to its data on rec_rdata (1: a registered block RAM
    // read; 3 with registered, replicated addresses and an output register)
    parameter REC_RD_LAT = 1,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Width of sums, 32 + log2(C) (computed; do not override)
    parameter SUM_W = 32 + INDEX_W,
    // Record memory address width (computed; do not override)
    parameter REC_ADDR_W = INDEX_W + (RECORD_BYTES > DATA_WIDTH/8 ? $clog2(RECORD_BYTES*8/DATA_WIDTH) : 1),
    // Width of a request context (computed; do not override)
    parameter CTX_WIDTH = JW + 8 + 16 + 12 + INDEX_W + 48 + 32 + 16 + 8 + 3 + 32 + 16 + 8 + SUM_W + (INDEX_W+1),
    // Width of a response queue entry (computed; do not override)
    parameter RESP_ENTRY_W = 1 + 1 + CTX_TAG_W + 8 + 6 + INDEX_W + 32
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * Configuration
     */
    input  wire [15:0]              udp_port,
    input  wire [31:0]              switch_ip,
    input  wire [47:0]              switch_mac,

    /*
     * Response queue head
     */
    input  wire [RESP_ENTRY_W-1:0]  rq_data,
    input  wire                     rq_valid,
    output wire                     rq_pop,

    /*
     * Request contexts: read port (combinational), release
     */
    output wire [CTX_TAG_W-1:0]     ctx_raddr,
    input  wire [CTX_WIDTH-1:0]     ctx_rdata,
    output wire                     ctx_free,

    /*
     * Record memory read port (data REC_RD_LAT clocks after the address)
     */
    output wire [REC_ADDR_W-1:0]    rec_raddr,
    input  wire [DATA_WIDTH-1:0]    rec_rdata,

    /*
     * Replies out
     */
    output wire [DATA_WIDTH-1:0]    m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]    m_axis_tkeep,
    output wire                     m_axis_tvalid,
    input  wire                     m_axis_tready,
    output wire                     m_axis_tlast,
    output wire [USER_WIDTH-1:0]    m_axis_tuser,
    output wire                     m_axis_tzero,

    /*
     * Counter pulses
     */
    output wire                     stat_tx_ack,
    output wire                     stat_tx_resp,
    output wire                     stat_tx_push_ny,
    output wire                     stat_tx_sample_ny,
    output wire [JW-1:0]            stat_job  // the job of the frame the pulses count
);

localparam BEAT_BYTES = KEEP_WIDTH;
localparam HDR_BEATS = 64 / BEAT_BYTES;
localparam REC_BEAT_W = REC_ADDR_W - INDEX_W;
localparam OUT_ADDR_W = 4;
localparam BEAT_CNT_W = 12;  // beats of a frame: (128 + 8192) / 32 = 260 at most

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"  // frame and header constants of the replies
// verilator lint_on UNUSEDPARAM
`include "replay_ctx.vh"    // CX_*: the request context's fields

localparam REC_START = 2*HDR_BEATS;
localparam [BEAT_CNT_W-1:0] ACK_BEATS_B = HDR_BEATS[BEAT_CNT_W-1:0];
localparam [BEAT_CNT_W-1:0] HDR_BEATS_B = HDR_BEATS[BEAT_CNT_W-1:0];
localparam [BEAT_CNT_W-1:0] REC_START_B = REC_START[BEAT_CNT_W-1:0];
localparam [BEAT_CNT_W-1:0] BEAT_ONE = 1;

initial begin
    if (CTX_WIDTH != CX_W_ALL) begin
        $error("Error: CTX_WIDTH must be the request context's width, replay_ctx.vh (instance %m)");
        $finish;
    end
    if (REC_RD_LAT < 1 || REC_RD_LAT > 8) begin
        $error("Error: REC_RD_LAT must be 1 .. 8 (instance %m)");
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
end

reg rq_pop_int;
reg ctx_free_int;
reg stat_tx_ack_int;
reg stat_tx_resp_int;
reg stat_tx_push_ny_int;
reg stat_tx_sample_ny_int;
reg [REC_ADDR_W-1:0] rec_ra;

assign rq_pop = rq_pop_int;
assign ctx_free = ctx_free_int;
assign stat_tx_ack = stat_tx_ack_int;
assign stat_tx_resp = stat_tx_resp_int;
assign stat_tx_push_ny = stat_tx_push_ny_int;
assign stat_tx_sample_ny = stat_tx_sample_ny_int;
assign rec_raddr = rec_ra;

// ---------------------------------------------------------------------------
// queue head and its request context

wire rq_ack = rq_data[RESP_ENTRY_W-1];
wire rq_last = rq_data[RESP_ENTRY_W-2];
wire [CTX_TAG_W-1:0] rq_tag = rq_data[RESP_ENTRY_W-3 -: CTX_TAG_W];
wire [5:0] rq_i = rq_data[32+INDEX_W +: 6];
wire rq_brk = rq_data[38+INDEX_W];              // a stack position whose chain broke
wire [2:0] rq_pos = rq_data[39+INDEX_W +: 3];   // its position j
wire [3:0] rq_stk = rq_data[42+INDEX_W +: 4];   // the stack depth k (0: not stacked)
wire [INDEX_W-1:0] rq_index = rq_data[32 +: INDEX_W];
wire [31:0] rq_prio = rq_data[31:0];
wire rq_ny = rq_ack && rq_i[5];        // a NOT_YET answer (header only)
wire rq_ny_smp = rq_i[4];              // ... to a SAMPLE_REQ
wire [1:0] rq_reason = rq_i[1:0];

assign ctx_raddr = rq_tag;

wire [INDEX_W:0] c_size = ctx_rdata[CX_SIZE +: INDEX_W+1];
wire [SUM_W-1:0] c_total = ctx_rdata[CX_TOTAL +: SUM_W];
wire [7:0] c_count = ctx_rdata[CX_COUNT +: 8];
wire [15:0] c_csum = ctx_rdata[CX_CSUM +: 16];
wire [31:0] c_seq = ctx_rdata[CX_SEQ +: 32];
wire [2:0] c_w = ctx_rdata[CX_W +: 3];
wire [7:0] c_port = ctx_rdata[CX_PORT +: 8];
wire [15:0] c_udp = ctx_rdata[CX_UDP +: 16];
wire [31:0] c_ip = ctx_rdata[CX_IP +: 32];
wire [47:0] c_eth = ctx_rdata[CX_ETH +: 48];
wire [INDEX_W-1:0] c_mask = ctx_rdata[CX_MASK +: INDEX_W];
wire [BEAT_CNT_W-1:0] c_resp_last = ctx_rdata[CX_RLAST +: 12];
wire [15:0] c_resp_len = ctx_rdata[CX_RLEN +: 16];
wire [7:0] c_jid = ctx_rdata[CX_JID +: 8];
assign stat_job = ctx_rdata[CX_JOB +: JW];

// ---------------------------------------------------------------------------
// beat generation (G1) and output FIFO

wire [OUT_ADDR_W+1:0] out_count;
reg [BEAT_CNT_W-1:0] beat_reg, beat_next;
reg g1_v_reg;
reg g1_rec_reg;
reg g1_last_reg;
reg g1_zero_reg;
reg [DATA_WIDTH-1:0] g1_data_reg;
reg [31:0] g1_user_reg;

// beats issued and not yet taken by m_axis (in G1 or in the output FIFO), registered so the
// credit check is one compare
reg [OUT_ADDR_W+1:0] out_used_reg;
localparam [OUT_ADDR_W+1:0] OUT_LIMIT = (2**OUT_ADDR_W) - 2;
wire gen_credit = out_used_reg < OUT_LIMIT;
// last beat of the frame: compared against each constant, then selected, so
// no subtract/compare carry chain sits between the queue head and rq_pop
// a SAMPLE_RESP's last beat is the job's, from the context: compared a clock ahead, for the
// beat after the one issued (a SAMPLE_RESP's first beat is never its last: it has at least
// three), so no compare sits between the context read and rq_pop / ctx_free
reg resp_last_hit_reg;
wire beat_is_last = rq_ack ? beat_reg == ACK_BEATS_B - BEAT_ONE : resp_last_hit_reg;
// frame, IPv4 and UDP lengths
localparam [15:0] ACK_LEN = 16'd64;
wire [15:0] frame_len = rq_ack ? ACK_LEN : c_resp_len;
wire [15:0] ip_len = frame_len - 16'd14;
wire [15:0] udp_len = frame_len - 16'd34;

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
    hdr[16*8 +: 16] = be16(ip_len);
    hdr[20*8 +: 16] = be16(NRL_IP_FLAGS_DF);
    hdr[22*8 +: 16] = be16({NRL_IP_TTL, NRL_IP_PROTO_UDP});
    hdr[24*8 +: 16] = be16(c_csum);
    hdr[26*8 +: 32] = be32(switch_ip);
    hdr[30*8 +: 32] = be32(c_ip);
    hdr[34*8 +: 16] = be16(udp_port);
    hdr[36*8 +: 16] = be16(c_udp);
    hdr[38*8 +: 16] = be16(udp_len);
    hdr[42*8 +: 8] = NRL_VERSION;
    hdr[43*8 +: 8] = rq_ack && !(rq_ny && rq_ny_smp) ? NRL_OP_PUSH_ACK : NRL_OP_SAMPLE_RESP;
    hdr[44*8 +: 8] = rq_ny ? NRL_FLAG_FROM_SWITCH | NRL_FLAG_NOT_YET : NRL_FLAG_FROM_SWITCH;
    hdr[45*8 +: 8] = c_jid;
    hdr[46*8 +: 16] = be16({13'd0, c_w});
    hdr[48*8 +: 16] = be16({14'd0, rq_ny ? rq_reason : 2'd0});
    hdr[50*8 +: 32] = be32(c_seq);
    hdr[54*8 +: 16] = be16(rq_ny ? 16'd0 : rq_ack ? {8'd0, c_count} : 16'd1);
    hdr[56*8 +: 32] = be32(rq_ny ? rq_prio : rq_ack ? {{32-INDEX_W{1'b0}}, rq_index} : {26'd0, rq_i});

    desc = 512'd0;
    desc[0 +: 32] = rq_brk ? NRL_NO_INDEX : {{32-INDEX_W{1'b0}}, rq_index & c_mask};
    desc[32 +: 32] = rq_prio;
    desc[64 +: 64] = {{64-SUM_W{1'b0}}, c_total};
    desc[128 +: 32] = {24'd0, c_count};
    desc[160 +: 32] = {{31-INDEX_W{1'b0}}, c_size};
    desc[NRL_DESC_STACK*8 +: 32] = {28'd0, rq_stk};
    desc[NRL_DESC_POS*8 +: 32] = {29'd0, rq_pos};
    desc[NRL_DESC_VALID*8 +: 32] = {31'd0, rq_stk != 4'd0 && !rq_brk};
end

// verilator lint_off UNUSEDSIGNAL
wire [BEAT_CNT_W-1:0] rec_beat = beat_reg - REC_START_B;
wire [BEAT_CNT_W-1:0] desc_beat = beat_reg - HDR_BEATS_B;
// verilator lint_on UNUSEDSIGNAL
// which half of the 64-byte header / descriptor a 256-bit beat carries
wire hdr_half = HDR_BEATS == 2 ? beat_reg[0] : 1'b0;
wire desc_half = HDR_BEATS == 2 ? desc_beat[0] : 1'b0;
wire gen_go = rq_valid && gen_credit;

always @* begin
    beat_next = beat_reg;
    rq_pop_int = 1'b0;
    ctx_free_int = 1'b0;
    stat_tx_ack_int = 1'b0;
    stat_tx_resp_int = 1'b0;
    stat_tx_push_ny_int = 1'b0;
    stat_tx_sample_ny_int = 1'b0;
    rec_ra = {rq_index, rec_beat[REC_BEAT_W-1:0]};
    if (gen_go) begin
        if (beat_is_last) begin
            beat_next = {BEAT_CNT_W{1'b0}};
            rq_pop_int = 1'b1;
            ctx_free_int = rq_last;
            stat_tx_ack_int = rq_ack && !rq_ny;
            stat_tx_resp_int = !rq_ack;
            stat_tx_push_ny_int = rq_ny && !rq_ny_smp;
            stat_tx_sample_ny_int = rq_ny && rq_ny_smp;
        end else begin
            beat_next = beat_reg + 1'b1;
        end
    end
end

always @(posedge clk) begin
    beat_reg <= beat_next;
    if (gen_go) begin
        // (after a frame's last beat beat_next is 0, below any SAMPLE_RESP's last: false)
        resp_last_hit_reg <= beat_next == c_resp_last;
    end
    g1_v_reg <= gen_go;
    g1_rec_reg <= beat_reg >= REC_START_B;
    g1_last_reg <= beat_is_last;
    g1_zero_reg <= rq_brk && !rq_ack;
    g1_data_reg <= beat_reg < HDR_BEATS_B ? hdr[hdr_half*DATA_WIDTH +: DATA_WIDTH] :
                   desc[desc_half*DATA_WIDTH +: DATA_WIDTH];
    g1_user_reg <= {c_port, 8'd0, frame_len};
    out_used_reg <= out_used_reg + {{OUT_ADDR_W+1{1'b0}}, gen_go} -
                    {{OUT_ADDR_W+1{1'b0}}, m_axis_tvalid && m_axis_tready};
    if (rst) begin
        beat_reg <= {BEAT_CNT_W{1'b0}};
        resp_last_hit_reg <= 1'b0;
        g1_v_reg <= 1'b0;
        out_used_reg <= {OUT_ADDR_W+2{1'b0}};
    end
end

// G1 delayed to meet the record data: zero record, valid, last, user, record beat, data
localparam G_W = 1 + 1 + 32 + 1 + DATA_WIDTH;
wire g_v;
wire [G_W-1:0] g_bus;

generate
if (REC_RD_LAT > 1) begin : g_rd_delay
    reg [REC_RD_LAT-2:0] dly_v_reg;
    reg [G_W-1:0] dly_reg[REC_RD_LAT-2:0];
    integer k;

    always @(posedge clk) begin
        dly_v_reg[0] <= g1_v_reg;
        dly_reg[0] <= {g1_zero_reg, g1_last_reg, g1_user_reg, g1_rec_reg, g1_data_reg};
        for (k = 1; k < REC_RD_LAT - 1; k = k + 1) begin
            dly_v_reg[k] <= dly_v_reg[k-1];
            dly_reg[k] <= dly_reg[k-1];
        end
        if (rst) begin
            dly_v_reg <= {REC_RD_LAT-1{1'b0}};
        end
    end

    assign g_v = dly_v_reg[REC_RD_LAT-2];
    assign g_bus = dly_reg[REC_RD_LAT-2];
end else begin : g_rd_direct
    assign g_v = g1_v_reg;
    assign g_bus = {g1_zero_reg, g1_last_reg, g1_user_reg, g1_rec_reg, g1_data_reg};
end
endgenerate

wire g_rec = g_bus[DATA_WIDTH];
wire g_zero = g_bus[G_W-1];

wire [DATA_WIDTH+33:0] out_data;
wire out_in_ready;

nrl_fifo #(
    .WIDTH(DATA_WIDTH + 34),
    .ADDR_WIDTH(OUT_ADDR_W)
)
out_inst (
    .clk(clk),
    .rst(rst),
    .in_data({g_bus[G_W-1 -: 34], g_rec ? (g_zero ? {DATA_WIDTH{1'b0}} : rec_rdata) : g_bus[DATA_WIDTH-1:0]}),
    .in_valid(g_v),
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
assign m_axis_tzero = out_data[DATA_WIDTH+33];

// verilator lint_off UNUSEDSIGNAL
wire unused_ok = out_in_ready | (|out_count);
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
