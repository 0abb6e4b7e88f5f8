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

/*
 * Replay engine sampler: the draws (replay_draw: xorshift32 generators, the
 * draw scale), the draw multiplier (replay_mul: floor(x * y / 2^32)) and the
 * pipelined sum tree (replay_sum_tree: leaf updates, descents, totals).
 *
 * A draw's table ({depth, base}: log2 C - log2 of its records, its first
 * record) travels through the multiplier beside the draw: a uniform draw's
 * index is base + floor(x * size / 2^32) (an OR: the base is a multiple of
 * the table size), a prioritized draw descends the table's sub-tree (the
 * tree's q_depth levels follow the base) with a target below the table's
 * total. With one job the base is 0 and the depth 0, and the job's total
 * is the tree's (a reset clears the whole tree, clear_start).
 */
module replay_sampler #
(
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Width of sums (computed; do not override)
    parameter SUM_W = 32 + INDEX_W,
    // Width of the draw side band (computed; do not override)
    parameter SMP_USER_W = 4 + CTX_TAG_W + 6 + 1 + 1
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * RPL_SEED of every job
     */
    input  wire [JOBS*32-1:0]     seed,
    input  wire [JOBS-1:0]        seed_wr,

    /*
     * The SAMPLE_REQ served (replay_executor): its flags, batch, stack depth,
     * tag, its table's total, size, job, base and depth; setup, draws
     */
    input  wire                   prio,
    input  wire [7:0]             count,
    input  wire [3:0]             stk,
    input  wire [CTX_TAG_W-1:0]   tag,
    input  wire [SUM_W-1:0]       total,
    input  wire [INDEX_W:0]       size,
    input  wire [JW-1:0]          job,
    input  wire [INDEX_W-1:0]     base,
    input  wire [4:0]             depth,
    input  wire                   setup,
    input  wire                   issue,
    input  wire                   last,

    /*
     * Sum tree: clear, leaf updates
     */
    input  wire                   clear_start,
    output wire                   clearing,
    input  wire                   upd_valid,
    input  wire [INDEX_W-1:0]     upd_index,
    input  wire [31:0]            upd_prio,
    input  wire [JW-1:0]          upd_job,
    input  wire                   upd_count,
    output wire                   upd_busy,
    output wire                   q_busy,

    /*
     * Descent results; every job's total
     */
    output wire                   r_valid,
    output wire [INDEX_W-1:0]     r_index,
    output wire [31:0]            r_prio,
    output wire [SMP_USER_W-1:0]  r_user,
    output wire [JOBS*SUM_W-1:0]  job_totals,
    input  wire [JOBS-1:0]        job_total_clear
);

localparam MUL_LAT = 4 + (SUM_W + 46) / 16;  // replay_mul: 9 clocks up to C = 2^17
localparam TAB_W = 5 + INDEX_W;
localparam DEPTH_W = $clog2(INDEX_W + 1);  // the tree's q_depth: the depth's low bits

wire mul_in_valid;
wire [37:0] mul_in_a;
wire [SUM_W-1:0] mul_in_b;
wire [SMP_USER_W-1:0] mul_in_user;
wire [TAB_W-1:0] mul_in_tab;

replay_draw #(
    .SUM_W(SUM_W),
    .INDEX_W(INDEX_W),
    .CTX_TAG_W(CTX_TAG_W),
    .JOBS(JOBS)
)
draw_inst (
    .clk(clk),
    .rst(rst),
    .seed(seed),
    .seed_wr(seed_wr),
    .prio(prio),
    .count(count),
    .stk(stk),
    .tag(tag),
    .tree_total(total),
    .size(size),
    .job(job),
    .base(base),
    .depth(depth),
    .setup(setup),
    .issue(issue),
    .last(last),
    .mul_valid(mul_in_valid),
    .mul_a(mul_in_a),
    .mul_b(mul_in_b),
    .mul_user(mul_in_user),
    .mul_tab(mul_in_tab)
);

wire mul_valid;
wire [SUM_W-1:0] mul_p;
wire [SMP_USER_W-1:0] mul_user;
wire [TAB_W-1:0] mul_tab;
// a uniform draw's index in its table (bit 0 of the side band: uniform)
wire [INDEX_W-1:0] q_index = mul_user[0] ? mul_tab[0 +: INDEX_W] | mul_p[INDEX_W-1:0] : mul_tab[0 +: INDEX_W];

replay_mul #(
    .A_WIDTH(38),
    .B_WIDTH(SUM_W),
    .OUT_WIDTH(SUM_W),
    .USER_WIDTH(SMP_USER_W + TAB_W),
    .LATENCY(MUL_LAT)
)
mul_inst (
    .clk(clk),
    .rst(rst),
    .in_valid(mul_in_valid),
    .in_a(mul_in_a),
    .in_b(mul_in_b),
    .in_user({mul_in_tab, mul_in_user}),
    .out_valid(mul_valid),
    .out_p(mul_p),
    .out_user({mul_tab, mul_user})
);

wire [SUM_W-1:0] tree_total;
wire [JOBS*SUM_W-1:0] tree_job_totals;

replay_sum_tree #(
    .CAPACITY(CAPACITY),
    .USER_WIDTH(SMP_USER_W),
    .JOBS(JOBS)
)
tree_inst (
    .clk(clk),
    .rst(rst),
    .clear_start(clear_start),
    .clearing(clearing),
    .upd_valid(upd_valid),
    .upd_index(upd_index),
    .upd_prio(upd_prio),
    .upd_job(upd_job),
    .upd_count(upd_count),
    .upd_busy(upd_busy),
    .q_valid(mul_valid),
    .q_uniform(mul_user[0]),
    .q_target(mul_p),
    .q_index(q_index),
    .q_depth(mul_tab[INDEX_W +: DEPTH_W]),
    .q_user(mul_user),
    .q_busy(q_busy),
    .r_valid(r_valid),
    .r_index(r_index),
    .r_prio(r_prio),
    .r_user(r_user),
    .total(tree_total),
    .job_total(tree_job_totals),
    .job_total_clear(job_total_clear)
);

generate
if (JOBS > 1) begin : g_jobs
    assign job_totals = tree_job_totals;
    // verilator lint_off UNUSEDSIGNAL
    wire unused_total = &{1'b0, tree_total};
    // verilator lint_on UNUSEDSIGNAL
end else begin : g_one
    assign job_totals = tree_total;
    // verilator lint_off UNUSEDSIGNAL
    wire unused_total = &{1'b0, tree_job_totals};
    // verilator lint_on UNUSEDSIGNAL
end
endgenerate

generate
if (DEPTH_W < 5) begin : g_depth_hi
    // verilator lint_off UNUSEDSIGNAL
    wire unused_depth = &{1'b0, mul_tab[TAB_W-1:INDEX_W+DEPTH_W]};
    // verilator lint_on UNUSEDSIGNAL
end
endgenerate

endmodule

`resetall
