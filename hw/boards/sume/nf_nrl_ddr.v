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
 * SUME DDR3 SODIMM behind the replay record store (build.tcl --ddr).
 * UNTESTED: no Vivado and no board here; see docs/board.md.
 *
 * The replay engine's AXI4 master (nf_nrl_top m_axi_rpl_*, 512-bit, on the
 * 200 MHz datapath clock) crosses into the memory controller's clock through
 * nrl_rpl_axi_cc (Xilinx axi_clock_converter, asynchronous) and reaches
 * nrl_mig (Xilinx mig_7series, DDR3, AXI4 slave with 512-bit data: a 64-bit
 * SODIMM at a 4:1 PHY ratio), whose UI clock (ui_clk, a quarter of the
 * memory clock: 189 MHz with SUME's 1.32 ns DDR3 clock) runs the converter's
 * master side. Both IPs are created by mig.tcl; the MIG project is SUME's
 * own nf_sume_ddr3A.prj (or --mig-prj), its AXI widths set by mig_prj.tcl
 * (the widths below must match): no-buffer system clock (the IBUFDS here),
 * no-buffer reference clock (clk_ref_i), active-high reset, XADC enabled
 * (device_temp left open). init_calib_complete goes out for an LED or
 * a status bit; until calibration the MIG holds AWREADY / ARREADY low, so
 * a PUSH simply waits.
 */
module nf_nrl_ddr #
(
    // Width of the AXI4 address (the MIG's C_S_AXI_ADDR_WIDTH)
    parameter AXI_ADDR_WIDTH = 32,
    // Width of the AXI4 IDs (the replay engine's; the MIG's C_S_AXI_ID_WIDTH)
    parameter AXI_ID_WIDTH = 1,
    // DDR3 data width in bits (the SODIMM: 64)
    parameter DQ_WIDTH = 64,
    // DDR3 row address width (the MIG's ROW_WIDTH)
    parameter ROW_WIDTH = 16,
    // DDR3 bank address width
    parameter BANK_WIDTH = 3,
    // DDR3 ranks (chip selects, CKE, ODT)
    parameter RANKS = 1
)
(
    // Datapath clock and reset (the replay engine's, active low)
    input  wire                          axis_aclk,
    input  wire                          axis_resetn,

    // AXI4 slave: the replay engine's record store
    input  wire [AXI_ID_WIDTH-1:0]       s_axi_awid,
    input  wire [AXI_ADDR_WIDTH-1:0]     s_axi_awaddr,
    input  wire [7:0]                    s_axi_awlen,
    input  wire [2:0]                    s_axi_awsize,
    input  wire [1:0]                    s_axi_awburst,
    input  wire                          s_axi_awlock,
    input  wire [3:0]                    s_axi_awcache,
    input  wire [2:0]                    s_axi_awprot,
    input  wire [3:0]                    s_axi_awqos,
    input  wire                          s_axi_awvalid,
    output wire                          s_axi_awready,
    input  wire [511:0]                  s_axi_wdata,
    input  wire [63:0]                   s_axi_wstrb,
    input  wire                          s_axi_wlast,
    input  wire                          s_axi_wvalid,
    output wire                          s_axi_wready,
    output wire [AXI_ID_WIDTH-1:0]       s_axi_bid,
    output wire [1:0]                    s_axi_bresp,
    output wire                          s_axi_bvalid,
    input  wire                          s_axi_bready,
    input  wire [AXI_ID_WIDTH-1:0]       s_axi_arid,
    input  wire [AXI_ADDR_WIDTH-1:0]     s_axi_araddr,
    input  wire [7:0]                    s_axi_arlen,
    input  wire [2:0]                    s_axi_arsize,
    input  wire [1:0]                    s_axi_arburst,
    input  wire                          s_axi_arlock,
    input  wire [3:0]                    s_axi_arcache,
    input  wire [2:0]                    s_axi_arprot,
    input  wire [3:0]                    s_axi_arqos,
    input  wire                          s_axi_arvalid,
    output wire                          s_axi_arready,
    output wire [AXI_ID_WIDTH-1:0]       s_axi_rid,
    output wire [511:0]                  s_axi_rdata,
    output wire [1:0]                    s_axi_rresp,
    output wire                          s_axi_rlast,
    output wire                          s_axi_rvalid,
    input  wire                          s_axi_rready,

    // Memory controller system clock (differential, 233.1 MHz on E34/E35,
    // buffered here: the MIG project's system clock is "No Buffer"), its
    // IDELAY reference clock (200 MHz: the datapath clock, from the same
    // fpga_sysclk pins) and the board reset (active low; the MIG's is active
    // high, inverted here)
    input  wire                          sys_clk_p,
    input  wire                          sys_clk_n,
    input  wire                          clk_ref_i,
    input  wire                          sys_rst_n,
    output wire                          init_calib_complete,

    // DDR3 SODIMM
    inout  wire [DQ_WIDTH-1:0]           ddr3_dq,
    inout  wire [DQ_WIDTH/8-1:0]         ddr3_dqs_p,
    inout  wire [DQ_WIDTH/8-1:0]         ddr3_dqs_n,
    output wire [ROW_WIDTH-1:0]          ddr3_addr,
    output wire [BANK_WIDTH-1:0]         ddr3_ba,
    output wire                          ddr3_ras_n,
    output wire                          ddr3_cas_n,
    output wire                          ddr3_we_n,
    output wire                          ddr3_reset_n,
    output wire [0:0]                    ddr3_ck_p,
    output wire [0:0]                    ddr3_ck_n,
    output wire [RANKS-1:0]              ddr3_cke,
    output wire [RANKS-1:0]              ddr3_cs_n,
    output wire [DQ_WIDTH/8-1:0]         ddr3_dm,
    output wire [RANKS-1:0]              ddr3_odt
);

wire sys_clk_i;
wire ui_clk;
wire ui_clk_sync_rst;

// the MIG's system clock, unbuffered in its project: the IBUFDS is here
// (nrl_ddr.xdc routes its output to the MIG's PLL over the backbone)
IBUFDS #(
    .DIFF_TERM("FALSE"),
    .IBUF_LOW_PWR("FALSE")
)
sys_clk_ibufds (
    .I(sys_clk_p),
    .IB(sys_clk_n),
    .O(sys_clk_i)
);
wire mmcm_locked;
reg ui_resetn_reg;

// the MIG's AXI reset, and the converter's master side reset, on ui_clk
always @(posedge ui_clk) begin
    ui_resetn_reg <= !ui_clk_sync_rst && mmcm_locked;
end

wire [AXI_ID_WIDTH-1:0]       mig_awid;
wire [AXI_ADDR_WIDTH-1:0]     mig_awaddr;
wire [7:0]                    mig_awlen;
wire [2:0]                    mig_awsize;
wire [1:0]                    mig_awburst;
wire                         mig_awlock;
wire [3:0]                    mig_awcache;
wire [2:0]                    mig_awprot;
wire [3:0]                    mig_awqos;
wire                         mig_awvalid;
wire                         mig_awready;
wire [511:0]                  mig_wdata;
wire [63:0]                   mig_wstrb;
wire                         mig_wlast;
wire                         mig_wvalid;
wire                         mig_wready;
wire [AXI_ID_WIDTH-1:0]       mig_bid;
wire [1:0]                    mig_bresp;
wire                         mig_bvalid;
wire                         mig_bready;
wire [AXI_ID_WIDTH-1:0]       mig_arid;
wire [AXI_ADDR_WIDTH-1:0]     mig_araddr;
wire [7:0]                    mig_arlen;
wire [2:0]                    mig_arsize;
wire [1:0]                    mig_arburst;
wire                         mig_arlock;
wire [3:0]                    mig_arcache;
wire [2:0]                    mig_arprot;
wire [3:0]                    mig_arqos;
wire                         mig_arvalid;
wire                         mig_arready;
wire [AXI_ID_WIDTH-1:0]       mig_rid;
wire [511:0]                  mig_rdata;
wire [1:0]                    mig_rresp;
wire                         mig_rlast;
wire                         mig_rvalid;
wire                         mig_rready;

nrl_rpl_axi_cc
cc_inst (
    .s_axi_aclk(axis_aclk),
    .s_axi_aresetn(axis_resetn),
    .s_axi_awid(s_axi_awid),
    .s_axi_awaddr(s_axi_awaddr),
    .s_axi_awlen(s_axi_awlen),
    .s_axi_awsize(s_axi_awsize),
    .s_axi_awburst(s_axi_awburst),
    .s_axi_awlock(s_axi_awlock),
    .s_axi_awcache(s_axi_awcache),
    .s_axi_awprot(s_axi_awprot),
    .s_axi_awqos(s_axi_awqos),
    .s_axi_awvalid(s_axi_awvalid),
    .s_axi_awready(s_axi_awready),
    .s_axi_wdata(s_axi_wdata),
    .s_axi_wstrb(s_axi_wstrb),
    .s_axi_wlast(s_axi_wlast),
    .s_axi_wvalid(s_axi_wvalid),
    .s_axi_wready(s_axi_wready),
    .s_axi_bid(s_axi_bid),
    .s_axi_bresp(s_axi_bresp),
    .s_axi_bvalid(s_axi_bvalid),
    .s_axi_bready(s_axi_bready),
    .s_axi_arid(s_axi_arid),
    .s_axi_araddr(s_axi_araddr),
    .s_axi_arlen(s_axi_arlen),
    .s_axi_arsize(s_axi_arsize),
    .s_axi_arburst(s_axi_arburst),
    .s_axi_arlock(s_axi_arlock),
    .s_axi_arcache(s_axi_arcache),
    .s_axi_arprot(s_axi_arprot),
    .s_axi_arqos(s_axi_arqos),
    .s_axi_arvalid(s_axi_arvalid),
    .s_axi_arready(s_axi_arready),
    .s_axi_rid(s_axi_rid),
    .s_axi_rdata(s_axi_rdata),
    .s_axi_rresp(s_axi_rresp),
    .s_axi_rlast(s_axi_rlast),
    .s_axi_rvalid(s_axi_rvalid),
    .s_axi_rready(s_axi_rready),
    .s_axi_awregion(4'd0),
    .s_axi_arregion(4'd0),
    .m_axi_aclk(ui_clk),
    .m_axi_aresetn(ui_resetn_reg),
    .m_axi_awid(mig_awid),
    .m_axi_awaddr(mig_awaddr),
    .m_axi_awlen(mig_awlen),
    .m_axi_awsize(mig_awsize),
    .m_axi_awburst(mig_awburst),
    .m_axi_awlock(mig_awlock),
    .m_axi_awcache(mig_awcache),
    .m_axi_awprot(mig_awprot),
    .m_axi_awqos(mig_awqos),
    .m_axi_awvalid(mig_awvalid),
    .m_axi_awready(mig_awready),
    .m_axi_wdata(mig_wdata),
    .m_axi_wstrb(mig_wstrb),
    .m_axi_wlast(mig_wlast),
    .m_axi_wvalid(mig_wvalid),
    .m_axi_wready(mig_wready),
    .m_axi_bid(mig_bid),
    .m_axi_bresp(mig_bresp),
    .m_axi_bvalid(mig_bvalid),
    .m_axi_bready(mig_bready),
    .m_axi_arid(mig_arid),
    .m_axi_araddr(mig_araddr),
    .m_axi_arlen(mig_arlen),
    .m_axi_arsize(mig_arsize),
    .m_axi_arburst(mig_arburst),
    .m_axi_arlock(mig_arlock),
    .m_axi_arcache(mig_arcache),
    .m_axi_arprot(mig_arprot),
    .m_axi_arqos(mig_arqos),
    .m_axi_arvalid(mig_arvalid),
    .m_axi_arready(mig_arready),
    .m_axi_rid(mig_rid),
    .m_axi_rdata(mig_rdata),
    .m_axi_rresp(mig_rresp),
    .m_axi_rlast(mig_rlast),
    .m_axi_rvalid(mig_rvalid),
    .m_axi_rready(mig_rready),
    .m_axi_awregion(),
    .m_axi_arregion()
);

nrl_mig
mig_inst (
    .sys_clk_i(sys_clk_i),
    .clk_ref_i(clk_ref_i),
    .sys_rst(!sys_rst_n),
    .device_temp(),
    .ddr3_dq(ddr3_dq),
    .ddr3_dqs_p(ddr3_dqs_p),
    .ddr3_dqs_n(ddr3_dqs_n),
    .ddr3_addr(ddr3_addr),
    .ddr3_ba(ddr3_ba),
    .ddr3_ras_n(ddr3_ras_n),
    .ddr3_cas_n(ddr3_cas_n),
    .ddr3_we_n(ddr3_we_n),
    .ddr3_reset_n(ddr3_reset_n),
    .ddr3_ck_p(ddr3_ck_p),
    .ddr3_ck_n(ddr3_ck_n),
    .ddr3_cke(ddr3_cke),
    .ddr3_cs_n(ddr3_cs_n),
    .ddr3_dm(ddr3_dm),
    .ddr3_odt(ddr3_odt),
    .ui_clk(ui_clk),
    .ui_clk_sync_rst(ui_clk_sync_rst),
    .mmcm_locked(mmcm_locked),
    .aresetn(ui_resetn_reg),
    .app_sr_req(1'b0),
    .app_ref_req(1'b0),
    .app_zq_req(1'b0),
    .app_sr_active(),
    .app_ref_ack(),
    .app_zq_ack(),
    .s_axi_awid(mig_awid),
    .s_axi_awaddr(mig_awaddr),
    .s_axi_awlen(mig_awlen),
    .s_axi_awsize(mig_awsize),
    .s_axi_awburst(mig_awburst),
    .s_axi_awlock(mig_awlock),
    .s_axi_awcache(mig_awcache),
    .s_axi_awprot(mig_awprot),
    .s_axi_awqos(mig_awqos),
    .s_axi_awvalid(mig_awvalid),
    .s_axi_awready(mig_awready),
    .s_axi_wdata(mig_wdata),
    .s_axi_wstrb(mig_wstrb),
    .s_axi_wlast(mig_wlast),
    .s_axi_wvalid(mig_wvalid),
    .s_axi_wready(mig_wready),
    .s_axi_bid(mig_bid),
    .s_axi_bresp(mig_bresp),
    .s_axi_bvalid(mig_bvalid),
    .s_axi_bready(mig_bready),
    .s_axi_arid(mig_arid),
    .s_axi_araddr(mig_araddr),
    .s_axi_arlen(mig_arlen),
    .s_axi_arsize(mig_arsize),
    .s_axi_arburst(mig_arburst),
    .s_axi_arlock(mig_arlock),
    .s_axi_arcache(mig_arcache),
    .s_axi_arprot(mig_arprot),
    .s_axi_arqos(mig_arqos),
    .s_axi_arvalid(mig_arvalid),
    .s_axi_arready(mig_arready),
    .s_axi_rid(mig_rid),
    .s_axi_rdata(mig_rdata),
    .s_axi_rresp(mig_rresp),
    .s_axi_rlast(mig_rlast),
    .s_axi_rvalid(mig_rvalid),
    .s_axi_rready(mig_rready),
    .init_calib_complete(init_calib_complete)
);

endmodule

`resetall
