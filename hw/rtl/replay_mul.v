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
 * Pipelined unsigned multiplier that returns bits [32 +: OUT_WIDTH] of a*b.
 *
 * The replay sampler computes floor(x * y / 2^32) once per clock: with
 * x = {i, u} (sample number and xorshift32 draw) and y the stratum width
 * (prioritized) or the memory size (uniform). Both operands are cut into
 * 16-bit limbs; the nine 16x16 limb products (one DSP48 each) are reduced
 * by a carry-save tree (two 3:2 levels per clock) and the two remaining
 * rows are added 16 bits per clock with a registered carry, so no carry
 * chain is longer than 16 bits. Fixed latency LATENCY; one result per clock.
 */
module replay_mul #
(
    // Width of operand a (at most 48)
    parameter A_WIDTH = 38,
    // Width of operand b (at most 48)
    parameter B_WIDTH = 48,
    // Width of the result (bits 32 and up of the product, at most 48)
    parameter OUT_WIDTH = 48,
    // Width of the side band that travels with each operand pair
    parameter USER_WIDTH = 8,
    // Latency in clocks (fixed by the structure; do not override)
    parameter LATENCY = 9
)
(
    input  wire                   clk,
    input  wire                   rst,

    input  wire                   in_valid,
    input  wire [A_WIDTH-1:0]     in_a,
    input  wire [B_WIDTH-1:0]     in_b,
    input  wire [USER_WIDTH-1:0]  in_user,

    output wire                   out_valid,
    output wire [OUT_WIDTH-1:0]   out_p,
    output wire [USER_WIDTH-1:0]  out_user
);

localparam ROW_W = 96;     // width of the partial-product rows and of the carry-save sums
localparam SLICES = 5;     // 16-bit result slices up to bit 79

initial begin
    if (A_WIDTH > 48 || B_WIDTH > 48 || OUT_WIDTH > 48) begin
        $error("Error: operands and result are at most 48 bits (instance %m)");
        $finish;
    end
    if (LATENCY != 4 + SLICES) begin
        $error("Error: LATENCY must be %0d (instance %m)", 4 + SLICES);
        $finish;
    end
end

// 3:2 compressor on ROW_W-bit rows: {carry row, sum row}
// verilator lint_off UNUSEDSIGNAL
function [2*ROW_W-1:0] csa(input [ROW_W-1:0] x, input [ROW_W-1:0] y, input [ROW_W-1:0] z);
    reg [ROW_W-1:0] c;
    begin
        c = (x & y) | (x & z) | (y & z);
        csa = {c[ROW_W-2:0], 1'b0, x ^ y ^ z};
    end
endfunction
// verilator lint_on UNUSEDSIGNAL

// stage 1: operands
reg [47:0] a1_reg, b1_reg;
reg [LATENCY-1:0] v_reg;
reg [USER_WIDTH-1:0] user_reg[LATENCY-1:0];

// stage 2: limb products
reg [31:0] pp_reg[8:0];

// stage 3: 9 -> 4 rows, stage 4: 4 -> 2 rows
reg [ROW_W-1:0] r3_reg[3:0];
reg [ROW_W-1:0] x4_reg, y4_reg;

// stages 5..9: carry-propagate, one 16-bit slice per clock
reg [ROW_W-1:0] xs_reg[SLICES-1:0];
reg [ROW_W-1:0] ys_reg[SLICES-1:0];
reg [16*SLICES-1:0] sum_reg[SLICES-1:0];
reg [SLICES-1:0] c_reg;

integer i, j, n, si, sj;

// carry-propagate slice n: bits 16i+15..16i of the sum of rows x and y
reg [16*SLICES-1:0] sum_next[SLICES-1:0];
reg [SLICES-1:0] slice_c;
reg [16:0] slice;
// verilator lint_off UNUSEDSIGNAL
reg [17:0] slice_x;
// verilator lint_on UNUSEDSIGNAL

always @* begin
    for (n = 0; n < SLICES; n = n + 1) begin
        slice_x = 18'd0;
        if (n == 0) begin
            slice = {1'b0, x4_reg[15:0]} + {1'b0, y4_reg[15:0]};
            sum_next[n] = {{16*SLICES-16{1'b0}}, slice[15:0]};
        end else begin
            // carry-in as an extra LSB: one 17-bit carry chain
            slice_x = {1'b0, xs_reg[n-1][16*n +: 16], c_reg[n-1]} +
                      {1'b0, ys_reg[n-1][16*n +: 16], 1'b1};
            slice = slice_x[17:1];
            sum_next[n] = sum_reg[n-1];
            sum_next[n][16*n +: 16] = slice[15:0];
        end
        slice_c[n] = slice[16];
    end
end

reg [ROW_W-1:0] row[8:0];
reg [2*ROW_W-1:0] l1a, l1b, l1c, l2a, l2b, l3a, l4a;


always @* begin
    for (i = 0; i < 3; i = i + 1) begin
        for (j = 0; j < 3; j = j + 1) begin
            row[i*3+j] = {{ROW_W-32{1'b0}}, pp_reg[i*3+j]} << (16*(i+j));
        end
    end
    l1a = csa(row[0], row[1], row[2]);
    l1b = csa(row[3], row[4], row[5]);
    l1c = csa(row[6], row[7], row[8]);
    l2a = csa(l1a[ROW_W-1:0], l1a[2*ROW_W-1:ROW_W], l1b[ROW_W-1:0]);
    l2b = csa(l1b[2*ROW_W-1:ROW_W], l1c[ROW_W-1:0], l1c[2*ROW_W-1:ROW_W]);
    l3a = csa(r3_reg[0], r3_reg[1], r3_reg[2]);
    l4a = csa(l3a[ROW_W-1:0], l3a[2*ROW_W-1:ROW_W], r3_reg[3]);
end

always @(posedge clk) begin
    v_reg <= {v_reg[LATENCY-2:0], in_valid};
    user_reg[0] <= in_user;
    for (si = 1; si < LATENCY; si = si + 1) begin
        user_reg[si] <= user_reg[si-1];
    end

    a1_reg <= {{48-A_WIDTH{1'b0}}, in_a};
    b1_reg <= {{48-B_WIDTH{1'b0}}, in_b};

    for (si = 0; si < 3; si = si + 1) begin
        for (sj = 0; sj < 3; sj = sj + 1) begin
            pp_reg[si*3+sj] <= a1_reg[16*si +: 16] * b1_reg[16*sj +: 16];
        end
    end

    r3_reg[0] <= l2a[ROW_W-1:0];
    r3_reg[1] <= l2a[2*ROW_W-1:ROW_W];
    r3_reg[2] <= l2b[ROW_W-1:0];
    r3_reg[3] <= l2b[2*ROW_W-1:ROW_W];

    x4_reg <= l4a[ROW_W-1:0];
    y4_reg <= l4a[2*ROW_W-1:ROW_W];

    xs_reg[0] <= x4_reg;
    ys_reg[0] <= y4_reg;
    for (si = 1; si < SLICES; si = si + 1) begin
        xs_reg[si] <= xs_reg[si-1];
        ys_reg[si] <= ys_reg[si-1];
    end
    for (si = 0; si < SLICES; si = si + 1) begin
        sum_reg[si] <= sum_next[si];
        c_reg[si] <= slice_c[si];
    end

    if (rst) begin
        v_reg <= {LATENCY{1'b0}};
    end
end

// verilator lint_off UNUSEDSIGNAL
wire [16*SLICES-1:0] result = sum_reg[SLICES-1];  // bits 31:0 only carry into bit 32
// verilator lint_on UNUSEDSIGNAL

assign out_valid = v_reg[LATENCY-1];
assign out_p = result[32 +: OUT_WIDTH];
assign out_user = user_reg[LATENCY-1];

endmodule

`resetall
