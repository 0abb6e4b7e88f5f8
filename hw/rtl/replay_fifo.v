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
 * Synchronous first-word-fall-through FIFO used inside the replay engine.
 *
 * The storage array is read through a registered port (the output register
 * is loaded from mem[rd_ptr] whenever it is empty or being consumed), so
 * Yosys and Vivado infer block or distributed RAM. The writer must respect
 * in_ready (or its own credit count); a write to a full FIFO is ignored.
 * count is the number of entries held, output register included.
 */
module replay_fifo #
(
    // Entry width in bits
    parameter WIDTH = 8,
    // log2 of the storage depth
    parameter ADDR_WIDTH = 4
)
(
    input  wire                  clk,
    input  wire                  rst,

    input  wire [WIDTH-1:0]      in_data,
    input  wire                  in_valid,
    output wire                  in_ready,

    output wire [WIDTH-1:0]      out_data,
    output wire                  out_valid,
    input  wire                  out_ready,

    output wire [ADDR_WIDTH+1:0] count
);

initial begin
    if (ADDR_WIDTH < 1) begin
        $error("Error: ADDR_WIDTH must be at least 1 (instance %m)");
        $finish;
    end
end

reg [WIDTH-1:0] mem[(2**ADDR_WIDTH)-1:0];

reg [ADDR_WIDTH:0] wr_ptr_reg;
reg [ADDR_WIDTH:0] rd_ptr_reg;
reg [WIDTH-1:0] out_data_reg;
reg out_valid_reg;

wire full = wr_ptr_reg == (rd_ptr_reg ^ {1'b1, {ADDR_WIDTH{1'b0}}});
wire empty = wr_ptr_reg == rd_ptr_reg;
wire load = !empty && (!out_valid_reg || out_ready);

wire [ADDR_WIDTH:0] held = wr_ptr_reg - rd_ptr_reg;

assign in_ready = !full;
assign out_data = out_data_reg;
assign out_valid = out_valid_reg;
assign count = {1'b0, held} + {{ADDR_WIDTH+1{1'b0}}, out_valid_reg};

always @(posedge clk) begin
    if (in_valid && !full) begin
        mem[wr_ptr_reg[ADDR_WIDTH-1:0]] <= in_data;
    end
    if (load) begin
        out_data_reg <= mem[rd_ptr_reg[ADDR_WIDTH-1:0]];
    end
end

always @(posedge clk) begin
    if (in_valid && !full) begin
        wr_ptr_reg <= wr_ptr_reg + 1'b1;
    end
    if (load) begin
        rd_ptr_reg <= rd_ptr_reg + 1'b1;
        out_valid_reg <= 1'b1;
    end else if (out_ready) begin
        out_valid_reg <= 1'b0;
    end

    if (rst) begin
        wr_ptr_reg <= {ADDR_WIDTH+1{1'b0}};
        rd_ptr_reg <= {ADDR_WIDTH+1{1'b0}};
        out_valid_reg <= 1'b0;
    end
end

endmodule

`resetall
