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
 * Replay record store in block RAM (replay_engine REC_STORE = 0).
 *
 * C * R bytes (2 MiB by default: about 460 RAMB36 spread over the die), cut
 * into DATA_WIDTH / REC_COL_W column groups of REC_COL_W bits. Each group
 * has its own registered copy of the write enable, write address, write
 * data and read address (kept apart: one copy would fan out to every
 * RAMB36), and an output register after the registered read, so the record
 * data reaches the responder 3 clocks after its address (replay_engine's
 * REC_RD_LAT). Writes land one clock later too, so a record read before a
 * PUSH overwrites it still returns the old one (the PUSH waits for the
 * response queue to empty, several clocks after the last read address).
 */
module replay_rec_store_bram #
(
    // Width of a record beat in bits (the stream's, 256 or 512)
    parameter DATA_WIDTH = 256,
    // Record memory address width: {index, beat}
    parameter REC_ADDR_W = 10,
    // Width of one column group in bits (divides DATA_WIDTH)
    parameter REC_COL_W = 32
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * Write port (the executor's record beats)
     */
    input  wire                   wr_en,
    input  wire [REC_ADDR_W-1:0]  wr_addr,
    input  wire [DATA_WIDTH-1:0]  wr_data,

    /*
     * Read port: data 3 clocks after the address
     */
    input  wire [REC_ADDR_W-1:0]  rd_addr,
    output wire [DATA_WIDTH-1:0]  rd_data
);

localparam REC_COLS = DATA_WIDTH / REC_COL_W;

initial begin
    if (DATA_WIDTH % REC_COL_W != 0) begin
        $error("Error: REC_COL_W must divide DATA_WIDTH (instance %m)");
        $finish;
    end
end

genvar gc;
generate
for (gc = 0; gc < REC_COLS; gc = gc + 1) begin : g_col
    (* keep = "true" *) reg we_reg;
    (* keep = "true" *) reg [REC_ADDR_W-1:0] wa_reg;
    (* keep = "true" *) reg [REC_ADDR_W-1:0] ra_reg;
    reg [REC_COL_W-1:0] wd_reg;
    reg [REC_COL_W-1:0] mem[(2**REC_ADDR_W)-1:0];
    reg [REC_COL_W-1:0] rd_reg;
    reg [REC_COL_W-1:0] rd_out_reg;

    always @(posedge clk) begin
        we_reg <= wr_en;
        wa_reg <= wr_addr;
        wd_reg <= wr_data[gc*REC_COL_W +: REC_COL_W];
        ra_reg <= rd_addr;
        if (we_reg) begin
            mem[wa_reg] <= wd_reg;
        end
        rd_reg <= mem[ra_reg];
        rd_out_reg <= rd_reg;
        if (rst) begin
            we_reg <= 1'b0;
        end
    end

    assign rd_data[gc*REC_COL_W +: REC_COL_W] = rd_out_reg;
end
endgenerate

endmodule

`resetall
