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
 * Synchronous first-word-fall-through FIFO (the aggregation and the replay
 * engine's queues)
 *
 * The storage array is read through a registered port: the output register
 * is loaded from mem[rd_ptr] whenever it is empty or being consumed, so
 * Yosys and Vivado infer block RAM (or distributed RAM with an output
 * register). A word written in cycle t is on out_data in cycle t+2; one
 * write and one read per clock. count is the number of words held, output
 * register included (at most 2**ADDR_WIDTH + 1).
 *
 * FULL_GUARD = 1: in_ready is !full and a write to a full FIFO is ignored.
 * FULL_GUARD = 0: in_ready is always 1 and the writer keeps a margin itself
 * (from count); the write path has no full compare.
 *
 * COUNT_REG = 1: count comes from a register updated with every write and
 * read (a flop output, for a consumer on a critical path); its top bit is 0.
 * COUNT_REG = 0: count is the pointer difference plus the output register.
 *
 * LUT_RAM = 1: the storage is distributed RAM (ram_style "distributed"), so
 * out_data comes from a fabric register, not from a block RAM output
 * (2.45 ns on xc7 before routing), for a consumer with logic after it.
 */
module nrl_fifo #
(
    // Word width in bits
    parameter WIDTH = 8,
    // log2 of the storage depth (at least 1)
    parameter ADDR_WIDTH = 4,
    // 1: refuse writes when full; 0: the writer never overfills
    parameter FULL_GUARD = 1,
    // 1: registered count; 0: count from the pointers
    parameter COUNT_REG = 0,
    // 1: storage in distributed RAM; 0: the synthesis tool chooses
    parameter LUT_RAM = 0
)
(
    input  wire                  clk,
    input  wire                  rst,

    /*
     * Write port
     */
    input  wire [WIDTH-1:0]      in_data,
    input  wire                  in_valid,
    output wire                  in_ready,

    /*
     * Read port (first word fall through)
     */
    output wire [WIDTH-1:0]      out_data,
    output wire                  out_valid,
    input  wire                  out_ready,

    /*
     * Status
     */
    output wire [ADDR_WIDTH+1:0] count
);

initial begin
    if (ADDR_WIDTH < 1) begin
        $error("Error: ADDR_WIDTH must be at least 1 (instance %m)");
        $finish;
    end
end

reg [ADDR_WIDTH:0] wr_ptr_reg;
reg [ADDR_WIDTH:0] rd_ptr_reg;
reg [WIDTH-1:0] out_data_reg;
reg out_valid_reg;

wire full = wr_ptr_reg == (rd_ptr_reg ^ {1'b1, {ADDR_WIDTH{1'b0}}});
wire empty = wr_ptr_reg == rd_ptr_reg;
wire write = in_valid && (FULL_GUARD == 0 || !full);
wire load = !empty && (!out_valid_reg || out_ready);

assign in_ready = FULL_GUARD == 0 || !full;
assign out_data = out_data_reg;
assign out_valid = out_valid_reg;

generate

if (LUT_RAM) begin : g_lut_ram

    (* ram_style = "distributed" *)
    reg [WIDTH-1:0] mem[(2**ADDR_WIDTH)-1:0];

    always @(posedge clk) begin
        if (write) begin
            mem[wr_ptr_reg[ADDR_WIDTH-1:0]] <= in_data;
        end
        if (load) begin
            out_data_reg <= mem[rd_ptr_reg[ADDR_WIDTH-1:0]];
        end
    end

end else begin : g_ram

    reg [WIDTH-1:0] mem[(2**ADDR_WIDTH)-1:0];

    always @(posedge clk) begin
        if (write) begin
            mem[wr_ptr_reg[ADDR_WIDTH-1:0]] <= in_data;
        end
        if (load) begin
            out_data_reg <= mem[rd_ptr_reg[ADDR_WIDTH-1:0]];
        end
    end

end

endgenerate

always @(posedge clk) begin
    if (write) begin
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

generate

if (COUNT_REG) begin : g_count_reg

    reg [ADDR_WIDTH:0] count_reg;
    wire pop = out_valid_reg && out_ready;

    always @(posedge clk) begin
        if (write && !pop) begin
            count_reg <= count_reg + 1'b1;
        end else if (!write && pop) begin
            count_reg <= count_reg - 1'b1;
        end
        if (rst) begin
            count_reg <= {ADDR_WIDTH+1{1'b0}};
        end
    end

    assign count = {1'b0, count_reg};

end else begin : g_count_ptr

    wire [ADDR_WIDTH:0] held = wr_ptr_reg - rd_ptr_reg;

    assign count = {1'b0, held} + {{ADDR_WIDTH+1{1'b0}}, out_valid_reg};

end

endgenerate

endmodule

`resetall
`default_nettype wire
