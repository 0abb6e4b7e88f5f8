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
 * (prioritized) or the memory size (uniform), y up to 32 + log2(C) bits.
 * Both operands are cut into 16-bit limbs (a: up to three, b: up to four);
 * each limb product (one DSP48 each, fewer where a limb is a bit or two
 * wide) lands on diagonal k = i + j at bit 16k. Products on diagonals of the
 * same parity never overlap, so they are packed side by side into at most
 * six rows (three even, three odd), which a carry-save tree reduces to
 * three rows in one clock (6 -> 4 -> 3) and to two in the next; the two
 * rows are then added 16 bits per clock with a registered carry (the top
 * slice takes what is left, up to 17 bits), so no carry chain is longer
 * than 18 bits. One result per clock; fixed latency
 * LATENCY = 4 + ceil((31 + OUT_WIDTH) / 16): 9 clocks for OUT_WIDTH 34 .. 49
 * (C = 4 .. 2^17 in the replay engine), 10 for OUT_WIDTH 50 .. 64.
 */
module replay_mul #
(
    // Width of operand a (at most 48: three limbs)
    parameter A_WIDTH = 38,
    // Width of operand b (at most 64: four limbs)
    parameter B_WIDTH = 49,
    // Width of the result (bits 32 and up of the product, at most 64)
    parameter OUT_WIDTH = 49,
    // Width of the side band that travels with each operand pair
    parameter USER_WIDTH = 8,
    // Latency in clocks, 4 + ceil((31 + OUT_WIDTH) / 16) (computed; do not override)
    parameter LATENCY = 4 + (OUT_WIDTH + 46) / 16
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

localparam NA = (A_WIDTH + 15) / 16;        // limbs of a
localparam NB = (B_WIDTH + 15) / 16;        // limbs of b
localparam ROW_W = 16 * (NA + NB);          // width of the partial-product rows and of the carry-save sums
localparam RES_W = 32 + OUT_WIDTH;          // product bits computed (31:0 only carry into bit 32)
localparam SLICES = (OUT_WIDTH + 46) / 16;  // carry-propagate slices: 16 bits each, the top one 1 .. 17
localparam TOP_LO = 16 * (SLICES - 1);      // first bit of the top slice
localparam TOP_W = RES_W - TOP_LO;          // width of the top slice

// products on diagonal k: i from diag_lo(k) up
function integer diag_lo(input integer k);
    begin
        diag_lo = k > NB - 1 ? k - NB + 1 : 0;
    end
endfunction

function integer diag_count(input integer k);
    integer hi;
    begin
        hi = k < NA - 1 ? k : NA - 1;
        diag_count = hi - diag_lo(k) + 1;
    end
endfunction

// rows needed for the diagonals of parity p: the most products on one of them
function integer parity_rows(input integer p);
    integer k;
    begin
        parity_rows = 0;
        for (k = p; k <= NA + NB - 2; k = k + 2) begin
            if (diag_count(k) > parity_rows) begin
                parity_rows = diag_count(k);
            end
        end
    end
endfunction

localparam EVEN_ROWS = parity_rows(0);
localparam ROWS = EVEN_ROWS + parity_rows(1);

// row of limb product (i, j): even diagonals fill rows 0 .. EVEN_ROWS-1, odd ones the rest
function integer row_of(input integer i, input integer j);
    begin
        row_of = ((i + j) % 2 == 0 ? 0 : EVEN_ROWS) + i - diag_lo(i + j);
    end
endfunction

initial begin
    if (A_WIDTH < 1 || A_WIDTH > 48 || B_WIDTH < 1 || B_WIDTH > 64 || OUT_WIDTH < 1 || OUT_WIDTH > 64) begin
        $error("Error: operand a is 1 .. 48 bits, b and the result 1 .. 64 bits (instance %m)");
        $finish;
    end
    if (RES_W > ROW_W) begin
        $error("Error: OUT_WIDTH reaches past the product (instance %m)");
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
reg [16*NA-1:0] a1_reg;
reg [16*NB-1:0] b1_reg;
reg [LATENCY-1:0] v_reg;
reg [USER_WIDTH-1:0] user_reg[LATENCY-1:0];

// stage 2: limb products
reg [31:0] pp_reg[NA*NB-1:0];

// stage 3: ROWS -> 3 rows, stage 4: 3 -> 2 rows
reg [ROW_W-1:0] r3_reg[2:0];
reg [ROW_W-1:0] x4_reg, y4_reg;

// stages 5 .. 4+SLICES: carry-propagate, one slice per clock
// verilator lint_off UNUSEDSIGNAL
reg [ROW_W-1:0] xs_reg[SLICES-2:0];
reg [ROW_W-1:0] ys_reg[SLICES-2:0];
// verilator lint_on UNUSEDSIGNAL
reg [RES_W-1:0] sum_reg[SLICES-1:0];
reg [SLICES-2:0] c_reg;

integer i, j, n, si, sj;

// carry-propagate slice n: bits 16n+15 .. 16n of the sum of rows x and y
reg [RES_W-1:0] sum_next[SLICES-1:0];
reg [SLICES-2:0] slice_c;
reg [16:0] slice;
// verilator lint_off UNUSEDSIGNAL
reg [17:0] slice_x;
reg [TOP_W:0] top_x;  // the top slice with its carry in as an extra LSB; no carry out
// verilator lint_on UNUSEDSIGNAL

always @* begin
    for (n = 0; n < SLICES - 1; n = n + 1) begin
        slice_x = 18'd0;
        if (n == 0) begin
            slice = {1'b0, x4_reg[15:0]} + {1'b0, y4_reg[15:0]};
            sum_next[n] = {{RES_W-16{1'b0}}, slice[15:0]};
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
    top_x = {xs_reg[SLICES-2][TOP_LO +: TOP_W], c_reg[SLICES-2]} +
            {ys_reg[SLICES-2][TOP_LO +: TOP_W], 1'b1};
    sum_next[SLICES-1] = sum_reg[SLICES-2];
    sum_next[SLICES-1][TOP_LO +: TOP_W] = top_x[TOP_W:1];
end

reg [ROW_W-1:0] row[5:0];
reg [2*ROW_W-1:0] la0, la1, lb, lc;

always @* begin
    for (i = 0; i < 6; i = i + 1) begin
        row[i] = {ROW_W{1'b0}};
    end
    for (i = 0; i < NA; i = i + 1) begin
        for (j = 0; j < NB; j = j + 1) begin
            row[row_of(i, j)] = row[row_of(i, j)] |
                                ({{ROW_W-32{1'b0}}, pp_reg[i*NB+j]} << (16*(i+j)));
        end
    end
    // 6 -> 4 (with five rows or fewer, rows 3 and 4 pass), 4 -> 3
    la0 = csa(row[0], row[1], row[2]);
    if (ROWS > 5) begin
        la1 = csa(row[3], row[4], row[5]);
    end else begin
        la1 = {row[4], row[3]};
    end
    lb = csa(la0[ROW_W-1:0], la0[2*ROW_W-1:ROW_W], la1[ROW_W-1:0]);
    // 3 -> 2
    lc = csa(r3_reg[0], r3_reg[1], r3_reg[2]);
end

always @(posedge clk) begin
    v_reg <= {v_reg[LATENCY-2:0], in_valid};
    user_reg[0] <= in_user;
    for (si = 1; si < LATENCY; si = si + 1) begin
        user_reg[si] <= user_reg[si-1];
    end

    a1_reg <= {{16*NA-A_WIDTH{1'b0}}, in_a};
    b1_reg <= {{16*NB-B_WIDTH{1'b0}}, in_b};

    for (si = 0; si < NA; si = si + 1) begin
        for (sj = 0; sj < NB; sj = sj + 1) begin
            pp_reg[si*NB+sj] <= a1_reg[16*si +: 16] * b1_reg[16*sj +: 16];
        end
    end

    r3_reg[0] <= lb[ROW_W-1:0];
    r3_reg[1] <= lb[2*ROW_W-1:ROW_W];
    r3_reg[2] <= la1[2*ROW_W-1:ROW_W];

    x4_reg <= lc[ROW_W-1:0];
    y4_reg <= lc[2*ROW_W-1:ROW_W];

    xs_reg[0] <= x4_reg;
    ys_reg[0] <= y4_reg;
    for (si = 1; si < SLICES - 1; si = si + 1) begin
        xs_reg[si] <= xs_reg[si-1];
        ys_reg[si] <= ys_reg[si-1];
    end
    for (si = 0; si < SLICES; si = si + 1) begin
        sum_reg[si] <= sum_next[si];
    end
    c_reg <= slice_c;

    if (rst) begin
        v_reg <= {LATENCY{1'b0}};
    end
end

assign out_valid = v_reg[LATENCY-1];
assign out_p = sum_reg[SLICES-1][32 +: OUT_WIDTH];
assign out_user = user_reg[LATENCY-1];

endmodule

`resetall
