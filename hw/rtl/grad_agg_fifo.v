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
 * Synchronous first-word-fall-through FIFO for the aggregation engine
 *
 * A RAM with a registered read port (block RAM or distributed RAM with an
 * output register) followed by the output register itself: a word written
 * in cycle t is on rd_data in cycle t+2. One write and one read per clock.
 * The writer must not write while count >= DEPTH (it keeps a margin; the
 * engine stalls its input well before that), so there is no full flag.
 * count includes the word held in the output register.
 */
module grad_agg_fifo #
(
    // Width of a word
    parameter WIDTH = 8,
    // Words in the RAM (power of two, at least 2)
    parameter DEPTH = 16
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * Write port
     */
    input  wire                     wr_en,
    input  wire [WIDTH-1:0]         wr_data,

    /*
     * Read port (first word fall through)
     */
    output wire                     rd_valid,
    output wire [WIDTH-1:0]         rd_data,
    input  wire                     rd_ready,

    /*
     * Status
     */
    output wire [$clog2(DEPTH):0]   count
);

localparam AW = $clog2(DEPTH);

// bad parameter check
initial begin
    if (DEPTH < 2 || (1 << AW) != DEPTH) begin
        $error("Error: DEPTH must be a power of two >= 2 (instance %m)");
        $finish;
    end
end

reg [WIDTH-1:0] mem[0:DEPTH-1];

reg [AW:0] wr_ptr_reg, wr_ptr_next;
reg [AW:0] rd_ptr_reg, rd_ptr_next;
reg [AW:0] count_reg, count_next;
reg out_valid_reg, out_valid_next;
reg [WIDTH-1:0] out_data_reg;

wire ram_empty = wr_ptr_reg == rd_ptr_reg;
wire pop = out_valid_reg && rd_ready;
wire ram_rd = !ram_empty && (!out_valid_reg || rd_ready);

assign rd_valid = out_valid_reg;
assign rd_data = out_data_reg;
assign count = count_reg;

always @* begin
    wr_ptr_next = wr_ptr_reg;
    rd_ptr_next = rd_ptr_reg;
    out_valid_next = out_valid_reg;
    count_next = count_reg;

    if (wr_en) begin
        wr_ptr_next = wr_ptr_reg + 1'b1;
    end
    if (ram_rd) begin
        rd_ptr_next = rd_ptr_reg + 1'b1;
        out_valid_next = 1'b1;
    end else if (pop) begin
        out_valid_next = 1'b0;
    end
    if (wr_en && !pop) begin
        count_next = count_reg + 1'b1;
    end else if (!wr_en && pop) begin
        count_next = count_reg - 1'b1;
    end
end

always @(posedge clk) begin
    wr_ptr_reg <= wr_ptr_next;
    rd_ptr_reg <= rd_ptr_next;
    out_valid_reg <= out_valid_next;
    count_reg <= count_next;

    if (rst) begin
        wr_ptr_reg <= {AW+1{1'b0}};
        rd_ptr_reg <= {AW+1{1'b0}};
        out_valid_reg <= 1'b0;
        count_reg <= {AW+1{1'b0}};
    end
end

// RAM: write port and registered read port (the output register)
always @(posedge clk) begin
    if (wr_en) begin
        mem[wr_ptr_reg[AW-1:0]] <= wr_data;
    end
    if (ram_rd) begin
        out_data_reg <= mem[rd_ptr_reg[AW-1:0]];
    end
end

endmodule

`resetall
`default_nettype wire
