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
 * Replay engine ingress: header capture, request checks and queues.
 *
 * Takes the replay protocol frames (opcodes 3..7) at one beat per clock.
 * The first 64 bytes (one 512-bit beat or two 256-bit beats) are captured;
 * every later beat (the payload) goes straight into the payload FIFO, at
 * most MAX_PL_BEATS of them per frame. At the last beat the header and the
 * frame length (TUSER[15:0], as docs/protocol.md section 6 says) enter a
 * six-stage check pipeline that evaluates the checks of section 6 in their
 * order (BAD_LENGTH, BAD_HEADER, BAD_JOB, DISABLED, UNKNOWN_WORKER,
 * SPOOFED, BAD_COUNT, payload BAD_LENGTH) and the IPv4 checksum of the
 * reply, then pushes one meta entry per frame, accepted or not, so the
 * executor can skip a dropped frame's payload beats. A frame whose beat
 * count disagrees with its TUSER length is dropped as BAD_LENGTH. Checks
 * 1 and 2 and the beat count are made by nrl_hdr_check (hdr_check_inst).
 *
 * The pipeline takes one frame per clock, so back-to-back minimum-size
 * requests flow without bubbles; s_axis_tready only falls when the payload
 * FIFO is full or the meta FIFO could not absorb the frames in flight.
 *
 * Jobs (docs/protocol.md section 11): replay_job looks up the frame's job
 * between stage 0 and stage 1 (two clocks); the member checks read the
 * job's member table, a job without a table (JOB_RPL_CAP = 0) is DISABLED,
 * a PUSH's length and the SAMPLE_RESP's checksum take the job's record
 * size, and the meta entry carries the job's values.
 *
 * Meta entry: replay_meta.vh (its fields, LSB first). stk is a SAMPLE_REQ's stack depth
 * k (aux) when 2 <= k <= MAX_STACK, else 0 (k = 0 or 1: one record per
 * sample); a SAMPLE_REQ with aux > MAX_STACK is dropped as BAD_COUNT.
 */
module replay_ingress #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // Record size R in bytes (multiple of 64, at most 8192)
    parameter RECORD_BYTES = 128,
    // log2 of the payload FIFO depth in beats
    parameter PL_ADDR_WIDTH = 8,
    // log2 of the meta FIFO depth in frames
    parameter META_ADDR_WIDTH = 5,
    // log2(C), the width of a record index
    parameter INDEX_W = 14,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the meta entry (computed; do not override)
    parameter META_WIDTH = JW + 8 + 8 + 5 + INDEX_W + 1 + 16 + 4 + 2 + 1 + 3 + 32 + 8 + 48 + 32 + 16 + 8 + $clog2((64 + 16*RECORD_BYTES)/(DATA_WIDTH/8) + 1)
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Replay protocol frames in
     */
    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]   s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    // verilator lint_off UNUSEDSIGNAL
    input  wire [USER_WIDTH-1:0]   s_axis_tuser,
    // verilator lint_on UNUSEDSIGNAL

    /*
     * Configuration
     */
    input  wire                    rpl_enable,
    input  wire [31:0]             switch_ip,
    // every job's word (replay_job.vh) and enable bit
    input  wire [JOBS*511-1:0]     jobs_word,
    input  wire [JOBS-1:0]         job_enable,

    /*
     * Payload beats out (executor)
     */
    output wire [DATA_WIDTH-1:0]   pl_data,
    output wire                    pl_valid,
    input  wire                    pl_ready,

    /*
     * Meta entries out (executor)
     */
    output wire [META_WIDTH-1:0]   meta_data,
    output wire                    meta_valid,
    input  wire                    meta_ready,

    /*
     * Counter pulses
     */
    output wire                    stat_rx_push,
    output wire                    stat_rx_sample,
    output wire                    stat_rx_update,
    // one-hot: BAD_LENGTH, BAD_HEADER, BAD_JOB, DISABLED, UNKNOWN_WORKER, SPOOFED, BAD_COUNT
    output wire [6:0]              stat_drop,
    // the frame's job (0 when it names none)
    output wire [JW-1:0]           stat_job
);

localparam BEAT_BYTES = KEEP_WIDTH;
localparam HDR_BEATS = 64 / BEAT_BYTES;
// payload beats of the largest PUSH: 16 records, or what a 65535-byte frame holds
// (TUSER[15:0]; R > 4088)
localparam PL_BYTES_16 = 64 + 16*RECORD_BYTES;
localparam MAX_PL_BEATS = (PL_BYTES_16 < 65535 - 64 ? PL_BYTES_16 : 65535 - 64 + BEAT_BYTES - 1) / BEAT_BYTES;
localparam PAY_BEATS_W = $clog2((64 + 16*RECORD_BYTES) / BEAT_BYTES + 1);
localparam BEAT_W = 12;
localparam [PAY_BEATS_W-1:0] MAX_PAY_BEATS_CNT = MAX_PL_BEATS[PAY_BEATS_W-1:0];

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
`include "replay_job.vh"
localparam PL_BEATS_W = PAY_BEATS_W;
`include "replay_meta.vh"  // the entry this module writes (meta_push_data)
// verilator lint_on UNUSEDPARAM

// frame byte offsets of the Ethernet and IPv4 fields the member checks and the replies read
localparam OFF_ETH_SRC = 6;                     // Ethernet source address
localparam OFF_IP_SRC = NRL_IP_OFFSET + 12;     // IPv4 source address
// the payload offset and the count limits as 16-bit values
localparam [15:0] LEN_PAYLOAD = NRL_PAYLOAD_OFFSET[15:0];  // frame bytes before the payload
localparam [15:0] LEN_BLOCK = NRL_BLOCK[15:0];             // PUSH priority block
localparam [15:0] MAX_PUSH16 = NRL_MAX_PUSH_RECORDS[15:0];
localparam [15:0] MAX_BATCH16 = NRL_MAX_BATCH[15:0];
localparam [15:0] MAX_PAIRS16 = NRL_MAX_UPDATE_PAIRS[15:0];

// IPv4 total lengths of the replies: PUSH_ACK (64 bytes), SAMPLE_RESP (128 + R)
// (the fixed words: version/IHL, flags DF, TTL/protocol UDP)
localparam [16:0] CSUM_FIXED = {1'b0, NRL_IPV4_VER_IHL, 8'h00} + {1'b0, NRL_IP_FLAGS_DF} +
                               {1'b0, NRL_IP_TTL, NRL_IP_PROTO_UDP};
localparam [16:0] CSUM_K_ACK = CSUM_FIXED + 17'd50;
// plus the job's record size
localparam [16:0] CSUM_K_RESP0 = CSUM_FIXED + 17'd114;

initial begin
    if (META_WIDTH != MO_W_ALL) begin
        $error("Error: META_WIDTH must be replay_meta.vh's entry width (instance %m)");
        $finish;
    end
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end
    if (RECORD_BYTES < 64 || RECORD_BYTES % 64 != 0 || RECORD_BYTES > 8192) begin
        $error("Error: RECORD_BYTES must be a multiple of 64 in 64..8192 (instance %m)");
        $finish;
    end
    if (2**PL_ADDR_WIDTH < MAX_PL_BEATS) begin
        $error("Error: payload FIFO must hold a largest PUSH payload (instance %m)");
        $finish;
    end
    if (META_ADDR_WIDTH < 4) begin
        $error("Error: META_ADDR_WIDTH must be at least 4 (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// queues

wire pl_in_ready;
wire [PL_ADDR_WIDTH+1:0] pl_count;
wire [META_ADDR_WIDTH+1:0] meta_count;
wire meta_in_ready;

reg meta_push;
reg [META_WIDTH-1:0] meta_push_data;

// frames that may still be pushed: 8 pipeline stages (the job lookup's two and the
// checks' six), the one arriving and one more because the room flag is a clock old
reg meta_room_reg;
// and room for one more payload beat: at most one is written per clock, so a flag one
// clock old that says "two free" is safe
reg pl_room_reg;
assign s_axis_tready = pl_room_reg && meta_room_reg;

always @(posedge clk) begin
    meta_room_reg <= meta_count <= (2**META_ADDR_WIDTH) - 12;
    pl_room_reg <= pl_count <= (2**PL_ADDR_WIDTH) - 2;
    if (rst) begin
        meta_room_reg <= 1'b0;
        pl_room_reg <= 1'b0;
    end
end

wire in_fire = s_axis_tvalid && s_axis_tready;

reg [BEAT_W-1:0] beat_reg;
reg [PAY_BEATS_W-1:0] plb_reg;
reg [15:0] len_reg;
reg [7:0] port_reg;
reg [511:0] hdr_reg;

// the next input beat is a payload beat with room in its frame's share (registered)
reg pl_slot_reg;
wire pl_write = in_fire && pl_slot_reg;

nrl_fifo #(
    .WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(PL_ADDR_WIDTH)
)
pl_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data(s_axis_tdata),
    .in_valid(pl_write),
    .in_ready(pl_in_ready),
    .out_data(pl_data),
    .out_valid(pl_valid),
    .out_ready(pl_ready),
    .count(pl_count)
);

nrl_fifo #(
    .WIDTH(META_WIDTH),
    .ADDR_WIDTH(META_ADDR_WIDTH)
)
meta_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data(meta_push_data),
    .in_valid(meta_push),
    .in_ready(meta_in_ready),
    .out_data(meta_data),
    .out_valid(meta_valid),
    .out_ready(meta_ready),
    .count(meta_count)
);

// ---------------------------------------------------------------------------
// header capture

reg [DATA_WIDTH-1:0] tdata_m;
reg [511:0] hdr_view;
wire [31:0] beat32 = {{32-BEAT_W{1'b0}}, beat_reg};
integer k;

always @* begin
    for (k = 0; k < BEAT_BYTES; k = k + 1) begin
        tdata_m[k*8 +: 8] = s_axis_tkeep[k] ? s_axis_tdata[k*8 +: 8] : 8'd0;
    end
    for (k = 0; k < HDR_BEATS; k = k + 1) begin
        if (beat32 == k) begin
            hdr_view[k*DATA_WIDTH +: DATA_WIDTH] = tdata_m;
        end else if (beat32 > k) begin
            hdr_view[k*DATA_WIDTH +: DATA_WIDTH] = hdr_reg[k*DATA_WIDTH +: DATA_WIDTH];
        end else begin
            hdr_view[k*DATA_WIDTH +: DATA_WIDTH] = {DATA_WIDTH{1'b0}};
        end
    end
end

// byte k of the header view
function [7:0] hb(input integer i);
    hb = hdr_view[i*8 +: 8];
endfunction

wire first = beat_reg == 0;
wire [15:0] len_now = first ? s_axis_tuser[15:0] : len_reg;
wire [7:0] port_now = first ? s_axis_tuser[23:16] : port_reg;
wire [PAY_BEATS_W-1:0] plb_now = plb_reg + {{PAY_BEATS_W-1{1'b0}}, pl_write};

// beats of the frame, at its last beat
wire [BEAT_W-1:0] nbeats_now = beat_reg + 1'b1;

// the length and header checks 1 and 2 of section 6 (and the beat count), on the
// header view and length of the last beat: flags for stage 2
wire rx2q, len_bad2q, hdr_bad2q;

nrl_hdr_check #(
    .DATA_WIDTH(DATA_WIDTH),
    .REPLAY(1),
    .CHECK_BEATS(1),
    .IN_REG(1)
)
hdr_check_inst (
    .clk(clk),
    .hdr(hdr_view),
    .frame_len(len_now),
    .frame_beats(nbeats_now),
    .rx(rx2q),
    .bad_length(len_bad2q),
    .bad_header(hdr_bad2q)
);

// stage 0 registers (loaded at the last beat)
reg v0_reg;
reg [15:0] n0_reg, udpsrc0_reg, count0_reg;
reg [31:0] ipsrc0_reg, seq0_reg;
reg [47:0] ethsrc0_reg;
reg [7:0] op0_reg, job0_reg, port0_reg;
reg prio0_reg;  // flags.PRIORITIZED
reg [15:0] worker0_reg;
reg [PAY_BEATS_W-1:0] plb0_reg;
reg [31:0] aux0_reg;

always @(posedge clk) begin
    if (in_fire) begin
        for (k = 0; k < HDR_BEATS; k = k + 1) begin
            if (beat32 == k) begin
                hdr_reg[k*DATA_WIDTH +: DATA_WIDTH] <= tdata_m;
            end
        end
        if (first) begin
            len_reg <= s_axis_tuser[15:0];
            port_reg <= s_axis_tuser[23:16];
        end
        pl_slot_reg <= !s_axis_tlast && (HDR_BEATS == 1 || beat_reg != 0) && plb_now < MAX_PAY_BEATS_CNT;
        if (s_axis_tlast) begin
            beat_reg <= {BEAT_W{1'b0}};
            plb_reg <= {PAY_BEATS_W{1'b0}};
        end else begin
            if (beat_reg != {BEAT_W{1'b1}}) begin
                beat_reg <= beat_reg + 1'b1;
            end
            plb_reg <= plb_now;
        end
    end

    v0_reg <= in_fire && s_axis_tlast;
    n0_reg <= len_now;
    port0_reg <= port_now;
    plb0_reg <= plb_now;
    ethsrc0_reg <= {hb(OFF_ETH_SRC), hb(OFF_ETH_SRC+1), hb(OFF_ETH_SRC+2),
                    hb(OFF_ETH_SRC+3), hb(OFF_ETH_SRC+4), hb(OFF_ETH_SRC+5)};
    ipsrc0_reg <= {hb(OFF_IP_SRC), hb(OFF_IP_SRC+1), hb(OFF_IP_SRC+2), hb(OFF_IP_SRC+3)};
    udpsrc0_reg <= {hb(NRL_UDP_OFFSET), hb(NRL_UDP_OFFSET+1)};
    op0_reg <= hb(NRL_OFF_OPCODE);
    prio0_reg <= |(hb(NRL_OFF_FLAGS) & NRL_FLAG_PRIORITIZED);
    job0_reg <= hb(NRL_OFF_JOB);
    worker0_reg <= {hb(NRL_OFF_WORKER), hb(NRL_OFF_WORKER+1)};
    seq0_reg <= {hb(NRL_OFF_SEQ), hb(NRL_OFF_SEQ+1), hb(NRL_OFF_SEQ+2), hb(NRL_OFF_SEQ+3)};
    count0_reg <= {hb(NRL_OFF_COUNT), hb(NRL_OFF_COUNT+1)};
    aux0_reg <= {hb(NRL_OFF_AUX), hb(NRL_OFF_AUX+1), hb(NRL_OFF_AUX+2), hb(NRL_OFF_AUX+3)};

    if (rst) begin
        beat_reg <= {BEAT_W{1'b0}};
        plb_reg <= {PAY_BEATS_W{1'b0}};
        pl_slot_reg <= 1'b0;
        v0_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------------------
// the frame's job (replay_job): two stages between stage 0 and stage 1; the
// header checks' flags are delayed as much

localparam S0_W = 16 + 16 + 16 + 32 + 32 + 48 + 8 + 8 + 1 + 3 + PAY_BEATS_W + 4 + 7;

wire v0;
wire [S0_W-1:0] s0_bus;
wire j_found0;
wire [JW-1:0] j_idx0;
wire [RJ_W-1:0] jw0;
wire [15:0] n0, udpsrc0, count0;
wire [31:0] ipsrc0, seq0;
wire [2:0] w0;    // the worker's low bits (wbig0: the others)
wire [3:0] aux0;  // aux's low bits (aux_big0, aux_one0: the others)
wire [47:0] ethsrc0;
wire [7:0] op0, port0;
wire prio0;
wire [PAY_BEATS_W-1:0] plb0;
// the count, aux and worker compares, made as the values enter the lookup (flags travel)
wire cz0, cgt_push0, cgt_pairs0, cpow2_0, aux_big0, aux_one0, wbig0;
assign {n0, udpsrc0, count0, ipsrc0, seq0, ethsrc0, op0, port0, prio0, w0, plb0, aux0,
        cz0, cgt_push0, cgt_pairs0, cpow2_0, aux_big0, aux_one0, wbig0} = s0_bus;

replay_job #(
    .JOBS(JOBS),
    .PW(S0_W)
)
job_inst (
    .clk(clk),
    .rst(rst),
    .jobs_word(jobs_word),
    .job_enable(job_enable),
    .in_v(v0_reg),
    .in_job(job0_reg),
    .in_job_ok(n0_reg > NRL_OFF_JOB[15:0]),
    .in_bus({n0_reg, udpsrc0_reg, count0_reg, ipsrc0_reg, seq0_reg, ethsrc0_reg, op0_reg,
             port0_reg, prio0_reg, worker0_reg[2:0], plb0_reg, aux0_reg[3:0],
             count0_reg == 16'd0, count0_reg > MAX_PUSH16, count0_reg > MAX_PAIRS16,
             count0_reg == 16'd1 || count0_reg == 16'd2 || count0_reg == 16'd4 ||
             count0_reg == 16'd8 || count0_reg == 16'd16 || count0_reg == 16'd32 ||
             count0_reg == MAX_BATCH16,
             aux0_reg > NRL_MAX_STACK, aux0_reg[31:1] == 31'd0, worker0_reg[15:3] != 13'd0}),
    .out_v(v0),
    .out_bus(s0_bus),
    .out_found(j_found0),
    .out_job(j_idx0),
    .out_word(jw0)
);

reg [2:0] chk_a_reg, chk_b_reg;
wire rx2, len_bad2, hdr_bad2;
assign {rx2, len_bad2, hdr_bad2} = chk_b_reg;

always @(posedge clk) begin
    chk_a_reg <= {rx2q, len_bad2q, hdr_bad2q};
    chk_b_reg <= chk_a_reg;
end

// ---------------------------------------------------------------------------
// stage 1: field decode, member lookup, partial sums

localparam BUNDLE_W = 4 + 2 + 1 + 3 + 32 + 8 + 48 + 32 + 16 + 8 + PAY_BEATS_W;

wire is_push0 = op0 == NRL_OP_PUSH;
wire is_sample0 = op0 == NRL_OP_SAMPLE_REQ;
wire [1:0] op2_0 = is_push0 ? 2'd0 : (is_sample0 ? 2'd1 : 2'd2);
// verilator lint_off UNUSEDSIGNAL
// the job's member table, its fields sliced first (a variable select on the whole word
// would be a shifter across it)
wire [8*8-1:0] m_port0 = jw0[RJ_PORT +: 64];
wire [8*32-1:0] m_ip0 = jw0[RJ_IP +: 256];
wire [8*16-1:0] m_udp0 = jw0[RJ_UDP +: 128];
wire [8*3-1:0] m_role0 = jw0[RJ_ROLE +: 24];
wire [2:0] role0 = m_role0[w0*3 +: 3];  // bit 0 (aggregation) is not a replay role
// verilator lint_on UNUSEDSIGNAL
wire role_ok0 = is_push0 ? role0[1] : role0[2];
// the stack depth: 2 .. MAX_STACK, 0 for aux 0 or 1 (one record per sample)
wire [3:0] stk0 = is_sample0 && !aux_one0 && !aux_big0 ? aux0 : 4'd0;

reg v1_reg;
// PUSH payload bytes count0 * R, R the job's record size (a count above 16 is
// BAD_COUNT, which precedes the payload length check: its 5 bits suffice)
wire [7:0] rb64_0 = jw0[RJ_RB +: 8];
wire [12:0] prod64_0 = count0[4:0] * rb64_0;  // registered (prod1_reg), then shifted
// the job's values the meta entry carries: index, JOB_ID, record size / 64,
// log2 of the table size, base
localparam MJ_W = JW + 8 + 8 + 5 + INDEX_W;
wire [MJ_W-1:0] mj0 = {j_idx0, jw0[RJ_ID +: 8], rb64_0, jw0[RJ_LCAP +: 5], jw0[RJ_BASE +: INDEX_W]};
reg [MJ_W-1:0] mj1_reg, mj2_reg, mj3_reg, mj4_reg;
reg [JW-1:0] sj5_reg;
reg [16:0] csum_kr1_reg, csum_kr2_reg;  // the SAMPLE_RESP's constant with the job's R
reg [BUNDLE_W-1:0] bundle1_reg;
reg [1:0] op1_reg;
reg job_bad1_reg, dis1_reg, unknown1_reg, cnt_bad1_reg;
reg [15:0] n1_reg, udpsrc1_reg;
reg [15:0] count1_reg;
reg [31:0] ipsrc1_reg;
reg [7:0] port1_reg, mport1_reg;
reg [31:0] mip1_reg;
reg [15:0] mudp1_reg;
reg [16:0] csum_a1_reg, csum_k1_reg;
reg [12:0] prod1_reg;  // count * R / 64

always @(posedge clk) begin
    v1_reg <= v0;
    bundle1_reg <= {stk0, op2_0, prio0, w0, seq0, count0[7:0], ethsrc0,
                    ipsrc0, udpsrc0, port0, plb0};
    op1_reg <= op2_0;
    job_bad1_reg <= !j_found0;
    dis1_reg <= !rpl_enable || jw0[RJ_NOTAB];
    mj1_reg <= mj0;
    csum_kr1_reg <= CSUM_K_RESP0 + {3'd0, rb64_0, 6'd0};
    unknown1_reg <= wbig0 || !role_ok0;
    cnt_bad1_reg <= is_push0 ? (cz0 || cgt_push0) : is_sample0 ? !cpow2_0 || aux_big0 :
                    (cz0 || cgt_pairs0);
    n1_reg <= n0;
    udpsrc1_reg <= udpsrc0;
    count1_reg <= count0;
    ipsrc1_reg <= ipsrc0;
    port1_reg <= port0;
    mport1_reg <= m_port0[w0*8 +: 8];
    mip1_reg <= m_ip0[w0*32 +: 32];
    mudp1_reg <= m_udp0[w0*16 +: 16];
    csum_a1_reg <= {1'b0, ipsrc0[31:16]} + {1'b0, ipsrc0[15:0]};
    csum_k1_reg <= {1'b0, switch_ip[31:16]} + {1'b0, switch_ip[15:0]};
    prod1_reg <= prod64_0;
    if (rst) begin
        v1_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------------------
// stage 2: comparisons

reg v2_reg;
reg [BUNDLE_W-1:0] bundle2_reg;
reg [1:0] op2_reg;
reg job_bad2_reg, dis2_reg, unknown2_reg, cnt_bad2_reg;
// SPOOFED, its three terms registered apart: port, IPv4 address, UDP port
reg sp_port2_reg, sp_ip2_reg, sp_udp2_reg;
reg [15:0] n2_reg;
reg [15:0] exp2_reg;  // frame length the opcode and count imply
reg exp_big2_reg;
reg [17:0] csum_b2_reg;

always @(posedge clk) begin
    v2_reg <= v1_reg;
    bundle2_reg <= bundle1_reg;
    op2_reg <= op1_reg;
    job_bad2_reg <= job_bad1_reg;
    mj2_reg <= mj1_reg;
    csum_kr2_reg <= csum_kr1_reg;
    dis2_reg <= dis1_reg;
    unknown2_reg <= unknown1_reg;
    sp_port2_reg <= (port1_reg & mport1_reg) == 8'd0;
    sp_ip2_reg <= ipsrc1_reg != mip1_reg;
    sp_udp2_reg <= mudp1_reg != 16'd0 && udpsrc1_reg != mudp1_reg;
    cnt_bad2_reg <= cnt_bad1_reg;
    n2_reg <= n1_reg;
    exp2_reg <= op1_reg == 2'd0 ? {prod1_reg[9:0], 6'd0} + (LEN_PAYLOAD + LEN_BLOCK) :
                op1_reg == 2'd1 ? LEN_PAYLOAD :
                {count1_reg[12:0], 3'd0} + LEN_PAYLOAD;
    // count * R + 128 does not fit 16 bits: count * R / 64 >= 1022
    exp_big2_reg <= op1_reg == 2'd0 ? prod1_reg >= 13'd1022 : (op1_reg == 2'd2 && count1_reg[15:13] != 3'd0);
    csum_b2_reg <= {1'b0, csum_a1_reg} + {1'b0, csum_k1_reg};
    if (rst) begin
        v2_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------------------
// stage 3: verdict

reg v3_reg;
reg [BUNDLE_W-1:0] bundle3_reg;
reg rx3_reg;
reg [1:0] op3_reg;
reg [6:0] drop3_reg;
reg [18:0] csum_c3_reg;

wire len2_bad2 = exp_big2_reg || n2_reg != exp2_reg;

always @(posedge clk) begin
    v3_reg <= v2_reg;
    bundle3_reg <= bundle2_reg;
    rx3_reg <= rx2;
    op3_reg <= op2_reg;
    drop3_reg <= 7'd0;
    if (len_bad2) begin
        drop3_reg[0] <= 1'b1;
    end else if (hdr_bad2) begin
        drop3_reg[1] <= 1'b1;
    end else if (job_bad2_reg) begin
        drop3_reg[2] <= 1'b1;
    end else if (dis2_reg) begin
        drop3_reg[3] <= 1'b1;
    end else if (unknown2_reg) begin
        drop3_reg[4] <= 1'b1;
    end else if (sp_port2_reg || sp_ip2_reg || sp_udp2_reg) begin
        drop3_reg[5] <= 1'b1;
    end else if (cnt_bad2_reg) begin
        drop3_reg[6] <= 1'b1;
    end else if (len2_bad2) begin
        drop3_reg[0] <= 1'b1;
    end
    csum_c3_reg <= {1'b0, csum_b2_reg} + {2'b00, op2_reg == 2'd0 ? CSUM_K_ACK : csum_kr2_reg};
    mj3_reg <= mj2_reg;
    if (rst) begin
        v3_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------------------
// stages 4 and 5: checksum folding, then the meta entry

reg v4_reg;
reg [BUNDLE_W-1:0] bundle4_reg;
reg rx4_reg;
reg [1:0] op4_reg;
reg [6:0] drop4_reg;
reg [16:0] csum_d4_reg;

reg v5_reg;
reg rx5_reg;
reg [1:0] op5_reg;
reg [6:0] drop5_reg;

always @(posedge clk) begin
    v4_reg <= v3_reg;
    bundle4_reg <= bundle3_reg;
    rx4_reg <= rx3_reg;
    op4_reg <= op3_reg;
    drop4_reg <= drop3_reg;
    mj4_reg <= mj3_reg;
    sj5_reg <= mj4_reg[MJ_W-1 -: JW];
    csum_d4_reg <= {1'b0, csum_c3_reg[15:0]} + {14'd0, csum_c3_reg[18:16]};

    v5_reg <= v4_reg;
    rx5_reg <= rx4_reg;
    op5_reg <= op4_reg;
    drop5_reg <= drop4_reg;
    meta_push <= v4_reg;
    meta_push_data <= {mj4_reg, drop4_reg == 7'd0,
                       ~(csum_d4_reg[15:0] + {15'd0, csum_d4_reg[16]}),
                       bundle4_reg};
    if (rst) begin
        v4_reg <= 1'b0;
        v5_reg <= 1'b0;
        meta_push <= 1'b0;
    end
end

assign stat_rx_push = v5_reg && rx5_reg && op5_reg == 2'd0;
assign stat_rx_sample = v5_reg && rx5_reg && op5_reg == 2'd1;
assign stat_rx_update = v5_reg && rx5_reg && op5_reg == 2'd2;
assign stat_drop = v5_reg ? drop5_reg : 7'd0;
assign stat_job = sj5_reg;

// meta_in_ready is guaranteed by meta_room
// verilator lint_off UNUSEDSIGNAL
wire unused_ok = meta_in_ready | pl_in_ready;
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
