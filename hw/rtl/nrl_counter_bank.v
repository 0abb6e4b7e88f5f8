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
    parameter HALF_WIDTH = 16
)
(
    input  wire              clk,
    input  wire              rst,

    /*
     * Events and clear
     */
    input  wire [COUNT-1:0]  inc,
    input  wire              clear,

    /*
     * Read port (combinational)
     */
    input  wire [4:0]        rd_word,
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

reg [HW*COUNT-1:0] cnt_lo_reg;
reg [HW*COUNT-1:0] cnt_hi_reg;
reg [COUNT-1:0] cnt_carry_reg;  // carry out of the low half, not yet in the high half
wire [COUNT-1:0] cnt_inc;

generate

if (REGISTER_INC) begin : g_inc_reg
    reg [COUNT-1:0] inc_reg;
    always @(posedge clk) begin
        inc_reg <= inc;
        if (rst) begin
            inc_reg <= {COUNT{1'b0}};
        end
    end
    assign cnt_inc = inc_reg;
end else begin : g_inc_direct
    assign cnt_inc = inc;
end

endgenerate

integer i;

always @(posedge clk) begin
    for (i = 0; i < COUNT; i = i + 1) begin
        if (cnt_inc[i]) begin
            cnt_lo_reg[HW*i +: HW] <= cnt_lo_reg[HW*i +: HW] + 1'b1;
        end
        cnt_carry_reg[i] <= cnt_inc[i] && cnt_lo_reg[HW*i +: HW] == {HW{1'b1}};
        if (cnt_carry_reg[i]) begin
            cnt_hi_reg[HW*i +: HW] <= cnt_hi_reg[HW*i +: HW] + 1'b1;
        end
    end

    if (rst || clear) begin
        cnt_lo_reg <= {HW*COUNT{1'b0}};
        cnt_hi_reg <= {HW*COUNT{1'b0}};
        cnt_carry_reg <= {COUNT{1'b0}};
    end
end

// read port: one 32-word select; each word elaborates to its counter or 0
wire [31:0] word_value[0:31];
wire [31:0] word_carry;
wire [31:0] word_hit;

genvar gw;

generate

for (gw = 0; gw < 32; gw = gw + 1) begin : g_word
    localparam integer CI = counter_of_word(gw);

    if (CI < COUNT) begin : g_cnt
        // zero-extended to 32 bits when the halves are narrow (tests)
        assign word_value[gw] = {cnt_hi_reg[HW*CI +: HW], cnt_lo_reg[HW*CI +: HW]};
        assign word_carry[gw] = cnt_carry_reg[CI];
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
