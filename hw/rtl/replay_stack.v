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
// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Replay record chains and stacked samples (docs/protocol.md section 5,
 * "Record chains" and "Stacked samples").
 *
 * Chains: beside its bytes each record has owner (the PUSH's worker), wseq
 * (that member's count of PUSHed records since RPL_RESET, from 1, mod 2^32)
 * and prev (the member's previous record, or none), in the chain memory (C
 * words of 36 + log2 C bits: one write port, one registered read port).
 * Per member a last register (its last record, or none) and its count.
 * The executor names a PUSH's worker when the PUSH is accepted (ch_begin),
 * then each record it writes, in order (ch_rec, index ch_index: one per
 * clock), then its end (ch_end); ch_clear (RPL_RESET taking effect) empties
 * every member's last and count, never the per-record words. Jobs: the
 * last and count registers are per (job, member) (ch_job names the PUSH's
 * job, ch_clear is a mask of jobs); the per-record words stay at the
 * record's memory index, so a walk compares as with one job.
 *
 * Samples: the sum tree's results (r_*, one per clock at most) enter a
 * queue of 2^SMP_Q_ADDR_W (the most samples in flight: each holds at least
 * one response queue entry). A sample with stk = 0 (k = 0 or 1) becomes one
 * response queue entry at once (one per clock). One with stk = k (2..8)
 * walks its chain from the sampled record x: read x's words, then each
 * predecessor's, stopping at the first that is not valid (prev none, or
 * another owner, or wseq not one less) or after k - 1 steps; four clocks
 * a read (registered address, registered read, output register, registered
 * predecessor test). Then its k entries go out oldest first, one per clock:
 * position j < lo (older than the oldest valid one) with brk set. So a
 * sample of depth k takes at most 4k + k + 1 clocks here, while the
 * responder takes
 * k * (128 + R) / W (W the bus bytes, at least 6k on a 256-bit bus): the
 * walk keeps up with the stream at a 256-bit bus. smp_done pulses with a
 * sample's last entry.
 *
 * The executor keeps the chain memory still while samples are in flight: a
 * PUSH waits until the response queue is empty, so no walk reads a word a
 * PUSH writes.
 *
 * Response queue entry (LSB first): prio, index, i, brk, pos, stk, tag,
 * last, ack (0 here). Draw side band (LSB first): uniform, last, i, tag,
 * stk.
 */
module replay_stack #
(
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // log2 of the sample queue depth (the response queue's)
    parameter SMP_Q_ADDR_W = 7,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Width of a response queue entry (computed; do not override)
    parameter RESP_ENTRY_W = 1 + 1 + CTX_TAG_W + 8 + 6 + INDEX_W + 32,
    // Width of the draw side band (computed; do not override)
    parameter SMP_USER_W = 4 + CTX_TAG_W + 6 + 1 + 1
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * Chain writes (replay_executor)
     */
    input  wire [JOBS-1:0]          ch_clear,
    input  wire                     ch_begin,
    input  wire [JW-1:0]            ch_job,
    input  wire [2:0]               ch_worker,
    input  wire                     ch_rec,
    input  wire [INDEX_W-1:0]       ch_index,
    input  wire                     ch_end,

    /*
     * Sum tree results in
     */
    input  wire                     r_valid,
    input  wire [INDEX_W-1:0]       r_index,
    input  wire [31:0]              r_prio,
    // verilator lint_off UNUSEDSIGNAL
    input  wire [SMP_USER_W-1:0]    r_user,  // bit 0 (uniform) is used before the tree
    // verilator lint_on UNUSEDSIGNAL

    /*
     * Response queue entries out; one sample done
     */
    output wire                     rq_push,
    output wire [RESP_ENTRY_W-1:0]  rq_push_data,
    output wire                     smp_done
);

localparam CH_W = 3 + 32 + 1 + INDEX_W;  // owner, wseq, prev none, prev
localparam NMEM = 8 * JOBS;  // (job, member) pairs
localparam MW = JOBS > 1 ? JW + 3 : 3;
localparam Q_W = SMP_USER_W + INDEX_W + 32;

initial begin
    if (RESP_ENTRY_W != 1 + 1 + CTX_TAG_W + 8 + 6 + INDEX_W + 32) begin
        $error("Error: RESP_ENTRY_W must be the response queue entry width (instance %m)");
        $finish;
    end
    if (SMP_USER_W != 4 + CTX_TAG_W + 6 + 1 + 1) begin
        $error("Error: SMP_USER_W must be the draw side band width (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// chain writes

reg [31:0] pushed_reg[NMEM-1:0];        // per member: records PUSHed since RPL_RESET
reg [INDEX_W-1:0] last_reg[NMEM-1:0];   // per member: its last record
reg [NMEM-1:0] last_none_reg;           // per member: no record since RPL_RESET

// verilator lint_off UNUSEDSIGNAL
wire [JW+2:0] ch_jw_all = {ch_job, ch_worker};  // (JOBS = 1: the job bit unused)
// verilator lint_on UNUSEDSIGNAL
wire [MW-1:0] ch_jw = ch_jw_all[MW-1:0];  // the pair's index (JOBS = 1: the worker)
reg [2:0] cw_w_reg;                     // the PUSH in progress: worker,
reg [NMEM-1:0] cw_hot_reg;              // the same worker one-hot (the write-back's enables,
                                        // decoded a clock early: no decoder before them)
reg [31:0] cw_cnt_reg;                  // its count so far,
reg [INDEX_W-1:0] cw_last_reg;          // its last record
reg cw_none_reg;
reg cw_end_reg;

reg wr_v_reg;
reg [INDEX_W-1:0] wr_a_reg;
reg [CH_W-1:0] wr_d_reg;
integer m;

always @(posedge clk) begin
    wr_v_reg <= 1'b0;
    cw_end_reg <= ch_end;
    if (ch_begin) begin
        cw_w_reg <= ch_worker;
        cw_hot_reg <= {{(NMEM-1){1'b0}}, 1'b1} << ch_jw;
        cw_cnt_reg <= pushed_reg[ch_jw];
        cw_last_reg <= last_reg[ch_jw];
        cw_none_reg <= last_none_reg[ch_jw];
    end
    if (ch_rec) begin
        wr_v_reg <= 1'b1;
        wr_a_reg <= ch_index;
        wr_d_reg <= {cw_w_reg, cw_cnt_reg + 32'd1, cw_none_reg, cw_last_reg};
        cw_cnt_reg <= cw_cnt_reg + 32'd1;
        cw_last_reg <= ch_index;
        cw_none_reg <= 1'b0;
    end
    for (m = 0; m < NMEM; m = m + 1) begin
        if (cw_end_reg && cw_hot_reg[m]) begin
            pushed_reg[m] <= cw_cnt_reg;
            last_reg[m] <= cw_last_reg;
            last_none_reg[m] <= cw_none_reg;
        end
    end
    for (m = 0; m < NMEM; m = m + 1) begin
        if (rst || ch_clear[m / 8]) begin
            pushed_reg[m] <= 32'd0;
            last_none_reg[m] <= 1'b1;
        end
    end
    if (rst) begin
        wr_v_reg <= 1'b0;
        cw_end_reg <= 1'b0;
    end
end

// chain memory: one write port, one registered read and an output register
reg [CH_W-1:0] ch_mem[CAPACITY-1:0];
reg [INDEX_W-1:0] ra_reg;
reg [CH_W-1:0] rd_reg;
reg [CH_W-1:0] rdo_reg;

always @(posedge clk) begin
    if (wr_v_reg) begin
        ch_mem[wr_a_reg] <= wr_d_reg;
    end
    rd_reg <= ch_mem[ra_reg];
    rdo_reg <= rd_reg;
end

wire [INDEX_W-1:0] rd_prev = rdo_reg[0 +: INDEX_W];
wire rd_none = rdo_reg[INDEX_W];
wire [31:0] rd_wseq = rdo_reg[INDEX_W+1 +: 32];
wire [2:0] rd_owner = rdo_reg[INDEX_W+33 +: 3];

// ---------------------------------------------------------------------------
// sample queue

wire [Q_W-1:0] q_data;
wire q_valid;
wire q_pop;
wire [SMP_Q_ADDR_W+1:0] q_count;
wire q_in_ready;

// at most 2^SMP_Q_ADDR_W samples are in flight (the response queue entries
// they hold), so no write finds it full
nrl_fifo #(
    .WIDTH(Q_W),
    .ADDR_WIDTH(SMP_Q_ADDR_W),
    .FULL_GUARD(0),
    .LUT_RAM(1)
)
q_inst (
    .clk(clk),
    .rst(rst),
    .in_data({r_user, r_index, r_prio}),
    .in_valid(r_valid),
    .in_ready(q_in_ready),
    .out_data(q_data),
    .out_valid(q_valid),
    .out_ready(q_pop),
    .count(q_count)
);

wire [31:0] h_prio = q_data[0 +: 32];
wire [INDEX_W-1:0] h_index = q_data[32 +: INDEX_W];
wire h_last = q_data[32+INDEX_W+1];
wire [5:0] h_i = q_data[32+INDEX_W+2 +: 6];
wire [CTX_TAG_W-1:0] h_tag = q_data[32+INDEX_W+8 +: CTX_TAG_W];
wire [3:0] h_stk = q_data[32+INDEX_W+8+CTX_TAG_W +: 4];

// ---------------------------------------------------------------------------
// chain walk and entries

localparam [1:0]
    W_IDLE = 2'd0,
    W_READ = 2'd1,
    W_EMIT = 2'd2;

reg [1:0] w_state_reg;
reg [1:0] rd_wait_reg;           // clocks until rdo_reg holds the word read and
                                 // pred_eq_reg its comparison (3 after a read starts)
reg first_reg;                   // the word read is the sampled record's
reg [2:0] j_reg;                 // the position the next valid predecessor fills
reg [2:0] lo_reg;                // the oldest valid position
reg [2:0] e_reg;                 // the position emitted next
reg [31:0] sm1_reg;              // wseq of the chain's oldest valid record, minus 1
reg [2:0] own_reg;               // the chain's owner
reg [INDEX_W-1:0] chain_reg[7:0];

reg out_v_reg;
reg out_done_reg;
reg [RESP_ENTRY_W-1:0] out_reg;

assign rq_push = out_v_reg;
assign rq_push_data = out_reg;
assign smp_done = out_done_reg;

wire [2:0] k_m1 = h_stk[2:0] - 3'd1;  // k - 1 (k = 8: 7)
// the head leaves with its entry (not stacked) or with its last one
assign q_pop = w_state_reg == W_IDLE ? q_valid && h_stk == 4'd0 :
               w_state_reg == W_EMIT && e_reg == k_m1;
// the predecessor test, registered (its 32-bit compare fanned out into the chain
// write and the entry made the engine's second worst path): a clock after the
// word arrived in rdo_reg, which holds it while rd_wait_reg counts down
reg pred_eq_reg;
wire pred_ok = !first_reg && pred_eq_reg;

always @(posedge clk) begin
    pred_eq_reg <= rd_owner == own_reg && rd_wseq == sm1_reg;
    out_v_reg <= 1'b0;
    out_done_reg <= 1'b0;
    if (rd_wait_reg != 2'd0) begin
        rd_wait_reg <= rd_wait_reg - 2'd1;
    end
    case (w_state_reg)
        W_IDLE: begin
            if (q_valid) begin
                if (h_stk == 4'd0) begin
                    out_v_reg <= 1'b1;
                    out_done_reg <= 1'b1;
                    out_reg <= {1'b0, h_last, h_tag, 8'd0, h_i, h_index, h_prio};
                end else begin
                    ra_reg <= h_index;
                    rd_wait_reg <= 2'd3;
                    first_reg <= 1'b1;
                    chain_reg[k_m1] <= h_index;
                    lo_reg <= k_m1;
                    j_reg <= k_m1 - 3'd1;
                    w_state_reg <= W_READ;
                end
            end
        end
        W_READ: begin
            if (rd_wait_reg == 2'd0) begin
                first_reg <= 1'b0;
                if (first_reg || pred_ok) begin
                    if (!first_reg) begin
                        chain_reg[j_reg] <= ra_reg;
                        lo_reg <= j_reg;
                        j_reg <= j_reg - 3'd1;
                    end
                    own_reg <= rd_owner;
                    sm1_reg <= rd_wseq - 32'd1;
                    ra_reg <= rd_prev;
                    rd_wait_reg <= 2'd3;
                    // the stack is full, or the chain ends here
                    if ((!first_reg && j_reg == 3'd0) || rd_none) begin
                        e_reg <= 3'd0;
                        w_state_reg <= W_EMIT;
                    end
                end else begin
                    e_reg <= 3'd0;
                    w_state_reg <= W_EMIT;
                end
            end
        end
        W_EMIT: begin
            out_v_reg <= 1'b1;
            out_reg <= {1'b0, h_last && e_reg == k_m1, h_tag, h_stk, e_reg, e_reg < lo_reg, h_i,
                        e_reg < lo_reg ? {INDEX_W{1'b0}} : chain_reg[e_reg], h_prio};
            e_reg <= e_reg + 3'd1;
            if (e_reg == k_m1) begin
                out_done_reg <= 1'b1;
                w_state_reg <= W_IDLE;
            end
        end
        default: begin
            w_state_reg <= W_IDLE;
        end
    endcase
    if (rst) begin
        w_state_reg <= W_IDLE;
        rd_wait_reg <= 2'd0;
        out_v_reg <= 1'b0;
        out_done_reg <= 1'b0;
    end
end

// verilator lint_off UNUSEDSIGNAL
wire unused_ok = q_in_ready | (|q_count);
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
