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
 * AXI4-Lite slave with no registers
 *
 * Terminates an AXI4-Lite port that the SUME block design wires to the
 * user datapath but the netfpga-rl switch does not use (nf_datapath's
 * S1_AXI and S2_AXI, which address the reference switch's output port
 * lookup and output queues): writes are accepted and ignored, reads return
 * zero, both with an OKAY response, so host tools that probe those windows
 * never hang the bus.
 */
module nf_nrl_axil_null #
(
    // Width of the AXI4-Lite address in bits
    parameter ADDR_WIDTH = 32,
    // Width of the AXI4-Lite data in bits
    parameter DATA_WIDTH = 32,
    // Width of the AXI4-Lite wstrb in bits
    parameter STRB_WIDTH = DATA_WIDTH/8
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * AXI4-Lite slave
     */
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [ADDR_WIDTH-1:0]  s_axil_awaddr,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [DATA_WIDTH-1:0]  s_axil_wdata,
    input  wire [STRB_WIDTH-1:0]  s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output wire [1:0]             s_axil_bresp,
    output wire                   s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [ADDR_WIDTH-1:0]  s_axil_araddr,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [DATA_WIDTH-1:0]  s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready
);

reg s_axil_bvalid_reg, s_axil_bvalid_next;
reg s_axil_rvalid_reg, s_axil_rvalid_next;

// take a write when address and data are both there and no response is pending
wire do_write = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid_reg;
wire do_read = s_axil_arvalid && !s_axil_rvalid_reg;

assign s_axil_awready = do_write;
assign s_axil_wready = do_write;
assign s_axil_bresp = 2'b00;
assign s_axil_bvalid = s_axil_bvalid_reg;
assign s_axil_arready = do_read;
assign s_axil_rdata = {DATA_WIDTH{1'b0}};
assign s_axil_rresp = 2'b00;
assign s_axil_rvalid = s_axil_rvalid_reg;

always @* begin
    s_axil_bvalid_next = (s_axil_bvalid_reg && !s_axil_bready) || do_write;
    s_axil_rvalid_next = (s_axil_rvalid_reg && !s_axil_rready) || do_read;
end

always @(posedge clk) begin
    s_axil_bvalid_reg <= s_axil_bvalid_next;
    s_axil_rvalid_reg <= s_axil_rvalid_next;

    if (rst) begin
        s_axil_bvalid_reg <= 1'b0;
        s_axil_rvalid_reg <= 1'b0;
    end
end

endmodule

`resetall
`default_nettype wire
