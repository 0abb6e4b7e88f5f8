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
 * Replay draws (docs/protocol.md section 5): the xorshift32 generator, the
 * draw scale and the draws replay_executor issues to replay_mul.
 *
 * The generator state is RST_RPL_SEED at reset and seed (a written 0:
 * RST_RPL_SEED) when RPL_SEED is written (seed_wr, which wins over a draw
 * in the same clock). setup (a SAMPLE_REQ about to draw) loads the scale y:
 * the segment T >> log2 B of a prioritized request (T = tree_total), size
 * for a uniform one, and restarts the sample number i. Each issue steps the
 * generator once and puts out a draw: a = {i (prioritized), x}, b = y, and
 * the side band (LSB first) uniform, last (the request's last sample), i,
 * tag, stk; replay_mul computes floor(a * b / 2^32) (prioritized: i * seg +
 * floor(x * seg / 2^32), the target in segment i).
 *
 * Jobs: every job has its generator (seed and seed_wr per job); setup
 * loads the request's job's into the active one, each issue writes the
 * active one back. The draw's table (base, depth: log2 C - log2 of its
 * records) travels with it in mul_tab ({depth, base}) to the sum tree.
 */
module replay_draw #
(
    // Width of the draw scale, 32 + log2(C)
    parameter SUM_W = 46,
    // log2(C)
    parameter INDEX_W = 14,
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the draw side band (computed; do not override)
    parameter SMP_USER_W = 4 + CTX_TAG_W + 6 + 1 + 1
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * RPL_SEED
     */
    input  wire [JOBS*32-1:0]     seed,
    input  wire [JOBS-1:0]        seed_wr,

    /*
     * The SAMPLE_REQ at the head: prioritized, batch B, stack depth, tag
     */
    input  wire                   prio,
    input  wire [7:0]             count,
    input  wire [3:0]             stk,
    input  wire [CTX_TAG_W-1:0]   tag,
    input  wire [SUM_W-1:0]       tree_total,
    input  wire [INDEX_W:0]       size,
    input  wire [JW-1:0]          job,
    input  wire [INDEX_W-1:0]     base,
    input  wire [4:0]             depth,

    /*
     * Load the scale; issue one draw (last: the request's last)
     */
    input  wire                   setup,
    input  wire                   issue,
    input  wire                   last,

    /*
     * Draws out (replay_mul)
     */
    output wire                   mul_valid,
    output wire [37:0]            mul_a,
    output wire [SUM_W-1:0]       mul_b,
    output wire [SMP_USER_W-1:0]  mul_user,
    output wire [5+INDEX_W-1:0]   mul_tab
);

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"  // RST_RPL_SEED
// verilator lint_on UNUSEDPARAM

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

reg [31:0] rng_q[JOBS-1:0];  // every job's generator
reg [31:0] rng_reg;          // the request's job's
reg [JW-1:0] job_reg;
reg [5+INDEX_W-1:0] tab_reg;
reg [SUM_W-1:0] y_reg;
integer k;  // the draw scale: segment (prioritized) or size (uniform)
reg [6:0] smp_i_reg;

wire [31:0] x_next = xorshift32(rng_reg);
wire [SUM_W-1:0] seg = tree_total >> log2b(count);

assign mul_valid = issue;
assign mul_a = {prio ? smp_i_reg[5:0] : 6'd0, x_next};
assign mul_b = y_reg;
assign mul_user = {stk, tag, smp_i_reg[5:0], issue && last, !prio};
assign mul_tab = tab_reg;

always @(posedge clk) begin
    if (setup) begin
        y_reg <= prio ? seg : {{SUM_W-INDEX_W-1{1'b0}}, size};
        smp_i_reg <= 7'd0;
        rng_reg <= rng_q[job];
        job_reg <= job;
        tab_reg <= {depth, base};
    end
    if (issue) begin
        rng_reg <= x_next;
        rng_q[job_reg] <= x_next;
        smp_i_reg <= smp_i_reg + 1'b1;
    end
    for (k = 0; k < JOBS; k = k + 1) begin
        if (seed_wr[k]) begin
            rng_q[k] <= seed[32*k +: 32] == 0 ? RST_RPL_SEED : seed[32*k +: 32];
            if (job_reg == k[JW-1:0]) begin
                rng_reg <= seed[32*k +: 32] == 0 ? RST_RPL_SEED : seed[32*k +: 32];
            end
        end
    end
    if (rst) begin
        rng_reg <= RST_RPL_SEED;
        job_reg <= {JW{1'b0}};
        for (k = 0; k < JOBS; k = k + 1) begin
            rng_q[k] <= RST_RPL_SEED;
        end
    end
end

endmodule

`resetall
