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
 * Replay engine: the job of a request (docs/protocol.md section 11), two
 * clocks behind the ingress's header capture (replay_ingress stage 0).
 *
 * Stage A compares the frame's job byte with every enabled job's JOB_ID
 * (one-hot, registered); stage B registers the matching job's word
 * (replay_job.vh: its member table, JOB_ID, record size, table size and
 * base), its index and whether one matched (an AND-OR of the one-hot: JOB_ID
 * values of enabled jobs never collide). The ingress's other stage-0 values
 * (in_bus) travel alongside. A frame that names no enabled job (or is too
 * short to hold the job byte, in_job_ok = 0) has found = 0
 * and job index 0 (its counters are job 0's, as the model counts them).
 * The pipeline never stalls (the ingress's check pipeline does not).
 */
module replay_job #
(
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the values travelling alongside
    parameter PW = 8
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Every job's word (replay_job.vh) and enable bit
     */
    input  wire [JOBS*511-1:0]     jobs_word,
    input  wire [JOBS-1:0]         job_enable,

    /*
     * The frame at stage 0: valid, its job byte, the values alongside
     */
    input  wire                    in_v,
    input  wire [7:0]              in_job,
    input  wire                    in_job_ok,  // the frame is long enough to hold the byte
    input  wire [PW-1:0]           in_bus,

    /*
     * Two clocks later
     */
    output wire                    out_v,
    output wire [PW-1:0]           out_bus,
    output wire                    out_found,
    output wire [JW-1:0]           out_job,
    output wire [510:0]            out_word
);

// verilator lint_off UNUSEDPARAM
`include "replay_job.vh"
// verilator lint_on UNUSEDPARAM

initial begin
    if (JOBS < 1 || JOBS > 8 || RJ_W != 511) begin
        $error("Error: JOBS must be 1..8 (instance %m)");
        $finish;
    end
end

integer j;

reg a_v_reg, b_v_reg;
reg [PW-1:0] a_bus_reg, b_bus_reg;
reg [JOBS-1:0] a_hit_reg;
reg b_found_reg;
reg [JW-1:0] b_job_reg;
reg [RJ_W-1:0] b_word_reg;

reg [RJ_W-1:0] sel_word;
reg [JW-1:0] sel_job;

always @* begin
    sel_word = {RJ_W{1'b0}};
    sel_job = {JW{1'b0}};
    for (j = 0; j < JOBS; j = j + 1) begin
        if (a_hit_reg[j]) begin
            sel_word = sel_word | jobs_word[RJ_W*j +: RJ_W];
            sel_job = sel_job | j[JW-1:0];
        end
    end
end

always @(posedge clk) begin
    a_v_reg <= in_v;
    a_bus_reg <= in_bus;
    for (j = 0; j < JOBS; j = j + 1) begin
        a_hit_reg[j] <= in_job_ok && job_enable[j] && in_job == jobs_word[RJ_W*j + RJ_ID +: 8];
    end
    b_v_reg <= a_v_reg;
    b_bus_reg <= a_bus_reg;
    b_found_reg <= |a_hit_reg;
    b_job_reg <= sel_job;
    b_word_reg <= sel_word;
    if (rst) begin
        a_v_reg <= 1'b0;
        b_v_reg <= 1'b0;
    end
end

assign out_v = b_v_reg;
assign out_bus = b_bus_reg;
assign out_found = b_found_reg;
assign out_job = b_job_reg;
assign out_word = b_word_reg;

endmodule

`resetall
