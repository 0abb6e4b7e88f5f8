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
 * NetFPGA SUME user datapath of the netfpga-rl switch
 *
 * Drop-in replacement for nf_datapath of the SUME reference_switch project
 * (same ports and parameters; build.tcl renames the instance's module in
 * the project's top.v), plus the replay record store's AXI4 master
 * m_axi_rpl_*, used only with RPL_REC_STORE = 1 (build.tcl --ddr connects
 * it to the DDR3 controller, hw/boards/sume/nf_nrl_ddr.v; left unconnected
 * otherwise). Structure, as in nf_datapath:
 *
 *   s_axis_0..3 (10G MAC RX), s_axis_4 (DMA)
 *        |
 *   input arbiter      nrl_axis_merge, 5 inputs, packet-granular round robin
 *        |
 *   nrl_switch         classifier/output port lookup, grad_agg, replay_engine,
 *        |             output merge; sets TUSER[31:24]
 *   output queues      nf_nrl_output_queues: a BRAM packet FIFO per port,
 *        |             fan-out by TUSER[31:24], tail drop, never backpressures
 *   m_axis_0..3 (10G MAC TX), m_axis_4 (DMA)
 *
 * SUME conventions are adapted here, once: the active-low axis_resetn /
 * axi_resetn become the active-high synchronous rst of the netfpga-rl RTL
 * (registered), the register port S0_AXI (the input arbiter's window in
 * the reference design, at 0x44010000) carries the switch's register
 * map (its low 16 address bits: a 12-bit offset in a job page, bits 15:12
 * the page, docs/protocol.md section 11; the switch serves JOBS jobs, 1 by
 * default, so an address outside pages 0 .. JOBS-1 answers SLVERR; the
 * reference's M01 window is 4 KB, page 0 alone: build.tcl --param JOBS=N
 * widens it to 64 KB, jobs_window.tcl), and S1_AXI/S2_AXI (output port
 * lookup and output queues windows) answer with zeros. The whole design runs on
 * axis_aclk: in the reference top.v axi_aclk is the same 200 MHz clock
 * (clk_200), the AXI interconnect in control_sub crossing from the 100 MHz
 * AXI-Lite domain. A design that feeds a different axi_aclk needs an AXI
 * clock converter in front of S0_AXI.
 */
module nf_nrl_top #
(
    // Width of the AXI4-Lite data in bits
    parameter C_S_AXI_DATA_WIDTH   = 32,
    // Width of the AXI4-Lite address in bits (the low 16 are decoded)
    parameter C_S_AXI_ADDR_WIDTH   = 32,
    // Width of the master AXI stream data in bits (SUME: 256)
    parameter C_M_AXIS_DATA_WIDTH  = 256,
    // Width of the slave AXI stream data in bits (SUME: 256)
    parameter C_S_AXIS_DATA_WIDTH  = 256,
    // Width of the master AXI stream tuser in bits (SUME: 128)
    parameter C_M_AXIS_TUSER_WIDTH = 128,
    // Width of the slave AXI stream tuser in bits (SUME: 128)
    parameter C_S_AXIS_TUSER_WIDTH = 128,
    // Number of output queues (4 MAC ports + DMA)
    parameter NUM_QUEUES           = 5,
    // log2 of each output queue's depth in beats
    parameter OQ_ADDR_WIDTH        = 9,
    // Value of the BUILD_HASH register (build.tcl sets it from git)
    parameter BUILD_HASH           = 32'd0,
    // Aggregation slot memory depth (AGG_MAX_SLOTS)
    parameter AGG_MAX_SLOTS        = 64,
    // Largest elements per aggregation packet (AGG_MAX_ELEMS)
    parameter AGG_MAX_ELEMS        = 352,
    // Replay capacity in records (RPL_CAPACITY)
    parameter RPL_CAPACITY         = 16384,
    // Replay record size in bytes (RPL_RECORD_BYTES)
    parameter RPL_RECORD_BYTES     = 128,
    // Replay record store: 0 = block RAM, 1 = DDR3 through m_axi_rpl_* (build.tcl --ddr)
    parameter RPL_REC_STORE        = 0,
    // Width of the replay AXI4 master address (RPL_REC_STORE = 1)
    parameter RPL_AXI_ADDR_WIDTH   = 32,
    // Width of the replay AXI4 master IDs (RPL_REC_STORE = 1)
    parameter RPL_AXI_ID_WIDTH     = 1,
    // Byte address of replay record 0 (RPL_REC_STORE = 1)
    parameter RPL_AXI_BASE_ADDR    = 0,
    // Jobs served at once (nrl_switch JOBS, 1 to 8): with JOBS > 1 the register window
    // must be 64 KB (build.tcl --param JOBS=N widens the reference's 4 KB; see above)
    parameter JOBS                 = 1
)
(
    // Datapath clock and reset (SUME: clk_200, active low)
    input  wire                              axis_aclk,
    input  wire                              axis_resetn,
    // Register clock and reset (SUME: the same clk_200; see above)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                              axi_aclk,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                              axi_resetn,

    // AXI4-Lite slave S0
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S0_AXI_AWADDR,  // bits 15:0 decoded
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                              S0_AXI_AWVALID,
    input  wire [C_S_AXI_DATA_WIDTH-1:0]     S0_AXI_WDATA,
    input  wire [C_S_AXI_DATA_WIDTH/8-1:0]   S0_AXI_WSTRB,
    input  wire                              S0_AXI_WVALID,
    input  wire                              S0_AXI_BREADY,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S0_AXI_ARADDR,  // bits 15:0 decoded
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                              S0_AXI_ARVALID,
    input  wire                              S0_AXI_RREADY,
    output wire                              S0_AXI_ARREADY,
    output wire [C_S_AXI_DATA_WIDTH-1:0]     S0_AXI_RDATA,
    output wire [1:0]                        S0_AXI_RRESP,
    output wire                              S0_AXI_RVALID,
    output wire                              S0_AXI_WREADY,
    output wire [1:0]                        S0_AXI_BRESP,
    output wire                              S0_AXI_BVALID,
    output wire                              S0_AXI_AWREADY,
    // AXI4-Lite slave S1
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S1_AXI_AWADDR,
    input  wire                              S1_AXI_AWVALID,
    input  wire [C_S_AXI_DATA_WIDTH-1:0]     S1_AXI_WDATA,
    input  wire [C_S_AXI_DATA_WIDTH/8-1:0]   S1_AXI_WSTRB,
    input  wire                              S1_AXI_WVALID,
    input  wire                              S1_AXI_BREADY,
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S1_AXI_ARADDR,
    input  wire                              S1_AXI_ARVALID,
    input  wire                              S1_AXI_RREADY,
    output wire                              S1_AXI_ARREADY,
    output wire [C_S_AXI_DATA_WIDTH-1:0]     S1_AXI_RDATA,
    output wire [1:0]                        S1_AXI_RRESP,
    output wire                              S1_AXI_RVALID,
    output wire                              S1_AXI_WREADY,
    output wire [1:0]                        S1_AXI_BRESP,
    output wire                              S1_AXI_BVALID,
    output wire                              S1_AXI_AWREADY,
    // AXI4-Lite slave S2
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S2_AXI_AWADDR,
    input  wire                              S2_AXI_AWVALID,
    input  wire [C_S_AXI_DATA_WIDTH-1:0]     S2_AXI_WDATA,
    input  wire [C_S_AXI_DATA_WIDTH/8-1:0]   S2_AXI_WSTRB,
    input  wire                              S2_AXI_WVALID,
    input  wire                              S2_AXI_BREADY,
    input  wire [C_S_AXI_ADDR_WIDTH-1:0]     S2_AXI_ARADDR,
    input  wire                              S2_AXI_ARVALID,
    input  wire                              S2_AXI_RREADY,
    output wire                              S2_AXI_ARREADY,
    output wire [C_S_AXI_DATA_WIDTH-1:0]     S2_AXI_RDATA,
    output wire [1:0]                        S2_AXI_RRESP,
    output wire                              S2_AXI_RVALID,
    output wire                              S2_AXI_WREADY,
    output wire [1:0]                        S2_AXI_BRESP,
    output wire                              S2_AXI_BVALID,
    output wire                              S2_AXI_AWREADY,

    // Slave stream ports (from the RX queues: 4 MAC ports, DMA)
    input  wire [C_S_AXIS_DATA_WIDTH-1:0]    s_axis_0_tdata,
    input  wire [C_S_AXIS_DATA_WIDTH/8-1:0]  s_axis_0_tkeep,
    input  wire [C_S_AXIS_TUSER_WIDTH-1:0]   s_axis_0_tuser,
    input  wire                              s_axis_0_tvalid,
    output wire                              s_axis_0_tready,
    input  wire                              s_axis_0_tlast,
    input  wire [C_S_AXIS_DATA_WIDTH-1:0]    s_axis_1_tdata,
    input  wire [C_S_AXIS_DATA_WIDTH/8-1:0]  s_axis_1_tkeep,
    input  wire [C_S_AXIS_TUSER_WIDTH-1:0]   s_axis_1_tuser,
    input  wire                              s_axis_1_tvalid,
    output wire                              s_axis_1_tready,
    input  wire                              s_axis_1_tlast,
    input  wire [C_S_AXIS_DATA_WIDTH-1:0]    s_axis_2_tdata,
    input  wire [C_S_AXIS_DATA_WIDTH/8-1:0]  s_axis_2_tkeep,
    input  wire [C_S_AXIS_TUSER_WIDTH-1:0]   s_axis_2_tuser,
    input  wire                              s_axis_2_tvalid,
    output wire                              s_axis_2_tready,
    input  wire                              s_axis_2_tlast,
    input  wire [C_S_AXIS_DATA_WIDTH-1:0]    s_axis_3_tdata,
    input  wire [C_S_AXIS_DATA_WIDTH/8-1:0]  s_axis_3_tkeep,
    input  wire [C_S_AXIS_TUSER_WIDTH-1:0]   s_axis_3_tuser,
    input  wire                              s_axis_3_tvalid,
    output wire                              s_axis_3_tready,
    input  wire                              s_axis_3_tlast,
    input  wire [C_S_AXIS_DATA_WIDTH-1:0]    s_axis_4_tdata,
    input  wire [C_S_AXIS_DATA_WIDTH/8-1:0]  s_axis_4_tkeep,
    input  wire [C_S_AXIS_TUSER_WIDTH-1:0]   s_axis_4_tuser,
    input  wire                              s_axis_4_tvalid,
    output wire                              s_axis_4_tready,
    input  wire                              s_axis_4_tlast,

    // Master stream ports (to the TX queues: 4 MAC ports, DMA)
    output wire [C_M_AXIS_DATA_WIDTH-1:0]    m_axis_0_tdata,
    output wire [C_M_AXIS_DATA_WIDTH/8-1:0]  m_axis_0_tkeep,
    output wire [C_M_AXIS_TUSER_WIDTH-1:0]   m_axis_0_tuser,
    output wire                              m_axis_0_tvalid,
    input  wire                              m_axis_0_tready,
    output wire                              m_axis_0_tlast,
    output wire [C_M_AXIS_DATA_WIDTH-1:0]    m_axis_1_tdata,
    output wire [C_M_AXIS_DATA_WIDTH/8-1:0]  m_axis_1_tkeep,
    output wire [C_M_AXIS_TUSER_WIDTH-1:0]   m_axis_1_tuser,
    output wire                              m_axis_1_tvalid,
    input  wire                              m_axis_1_tready,
    output wire                              m_axis_1_tlast,
    output wire [C_M_AXIS_DATA_WIDTH-1:0]    m_axis_2_tdata,
    output wire [C_M_AXIS_DATA_WIDTH/8-1:0]  m_axis_2_tkeep,
    output wire [C_M_AXIS_TUSER_WIDTH-1:0]   m_axis_2_tuser,
    output wire                              m_axis_2_tvalid,
    input  wire                              m_axis_2_tready,
    output wire                              m_axis_2_tlast,
    output wire [C_M_AXIS_DATA_WIDTH-1:0]    m_axis_3_tdata,
    output wire [C_M_AXIS_DATA_WIDTH/8-1:0]  m_axis_3_tkeep,
    output wire [C_M_AXIS_TUSER_WIDTH-1:0]   m_axis_3_tuser,
    output wire                              m_axis_3_tvalid,
    input  wire                              m_axis_3_tready,
    output wire                              m_axis_3_tlast,
    output wire [C_M_AXIS_DATA_WIDTH-1:0]    m_axis_4_tdata,
    output wire [C_M_AXIS_DATA_WIDTH/8-1:0]  m_axis_4_tkeep,
    output wire [C_M_AXIS_TUSER_WIDTH-1:0]   m_axis_4_tuser,
    output wire                              m_axis_4_tvalid,
    input  wire                              m_axis_4_tready,
    output wire                              m_axis_4_tlast,

    // Replay record store AXI4 master, 512-bit, on axis_aclk (RPL_REC_STORE = 1:
    // build.tcl --ddr connects it to the DDR3 MIG through nf_nrl_ddr; outputs
    // held at 0 and inputs unused with RPL_REC_STORE = 0)
    output wire [RPL_AXI_ID_WIDTH-1:0]       m_axi_rpl_awid,
    output wire [RPL_AXI_ADDR_WIDTH-1:0]     m_axi_rpl_awaddr,
    output wire [7:0]                        m_axi_rpl_awlen,
    output wire [2:0]                        m_axi_rpl_awsize,
    output wire [1:0]                        m_axi_rpl_awburst,
    output wire                              m_axi_rpl_awlock,
    output wire [3:0]                        m_axi_rpl_awcache,
    output wire [2:0]                        m_axi_rpl_awprot,
    output wire [3:0]                        m_axi_rpl_awqos,
    output wire                              m_axi_rpl_awvalid,
    input  wire                              m_axi_rpl_awready,
    output wire [511:0]                      m_axi_rpl_wdata,
    output wire [63:0]                       m_axi_rpl_wstrb,
    output wire                              m_axi_rpl_wlast,
    output wire                              m_axi_rpl_wvalid,
    input  wire                              m_axi_rpl_wready,
    input  wire [RPL_AXI_ID_WIDTH-1:0]       m_axi_rpl_bid,
    input  wire [1:0]                        m_axi_rpl_bresp,
    input  wire                              m_axi_rpl_bvalid,
    output wire                              m_axi_rpl_bready,
    output wire [RPL_AXI_ID_WIDTH-1:0]       m_axi_rpl_arid,
    output wire [RPL_AXI_ADDR_WIDTH-1:0]     m_axi_rpl_araddr,
    output wire [7:0]                        m_axi_rpl_arlen,
    output wire [2:0]                        m_axi_rpl_arsize,
    output wire [1:0]                        m_axi_rpl_arburst,
    output wire                              m_axi_rpl_arlock,
    output wire [3:0]                        m_axi_rpl_arcache,
    output wire [2:0]                        m_axi_rpl_arprot,
    output wire [3:0]                        m_axi_rpl_arqos,
    output wire                              m_axi_rpl_arvalid,
    input  wire                              m_axi_rpl_arready,
    input  wire [RPL_AXI_ID_WIDTH-1:0]       m_axi_rpl_rid,
    input  wire [511:0]                      m_axi_rpl_rdata,
    input  wire [1:0]                        m_axi_rpl_rresp,
    input  wire                              m_axi_rpl_rlast,
    input  wire                              m_axi_rpl_rvalid,
    output wire                              m_axi_rpl_rready
);

localparam DW = C_S_AXIS_DATA_WIDTH;
localparam KW = DW/8;
localparam UW = C_S_AXIS_TUSER_WIDTH;

// bus width assertions
initial begin
    if (C_S_AXIS_DATA_WIDTH != C_M_AXIS_DATA_WIDTH || (DW != 256 && DW != 512)) begin
        $error("Error: stream data widths must be equal, 256 or 512 (instance %m)");
        $finish;
    end

    if (C_S_AXIS_TUSER_WIDTH != 128 || C_M_AXIS_TUSER_WIDTH != 128) begin
        $error("Error: TUSER must be 128 bits (SUME layout) (instance %m)");
        $finish;
    end

    if (C_S_AXI_DATA_WIDTH != 32 || C_S_AXI_ADDR_WIDTH < 16) begin
        $error("Error: AXI4-Lite must be 32-bit data, at least 16-bit address (instance %m)");
        $finish;
    end

    if (NUM_QUEUES != 5) begin
        $error("Error: NUM_QUEUES must be 5 (instance %m)");
        $finish;
    end
end

// SUME active-low resets to one registered active-high reset
reg rst_reg;

always @(posedge axis_aclk) begin
    rst_reg <= !axis_resetn || !axi_resetn;
end

// input arbiter -> switch
wire [DW-1:0] arb_tdata;
wire [KW-1:0] arb_tkeep;
wire          arb_tvalid;
wire          arb_tready;
wire          arb_tlast;
wire [UW-1:0] arb_tuser;

// switch -> output queues
wire [DW-1:0] sw_tdata;
wire [KW-1:0] sw_tkeep;
wire          sw_tvalid;
wire          sw_tready;
wire          sw_tlast;
wire [UW-1:0] sw_tuser;

// output queues
wire [5*DW-1:0] oq_tdata;
wire [5*KW-1:0] oq_tkeep;
wire [4:0]      oq_tvalid;
wire [4:0]      oq_tlast;
wire [5*UW-1:0] oq_tuser;

nrl_axis_merge #(
    .S_COUNT(5),
    .DATA_WIDTH(DW),
    .KEEP_WIDTH(KW),
    .USER_WIDTH(UW)
)
input_arbiter_inst (
    .clk(axis_aclk),
    .rst(rst_reg),
    .s_axis_tdata({s_axis_4_tdata, s_axis_3_tdata, s_axis_2_tdata, s_axis_1_tdata, s_axis_0_tdata}),
    .s_axis_tkeep({s_axis_4_tkeep, s_axis_3_tkeep, s_axis_2_tkeep, s_axis_1_tkeep, s_axis_0_tkeep}),
    .s_axis_tvalid({s_axis_4_tvalid, s_axis_3_tvalid, s_axis_2_tvalid, s_axis_1_tvalid, s_axis_0_tvalid}),
    .s_axis_tready({s_axis_4_tready, s_axis_3_tready, s_axis_2_tready, s_axis_1_tready, s_axis_0_tready}),
    .s_axis_tlast({s_axis_4_tlast, s_axis_3_tlast, s_axis_2_tlast, s_axis_1_tlast, s_axis_0_tlast}),
    .s_axis_tuser({s_axis_4_tuser, s_axis_3_tuser, s_axis_2_tuser, s_axis_1_tuser, s_axis_0_tuser}),
    .m_axis_tdata(arb_tdata),
    .m_axis_tkeep(arb_tkeep),
    .m_axis_tvalid(arb_tvalid),
    .m_axis_tready(arb_tready),
    .m_axis_tlast(arb_tlast),
    .m_axis_tuser(arb_tuser)
);

nrl_switch #(
    .DATA_WIDTH(DW),
    .KEEP_WIDTH(KW),
    .USER_WIDTH(UW),
    .AXIL_ADDR_WIDTH(16),
    .BUILD_HASH(BUILD_HASH),
    .AGG_MAX_SLOTS(AGG_MAX_SLOTS),
    .AGG_MAX_ELEMS(AGG_MAX_ELEMS),
    .RPL_CAPACITY(RPL_CAPACITY),
    .RPL_RECORD_BYTES(RPL_RECORD_BYTES),
    .RPL_REC_STORE(RPL_REC_STORE),
    .RPL_AXI_ADDR_WIDTH(RPL_AXI_ADDR_WIDTH),
    .RPL_AXI_ID_WIDTH(RPL_AXI_ID_WIDTH),
    .RPL_AXI_BASE_ADDR(RPL_AXI_BASE_ADDR),
    .JOBS(JOBS)
)
nrl_switch_inst (
    .clk(axis_aclk),
    .rst(rst_reg),
    .s_axis_tdata(arb_tdata),
    .s_axis_tkeep(arb_tkeep),
    .s_axis_tvalid(arb_tvalid),
    .s_axis_tready(arb_tready),
    .s_axis_tlast(arb_tlast),
    .s_axis_tuser(arb_tuser),
    .m_axis_tdata(sw_tdata),
    .m_axis_tkeep(sw_tkeep),
    .m_axis_tvalid(sw_tvalid),
    .m_axis_tready(sw_tready),
    .m_axis_tlast(sw_tlast),
    .m_axis_tuser(sw_tuser),
    .s_axil_awaddr(S0_AXI_AWADDR[15:0]),
    .s_axil_awprot(3'b000),
    .s_axil_awvalid(S0_AXI_AWVALID),
    .s_axil_awready(S0_AXI_AWREADY),
    .s_axil_wdata(S0_AXI_WDATA),
    .s_axil_wstrb(S0_AXI_WSTRB),
    .s_axil_wvalid(S0_AXI_WVALID),
    .s_axil_wready(S0_AXI_WREADY),
    .s_axil_bresp(S0_AXI_BRESP),
    .s_axil_bvalid(S0_AXI_BVALID),
    .s_axil_bready(S0_AXI_BREADY),
    .s_axil_araddr(S0_AXI_ARADDR[15:0]),
    .s_axil_arprot(3'b000),
    .s_axil_arvalid(S0_AXI_ARVALID),
    .s_axil_arready(S0_AXI_ARREADY),
    .s_axil_rdata(S0_AXI_RDATA),
    .s_axil_rresp(S0_AXI_RRESP),
    .s_axil_rvalid(S0_AXI_RVALID),
    .s_axil_rready(S0_AXI_RREADY),
    .m_axi_rpl_awid(m_axi_rpl_awid),
    .m_axi_rpl_awaddr(m_axi_rpl_awaddr),
    .m_axi_rpl_awlen(m_axi_rpl_awlen),
    .m_axi_rpl_awsize(m_axi_rpl_awsize),
    .m_axi_rpl_awburst(m_axi_rpl_awburst),
    .m_axi_rpl_awlock(m_axi_rpl_awlock),
    .m_axi_rpl_awcache(m_axi_rpl_awcache),
    .m_axi_rpl_awprot(m_axi_rpl_awprot),
    .m_axi_rpl_awqos(m_axi_rpl_awqos),
    .m_axi_rpl_awvalid(m_axi_rpl_awvalid),
    .m_axi_rpl_awready(m_axi_rpl_awready),
    .m_axi_rpl_wdata(m_axi_rpl_wdata),
    .m_axi_rpl_wstrb(m_axi_rpl_wstrb),
    .m_axi_rpl_wlast(m_axi_rpl_wlast),
    .m_axi_rpl_wvalid(m_axi_rpl_wvalid),
    .m_axi_rpl_wready(m_axi_rpl_wready),
    .m_axi_rpl_bid(m_axi_rpl_bid),
    .m_axi_rpl_bresp(m_axi_rpl_bresp),
    .m_axi_rpl_bvalid(m_axi_rpl_bvalid),
    .m_axi_rpl_bready(m_axi_rpl_bready),
    .m_axi_rpl_arid(m_axi_rpl_arid),
    .m_axi_rpl_araddr(m_axi_rpl_araddr),
    .m_axi_rpl_arlen(m_axi_rpl_arlen),
    .m_axi_rpl_arsize(m_axi_rpl_arsize),
    .m_axi_rpl_arburst(m_axi_rpl_arburst),
    .m_axi_rpl_arlock(m_axi_rpl_arlock),
    .m_axi_rpl_arcache(m_axi_rpl_arcache),
    .m_axi_rpl_arprot(m_axi_rpl_arprot),
    .m_axi_rpl_arqos(m_axi_rpl_arqos),
    .m_axi_rpl_arvalid(m_axi_rpl_arvalid),
    .m_axi_rpl_arready(m_axi_rpl_arready),
    .m_axi_rpl_rid(m_axi_rpl_rid),
    .m_axi_rpl_rdata(m_axi_rpl_rdata),
    .m_axi_rpl_rresp(m_axi_rpl_rresp),
    .m_axi_rpl_rlast(m_axi_rpl_rlast),
    .m_axi_rpl_rvalid(m_axi_rpl_rvalid),
    .m_axi_rpl_rready(m_axi_rpl_rready)
);

/* verilator lint_off PINCONNECTEMPTY */
nf_nrl_output_queues #(
    .NUM_QUEUES(NUM_QUEUES),
    .DATA_WIDTH(DW),
    .KEEP_WIDTH(KW),
    .USER_WIDTH(UW),
    .QUEUE_ADDR_WIDTH(OQ_ADDR_WIDTH)
)
output_queues_inst (
    .clk(axis_aclk),
    .rst(rst_reg),
    .s_axis_tdata(sw_tdata),
    .s_axis_tkeep(sw_tkeep),
    .s_axis_tvalid(sw_tvalid),
    .s_axis_tready(sw_tready),
    .s_axis_tlast(sw_tlast),
    .s_axis_tuser(sw_tuser),
    .m_axis_tdata(oq_tdata),
    .m_axis_tkeep(oq_tkeep),
    .m_axis_tvalid(oq_tvalid),
    .m_axis_tready({m_axis_4_tready, m_axis_3_tready, m_axis_2_tready, m_axis_1_tready, m_axis_0_tready}),
    .m_axis_tlast(oq_tlast),
    .m_axis_tuser(oq_tuser),
    .drop_count()
);
/* verilator lint_on PINCONNECTEMPTY */

assign m_axis_0_tdata  = oq_tdata[0*DW +: DW];
assign m_axis_0_tkeep  = oq_tkeep[0*KW +: KW];
assign m_axis_0_tuser  = oq_tuser[0*UW +: UW];
assign m_axis_0_tvalid = oq_tvalid[0];
assign m_axis_0_tlast  = oq_tlast[0];
assign m_axis_1_tdata  = oq_tdata[1*DW +: DW];
assign m_axis_1_tkeep  = oq_tkeep[1*KW +: KW];
assign m_axis_1_tuser  = oq_tuser[1*UW +: UW];
assign m_axis_1_tvalid = oq_tvalid[1];
assign m_axis_1_tlast  = oq_tlast[1];
assign m_axis_2_tdata  = oq_tdata[2*DW +: DW];
assign m_axis_2_tkeep  = oq_tkeep[2*KW +: KW];
assign m_axis_2_tuser  = oq_tuser[2*UW +: UW];
assign m_axis_2_tvalid = oq_tvalid[2];
assign m_axis_2_tlast  = oq_tlast[2];
assign m_axis_3_tdata  = oq_tdata[3*DW +: DW];
assign m_axis_3_tkeep  = oq_tkeep[3*KW +: KW];
assign m_axis_3_tuser  = oq_tuser[3*UW +: UW];
assign m_axis_3_tvalid = oq_tvalid[3];
assign m_axis_3_tlast  = oq_tlast[3];
assign m_axis_4_tdata  = oq_tdata[4*DW +: DW];
assign m_axis_4_tkeep  = oq_tkeep[4*KW +: KW];
assign m_axis_4_tuser  = oq_tuser[4*UW +: UW];
assign m_axis_4_tvalid = oq_tvalid[4];
assign m_axis_4_tlast  = oq_tlast[4];

nf_nrl_axil_null #(
    .ADDR_WIDTH(C_S_AXI_ADDR_WIDTH),
    .DATA_WIDTH(C_S_AXI_DATA_WIDTH)
)
s1_axil_null_inst (
    .clk(axis_aclk),
    .rst(rst_reg),
    .s_axil_awaddr(S1_AXI_AWADDR),
    .s_axil_awvalid(S1_AXI_AWVALID),
    .s_axil_awready(S1_AXI_AWREADY),
    .s_axil_wdata(S1_AXI_WDATA),
    .s_axil_wstrb(S1_AXI_WSTRB),
    .s_axil_wvalid(S1_AXI_WVALID),
    .s_axil_wready(S1_AXI_WREADY),
    .s_axil_bresp(S1_AXI_BRESP),
    .s_axil_bvalid(S1_AXI_BVALID),
    .s_axil_bready(S1_AXI_BREADY),
    .s_axil_araddr(S1_AXI_ARADDR),
    .s_axil_arvalid(S1_AXI_ARVALID),
    .s_axil_arready(S1_AXI_ARREADY),
    .s_axil_rdata(S1_AXI_RDATA),
    .s_axil_rresp(S1_AXI_RRESP),
    .s_axil_rvalid(S1_AXI_RVALID),
    .s_axil_rready(S1_AXI_RREADY)
);

nf_nrl_axil_null #(
    .ADDR_WIDTH(C_S_AXI_ADDR_WIDTH),
    .DATA_WIDTH(C_S_AXI_DATA_WIDTH)
)
s2_axil_null_inst (
    .clk(axis_aclk),
    .rst(rst_reg),
    .s_axil_awaddr(S2_AXI_AWADDR),
    .s_axil_awvalid(S2_AXI_AWVALID),
    .s_axil_awready(S2_AXI_AWREADY),
    .s_axil_wdata(S2_AXI_WDATA),
    .s_axil_wstrb(S2_AXI_WSTRB),
    .s_axil_wvalid(S2_AXI_WVALID),
    .s_axil_wready(S2_AXI_WREADY),
    .s_axil_bresp(S2_AXI_BRESP),
    .s_axil_bvalid(S2_AXI_BVALID),
    .s_axil_bready(S2_AXI_BREADY),
    .s_axil_araddr(S2_AXI_ARADDR),
    .s_axil_arvalid(S2_AXI_ARVALID),
    .s_axil_arready(S2_AXI_ARREADY),
    .s_axil_rdata(S2_AXI_RDATA),
    .s_axil_rresp(S2_AXI_RRESP),
    .s_axil_rvalid(S2_AXI_RVALID),
    .s_axil_rready(S2_AXI_RREADY)
);

endmodule

`resetall
`default_nettype wire
