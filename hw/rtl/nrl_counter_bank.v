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
 * Bank of 32-bit wrapping event counters with a word-addressed read port
 *
 * The counters of one register file (grad_agg_regs, replay_regs): counter i
 * counts the clocks inc[i] is high (several counters may count in the same
 * clock) and sits at word WORDS[5*i +: 5] of the 32-word counter window
 * (REG_CNT_WINDOW in nrl_regs.vh). Each counter is two HALF_WIDTH = 16-bit
 * halves with the carry out of the low half registered, so no carry chain
 * is longer than 16 bits; the high half catches up one clock after the low
 * half wraps, and the count wraps at 2^32 (2^(2*HALF_WIDTH): a testbench
 * makes the halves narrow to reach the wrap). The read port gives {high, low} and the carry not yet in the high
 * half of the counter at word rd_word (0 and no hit where no counter is);
 * the register file adds the carry to the high half in a pipeline stage of
 * its own, so every read returns the exact count. clear (or rst) zeroes
 * every counter in the next clock.
 *
 * REGISTER_INC = 1 registers inc once before the adders (no engine logic in
 * front of them); the count then follows inc by one more clock.
 *
 * JOBS > 1 (docs/protocol.md section 11): every job has a bank of its own.
 * inc_job[JW*i +: JW] is the job counter i's event belongs to (each counter's
 * event carries its own: two frames of two jobs count in one clock);
 * rd_job selects the bank the read port reads; clear zeroes every job's.
 * With JOBS = 1 inc_job and rd_job are not used.
 */
module nrl_counter_bank #
(
    // Number of counters (1 .. 32)
    parameter COUNT = 14,
    // Counter-window word of each counter, counter i in bits [5*i +: 5]
    parameter [5*COUNT-1:0] WORDS = {5*COUNT{1'b0}},
    // Register inc once before the adders (0 or 1)
    parameter REGISTER_INC = 0,
    // Width of each counter half (16: 32-bit counters; less only in tests)
    parameter HALF_WIDTH = 16,
    // Jobs, a bank of counters each (1 .. 8)
    parameter JOBS = 1,
    // Width of a job index
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire              clk,
    input  wire              rst,

    /*
     * Events and clear
     */
    input  wire [COUNT-1:0]  inc,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [COUNT*JW-1:0] inc_job,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              clear,

    /*
     * Read port (combinational)
     */
    input  wire [4:0]        rd_word,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [JW-1:0]     rd_job,
    /* verilator lint_on UNUSEDSIGNAL */
    output wire              rd_hit,
    output wire [31:0]       rd_value,
    output wire              rd_carry
);

// counter of each window word, COUNT where there is none
function integer counter_of_word(input [4:0] word);
    integer k;
    begin
        counter_of_word = COUNT;
        for (k = 0; k < COUNT; k = k + 1) begin
            if (WORDS[5*k +: 5] == word) begin
                counter_of_word = k;
            end
        end
    end
endfunction

// bad parameter check
initial begin : check
    integer a, b;
    if (COUNT < 1 || COUNT > 32) begin
        $error("Error: COUNT must be 1..32 (instance %m)");
        $finish;
    end
    if (HALF_WIDTH < 1 || HALF_WIDTH > 16) begin
        $error("Error: HALF_WIDTH must be 1..16 (instance %m)");
        $finish;
    end
    if (JOBS < 1 || JOBS > 8) begin
        $error("Error: JOBS must be 1..8 (instance %m)");
        $finish;
    end
    if (REGISTER_INC != 0 && REGISTER_INC != 1) begin
        $error("Error: REGISTER_INC must be 0 or 1 (instance %m)");
        $finish;
    end
    for (a = 0; a < COUNT; a = a + 1) begin
        for (b = a + 1; b < COUNT; b = b + 1) begin
            if (WORDS[5*a +: 5] == WORDS[5*b +: 5]) begin
                $error("Error: two counters at one word (instance %m)");
                $finish;
            end
        end
    end
end

localparam HW = HALF_WIDTH;
localparam [31:0] JOBS32 = JOBS;
localparam [JW:0] JOBS_N = JOBS32[JW:0];

localparam N = COUNT * JOBS;  // counter i of job j is number j*COUNT + i

reg [HW*N-1:0] cnt_lo_reg;
reg [HW*N-1:0] cnt_hi_reg;
reg [N-1:0] cnt_carry_reg;  // carry out of the low half, not yet in the high half
wire [COUNT-1:0] ev_inc;
/* verilator lint_off UNUSEDSIGNAL */
wire [COUNT*JW-1:0] ev_job;
/* verilator lint_on UNUSEDSIGNAL */
wire [N-1:0] cnt_inc;

generate

if (REGISTER_INC) begin : g_inc_reg
    reg [COUNT-1:0] inc_reg;
    reg [COUNT*JW-1:0] job_reg;
    always @(posedge clk) begin
        inc_reg <= inc;
        job_reg <= inc_job;
        if (rst) begin
            inc_reg <= {COUNT{1'b0}};
        end
    end
    assign ev_inc = inc_reg;
    assign ev_job = job_reg;
end else begin : g_inc_direct
    assign ev_inc = inc;
    assign ev_job = inc_job;
end

endgenerate

// each event to its job's counter
genvar gj, gc;

generate

for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_job
    for (gc = 0; gc < COUNT; gc = gc + 1) begin : g_cnt
        if (JOBS == 1) begin : g_one
            assign cnt_inc[gj*COUNT + gc] = ev_inc[gc];
        end else begin : g_many
            localparam [31:0] J32 = gj;
            assign cnt_inc[gj*COUNT + gc] = ev_inc[gc] && ev_job[JW*gc +: JW] == J32[JW-1:0];
        end
    end
end

endgenerate

integer i;

always @(posedge clk) begin
    for (i = 0; i < N; i = i + 1) begin
        if (cnt_inc[i]) begin
            cnt_lo_reg[HW*i +: HW] <= cnt_lo_reg[HW*i +: HW] + 1'b1;
        end
        cnt_carry_reg[i] <= cnt_inc[i] && cnt_lo_reg[HW*i +: HW] == {HW{1'b1}};
        if (cnt_carry_reg[i]) begin
            cnt_hi_reg[HW*i +: HW] <= cnt_hi_reg[HW*i +: HW] + 1'b1;
        end
    end

    if (rst || clear) begin
        cnt_lo_reg <= {HW*N{1'b0}};
        cnt_hi_reg <= {HW*N{1'b0}};
        cnt_carry_reg <= {N{1'b0}};
    end
end

// read port: the job's bank (JOBS > 1), then one 32-word select; each word
// elaborates to its counter or 0
wire [HW*COUNT-1:0] bank_lo;
wire [HW*COUNT-1:0] bank_hi;
wire [COUNT-1:0] bank_carry;

generate

if (JOBS == 1) begin : g_bank_one
    assign bank_lo = cnt_lo_reg;
    assign bank_hi = cnt_hi_reg;
    assign bank_carry = cnt_carry_reg;
end else begin : g_bank_many
    wire [HW*COUNT-1:0] lo_of [0:JOBS-1];
    wire [HW*COUNT-1:0] hi_of [0:JOBS-1];
    wire [COUNT-1:0] carry_of [0:JOBS-1];
    for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_sel
        assign lo_of[gj] = cnt_lo_reg[HW*COUNT*gj +: HW*COUNT];
        assign hi_of[gj] = cnt_hi_reg[HW*COUNT*gj +: HW*COUNT];
        assign carry_of[gj] = cnt_carry_reg[COUNT*gj +: COUNT];
    end
    // a job index >= JOBS reads job 0 (the register path refuses those pages)
    wire [JW-1:0] rj = ({1'b0, rd_job} < JOBS_N) ? rd_job : {JW{1'b0}};
    assign bank_lo = lo_of[rj];
    assign bank_hi = hi_of[rj];
    assign bank_carry = carry_of[rj];
end

endgenerate

wire [31:0] word_value[0:31];
wire [31:0] word_carry;
wire [31:0] word_hit;

genvar gw;

generate

for (gw = 0; gw < 32; gw = gw + 1) begin : g_word
    localparam integer CI = counter_of_word(gw);

    if (CI < COUNT) begin : g_cnt
        // zero-extended to 32 bits when the halves are narrow (tests)
        assign word_value[gw] = {bank_hi[HW*CI +: HW], bank_lo[HW*CI +: HW]};
        assign word_carry[gw] = bank_carry[CI];
        assign word_hit[gw] = 1'b1;
    end else begin : g_none
        assign word_value[gw] = 32'd0;
        assign word_carry[gw] = 1'b0;
        assign word_hit[gw] = 1'b0;
    end
end

endgenerate

assign rd_value = word_value[rd_word];
assign rd_carry = word_carry[rd_word];
assign rd_hit = word_hit[rd_word];

endmodule

`resetall
`default_nettype wire
