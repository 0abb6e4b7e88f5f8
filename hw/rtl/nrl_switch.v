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
 * netfpga-rl switch datapath
 *
 * The user datapath between SUME's input arbiter and output queues: one
 * arbitrated AXI4-Stream in, one out, TUSER in the SUME layout ([15:0]
 * length, [23:16] one-hot source port, [31:24] destination ports).
 *
 *   s_axis --> nrl_classifier --+-- L2 (learning, CNT_PASS) -------+
 *                               +-- agg --> grad_agg ------------+  |
 *                               +-- rpl --> replay_engine ----+  |  |
 *                                                             v  v  v
 *                                        nrl_axis_merge (packet round robin)
 *                                                             |
 *                                                          m_axis
 *
 * The classifier sends protocol frames (docs/protocol.md section 1, UDP
 * destination port from the UDP_PORT register) with opcodes 3..7 to the
 * replay engine and every other protocol frame to the aggregation engine;
 * all other traffic is switched like the SUME reference switch: its
 * nrl_l2_learn learns the source MAC of every frame and sends an ordinary
 * frame to its destination's learned port, or floods it to the MAC ports but
 * its source (broadcast, multicast, unknown destination), counted in
 * CNT_PASS (docs/architecture.md, L2 switching; aging period L2_AGE_FRAMES). Each engine sets the destination bitmap of what it emits.
 * The register space (hw/regs.yaml: 12-bit offsets in job pages of 0x1000
 * bytes, docs/protocol.md section 11) is split between the engines by
 * nrl_axil_split (see there and docs/architecture.md); the switch serves
 * JOBS jobs (1 to 8): a page at or above JOBS is no register and answers
 * SLVERR; a job register of page j reaches the engines at {j, offset}, and
 * the job table's rows (JOB_ID, JOB_ENABLE, the slot range, the replay
 * table) and its effects (slot_free, table_carve) go to both engines. With
 * JOBS = 1 the share is fixed (every record and slot, the engines' own
 * JOB_ID).
 */
module nrl_switch #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // Width of the AXI4-Lite address in bits, 12..32: bits 11:0 the register,
    // the bits above the job page (16: a 64 KB window, pages 0..15)
    parameter AXIL_ADDR_WIDTH = 16,
    // Width of the AXI4-Lite data in bits
    parameter AXIL_DATA_WIDTH = 32,
    // Width of the AXI4-Lite wstrb in bits
    parameter AXIL_STRB_WIDTH = AXIL_DATA_WIDTH/8,
    // Value of the BUILD_HASH register (first 32 bits of the git commit)
    parameter BUILD_HASH = 32'd0,
    // Aggregation slot memory depth, 1..64 (AGG_MAX_SLOTS)
    parameter AGG_MAX_SLOTS = 64,
    // Largest elements per packet P, a multiple of 16 in 16..352 (AGG_MAX_ELEMS)
    parameter AGG_MAX_ELEMS = 352,
    // Replay capacity C in records (power of two), RPL_CAPACITY
    parameter RPL_CAPACITY = 16384,
    // Replay record size R in bytes (multiple of 64), RPL_RECORD_BYTES
    parameter RPL_RECORD_BYTES = 128,
    // Replay record store: 0 = block RAM, 1 = external memory on m_axi_rpl_*
    parameter RPL_REC_STORE = 0,
    // Width of the replay AXI4 master address (RPL_REC_STORE = 1)
    parameter RPL_AXI_ADDR_WIDTH = 32,
    // Width of the replay AXI4 master IDs (RPL_REC_STORE = 1)
    parameter RPL_AXI_ID_WIDTH = 1,
    // Byte address of replay record 0 (RPL_REC_STORE = 1)
    parameter RPL_AXI_BASE_ADDR = 0,
    // Jobs served at once (JOBS), 1 to 8
    parameter JOBS = 1
)
(
    input  wire                        clk,
    input  wire                        rst,

    /*
     * AXI input (arbitrated ingress)
     */
    input  wire [DATA_WIDTH-1:0]       s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]       s_axis_tkeep,
    input  wire                        s_axis_tvalid,
    output wire                        s_axis_tready,
    input  wire                        s_axis_tlast,
    input  wire [USER_WIDTH-1:0]       s_axis_tuser,

    /*
     * AXI output (to the output queues)
     */
    output wire [DATA_WIDTH-1:0]       m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]       m_axis_tkeep,
    output wire                        m_axis_tvalid,
    input  wire                        m_axis_tready,
    output wire                        m_axis_tlast,
    output wire [USER_WIDTH-1:0]       m_axis_tuser,

    /*
     * AXI4-Lite slave (registers)
     */
    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_awaddr,
    input  wire [2:0]                  s_axil_awprot,
    input  wire                        s_axil_awvalid,
    output wire                        s_axil_awready,
    input  wire [AXIL_DATA_WIDTH-1:0]  s_axil_wdata,
    input  wire [AXIL_STRB_WIDTH-1:0]  s_axil_wstrb,
    input  wire                        s_axil_wvalid,
    output wire                        s_axil_wready,
    output wire [1:0]                  s_axil_bresp,
    output wire                        s_axil_bvalid,
    input  wire                        s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_araddr,
    input  wire [2:0]                  s_axil_arprot,
    input  wire                        s_axil_arvalid,
    output wire                        s_axil_arready,
    output wire [AXIL_DATA_WIDTH-1:0]  s_axil_rdata,
    output wire [1:0]                  s_axil_rresp,
    output wire                        s_axil_rvalid,
    input  wire                        s_axil_rready,

    /*
     * AXI4 master of the replay record store (RPL_REC_STORE = 1; outputs
     * held at 0 and inputs unused with RPL_REC_STORE = 0)
     */
    output wire [RPL_AXI_ID_WIDTH-1:0]     m_axi_rpl_awid,
    output wire [RPL_AXI_ADDR_WIDTH-1:0]   m_axi_rpl_awaddr,
    output wire [7:0]                      m_axi_rpl_awlen,
    output wire [2:0]                      m_axi_rpl_awsize,
    output wire [1:0]                      m_axi_rpl_awburst,
    output wire                            m_axi_rpl_awlock,
    output wire [3:0]                      m_axi_rpl_awcache,
    output wire [2:0]                      m_axi_rpl_awprot,
    output wire [3:0]                      m_axi_rpl_awqos,
    output wire                            m_axi_rpl_awvalid,
    input  wire                            m_axi_rpl_awready,
    output wire [511:0]                    m_axi_rpl_wdata,
    output wire [63:0]                     m_axi_rpl_wstrb,
    output wire                            m_axi_rpl_wlast,
    output wire                            m_axi_rpl_wvalid,
    input  wire                            m_axi_rpl_wready,
    input  wire [RPL_AXI_ID_WIDTH-1:0]     m_axi_rpl_bid,
    input  wire [1:0]                      m_axi_rpl_bresp,
    input  wire                            m_axi_rpl_bvalid,
    output wire                            m_axi_rpl_bready,
    output wire [RPL_AXI_ID_WIDTH-1:0]     m_axi_rpl_arid,
    output wire [RPL_AXI_ADDR_WIDTH-1:0]   m_axi_rpl_araddr,
    output wire [7:0]                      m_axi_rpl_arlen,
    output wire [2:0]                      m_axi_rpl_arsize,
    output wire [1:0]                      m_axi_rpl_arburst,
    output wire                            m_axi_rpl_arlock,
    output wire [3:0]                      m_axi_rpl_arcache,
    output wire [2:0]                      m_axi_rpl_arprot,
    output wire [3:0]                      m_axi_rpl_arqos,
    output wire                            m_axi_rpl_arvalid,
    input  wire                            m_axi_rpl_arready,
    input  wire [RPL_AXI_ID_WIDTH-1:0]     m_axi_rpl_rid,
    input  wire [511:0]                    m_axi_rpl_rdata,
    input  wire [1:0]                      m_axi_rpl_rresp,
    input  wire                            m_axi_rpl_rlast,
    input  wire                            m_axi_rpl_rvalid,
    output wire                            m_axi_rpl_rready
);

// bus width assertions
initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end

    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end

    if (USER_WIDTH != 128) begin
        $error("Error: USER_WIDTH must be 128 (SUME TUSER layout) (instance %m)");
        $finish;
    end
end

localparam JW = JOBS > 1 ? $clog2(JOBS) : 1;
localparam EAW = JOBS > 1 ? 12 + JW : 12;  // an engine's register address: {job, offset}

wire [15:0] udp_port;
wire [31:0] l2_age_frames;
wire        l2_age_load;
wire        stat_pass;

// classifier outputs
wire [DATA_WIDTH-1:0] l2_tdata,  agg_in_tdata,  rpl_in_tdata;
wire [KEEP_WIDTH-1:0] l2_tkeep,  agg_in_tkeep,  rpl_in_tkeep;
wire                  l2_tvalid, agg_in_tvalid, rpl_in_tvalid;
wire                  l2_tready, agg_in_tready, rpl_in_tready;
wire                  l2_tlast,  agg_in_tlast,  rpl_in_tlast;
wire [USER_WIDTH-1:0] l2_tuser,  agg_in_tuser,  rpl_in_tuser;

// engine outputs
wire [DATA_WIDTH-1:0] agg_out_tdata,  rpl_out_tdata;
wire [KEEP_WIDTH-1:0] agg_out_tkeep,  rpl_out_tkeep;
wire                  agg_out_tvalid, rpl_out_tvalid;
wire                  agg_out_tready, rpl_out_tready;
wire                  agg_out_tlast,  rpl_out_tlast;
wire [USER_WIDTH-1:0] agg_out_tuser,  rpl_out_tuser;

// the three merge inputs, each behind a skid buffer (registered tready)
wire [DATA_WIDTH-1:0] mg_l2_tdata,  mg_agg_tdata,  mg_rpl_tdata;
wire [KEEP_WIDTH-1:0] mg_l2_tkeep,  mg_agg_tkeep,  mg_rpl_tkeep;
wire                  mg_l2_tvalid, mg_agg_tvalid, mg_rpl_tvalid;
wire                  mg_l2_tready, mg_agg_tready, mg_rpl_tready;
wire                  mg_l2_tlast,  mg_agg_tlast,  mg_rpl_tlast;
wire [USER_WIDTH-1:0] mg_l2_tuser,  mg_agg_tuser,  mg_rpl_tuser;

// register buses to the engines
wire [11:0]                agg_axil_awaddr,  rpl_axil_awaddr;
wire [2:0]                 agg_axil_awprot,  rpl_axil_awprot;
wire                       agg_axil_awvalid, rpl_axil_awvalid;
wire                       agg_axil_awready, rpl_axil_awready;
wire [AXIL_DATA_WIDTH-1:0] agg_axil_wdata,   rpl_axil_wdata;
wire [AXIL_STRB_WIDTH-1:0] agg_axil_wstrb,   rpl_axil_wstrb;
wire                       agg_axil_wvalid,  rpl_axil_wvalid;
wire                       agg_axil_wready,  rpl_axil_wready;
wire [1:0]                 agg_axil_bresp,   rpl_axil_bresp;
wire                       agg_axil_bvalid,  rpl_axil_bvalid;
wire                       agg_axil_bready,  rpl_axil_bready;
wire [11:0]                agg_axil_araddr,  rpl_axil_araddr;
wire [2:0]                 agg_axil_arprot,  rpl_axil_arprot;
wire                       agg_axil_arvalid, rpl_axil_arvalid;
wire                       agg_axil_arready, rpl_axil_arready;
wire [AXIL_DATA_WIDTH-1:0] agg_axil_rdata,   rpl_axil_rdata;
wire [1:0]                 agg_axil_rresp,   rpl_axil_rresp;
wire                       agg_axil_rvalid,  rpl_axil_rvalid;
wire                       agg_axil_rready,  rpl_axil_rready;

nrl_classifier #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
classifier_inst (
    .clk(clk),
    .rst(rst),
    .udp_port(udp_port),
    .l2_age_frames(l2_age_frames),
    .l2_age_load(l2_age_load),
    .s_axis_tdata(s_axis_tdata),
    .s_axis_tkeep(s_axis_tkeep),
    .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready),
    .s_axis_tlast(s_axis_tlast),
    .s_axis_tuser(s_axis_tuser),
    .m_axis_l2_tdata(l2_tdata),
    .m_axis_l2_tkeep(l2_tkeep),
    .m_axis_l2_tvalid(l2_tvalid),
    .m_axis_l2_tready(l2_tready),
    .m_axis_l2_tlast(l2_tlast),
    .m_axis_l2_tuser(l2_tuser),
    .m_axis_agg_tdata(agg_in_tdata),
    .m_axis_agg_tkeep(agg_in_tkeep),
    .m_axis_agg_tvalid(agg_in_tvalid),
    .m_axis_agg_tready(agg_in_tready),
    .m_axis_agg_tlast(agg_in_tlast),
    .m_axis_agg_tuser(agg_in_tuser),
    .m_axis_rpl_tdata(rpl_in_tdata),
    .m_axis_rpl_tkeep(rpl_in_tkeep),
    .m_axis_rpl_tvalid(rpl_in_tvalid),
    .m_axis_rpl_tready(rpl_in_tready),
    .m_axis_rpl_tlast(rpl_in_tlast),
    .m_axis_rpl_tuser(rpl_in_tuser),
    .stat_pass(stat_pass)
);

// memory slots whose copies the job table frees, and the tables it empties (nrl_axil_split)
wire [AGG_MAX_SLOTS-1:0] slot_free;
wire [JOBS-1:0] table_carve;
// the job table's rows (one job: the engines use their own JOB_ID, every slot and record)
wire [JOBS*8-1:0] job_id;
wire [JOBS-1:0] job_enable;
wire [JOBS*7-1:0] job_slot_base;
wire [JOBS*7-1:0] job_slot_count;
wire [JOBS*32-1:0] job_rpl_base;
wire [JOBS*32-1:0] job_rpl_cap;
wire [JOBS*14-1:0] job_rpl_record;
// the page of the engines' register access (nrl_axil_split m_axil_job), above the offset
wire [JW-1:0] split_job;
wire [EAW-1:0] agg_axil_awaddr_j, agg_axil_araddr_j, rpl_axil_awaddr_j, rpl_axil_araddr_j;

generate
if (JOBS > 1) begin : g_pages
    assign agg_axil_awaddr_j = {split_job, agg_axil_awaddr};
    assign agg_axil_araddr_j = {split_job, agg_axil_araddr};
    assign rpl_axil_awaddr_j = {split_job, rpl_axil_awaddr};
    assign rpl_axil_araddr_j = {split_job, rpl_axil_araddr};
end else begin : g_page0
    assign agg_axil_awaddr_j = agg_axil_awaddr;
    assign agg_axil_araddr_j = agg_axil_araddr;
    assign rpl_axil_awaddr_j = rpl_axil_awaddr;
    assign rpl_axil_araddr_j = rpl_axil_araddr;
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_job = split_job;
    /* verilator lint_on UNUSEDSIGNAL */
end
endgenerate

// ENGINES_BEGIN
grad_agg #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .MAX_SLOTS(AGG_MAX_SLOTS),
    .MAX_ELEMS(AGG_MAX_ELEMS),
    .BUILD_HASH(BUILD_HASH),
    .JOBS(JOBS)
)
grad_agg_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(agg_in_tdata),
    .s_axis_tkeep(agg_in_tkeep),
    .s_axis_tvalid(agg_in_tvalid),
    .s_axis_tready(agg_in_tready),
    .s_axis_tlast(agg_in_tlast),
    .s_axis_tuser(agg_in_tuser),
    .m_axis_tdata(agg_out_tdata),
    .m_axis_tkeep(agg_out_tkeep),
    .m_axis_tvalid(agg_out_tvalid),
    .m_axis_tready(agg_out_tready),
    .m_axis_tlast(agg_out_tlast),
    .m_axis_tuser(agg_out_tuser),
    .s_axil_awaddr(agg_axil_awaddr_j),
    .s_axil_awprot(agg_axil_awprot),
    .s_axil_awvalid(agg_axil_awvalid),
    .s_axil_awready(agg_axil_awready),
    .s_axil_wdata(agg_axil_wdata),
    .s_axil_wstrb(agg_axil_wstrb),
    .s_axil_wvalid(agg_axil_wvalid),
    .s_axil_wready(agg_axil_wready),
    .s_axil_bresp(agg_axil_bresp),
    .s_axil_bvalid(agg_axil_bvalid),
    .s_axil_bready(agg_axil_bready),
    .s_axil_araddr(agg_axil_araddr_j),
    .s_axil_arprot(agg_axil_arprot),
    .s_axil_arvalid(agg_axil_arvalid),
    .s_axil_arready(agg_axil_arready),
    .s_axil_rdata(agg_axil_rdata),
    .s_axil_rresp(agg_axil_rresp),
    .s_axil_rvalid(agg_axil_rvalid),
    .s_axil_rready(agg_axil_rready),
    .job_id(job_id),
    .job_enable(job_enable),
    .job_slot_base(job_slot_base),
    .job_slot_count(job_slot_count),
    .slot_free(slot_free)
);

replay_engine #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .CAPACITY(RPL_CAPACITY),
    .RECORD_BYTES(RPL_RECORD_BYTES),
    .BUILD_HASH(BUILD_HASH),
    .REC_STORE(RPL_REC_STORE),
    .AXI_ADDR_WIDTH(RPL_AXI_ADDR_WIDTH),
    .AXI_ID_WIDTH(RPL_AXI_ID_WIDTH),
    .AXI_BASE_ADDR(RPL_AXI_BASE_ADDR),
    .JOBS(JOBS)
)
replay_engine_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(rpl_in_tdata),
    .s_axis_tkeep(rpl_in_tkeep),
    .s_axis_tvalid(rpl_in_tvalid),
    .s_axis_tready(rpl_in_tready),
    .s_axis_tlast(rpl_in_tlast),
    .s_axis_tuser(rpl_in_tuser),
    .m_axis_tdata(rpl_out_tdata),
    .m_axis_tkeep(rpl_out_tkeep),
    .m_axis_tvalid(rpl_out_tvalid),
    .m_axis_tready(rpl_out_tready),
    .m_axis_tlast(rpl_out_tlast),
    .m_axis_tuser(rpl_out_tuser),
    .s_axil_awaddr(rpl_axil_awaddr_j),
    .s_axil_awprot(rpl_axil_awprot),
    .s_axil_awvalid(rpl_axil_awvalid),
    .s_axil_awready(rpl_axil_awready),
    .s_axil_wdata(rpl_axil_wdata),
    .s_axil_wstrb(rpl_axil_wstrb),
    .s_axil_wvalid(rpl_axil_wvalid),
    .s_axil_wready(rpl_axil_wready),
    .s_axil_bresp(rpl_axil_bresp),
    .s_axil_bvalid(rpl_axil_bvalid),
    .s_axil_bready(rpl_axil_bready),
    .s_axil_araddr(rpl_axil_araddr_j),
    .s_axil_arprot(rpl_axil_arprot),
    .s_axil_arvalid(rpl_axil_arvalid),
    .s_axil_arready(rpl_axil_arready),
    .s_axil_rdata(rpl_axil_rdata),
    .s_axil_rresp(rpl_axil_rresp),
    .s_axil_rvalid(rpl_axil_rvalid),
    .s_axil_rready(rpl_axil_rready),
    .job_id(job_id),
    .job_enable(job_enable),
    .job_rpl_base(job_rpl_base),
    .job_rpl_cap(job_rpl_cap),
    .job_rpl_record(job_rpl_record),
    .table_carve(table_carve),
    .m_axi_awid(m_axi_rpl_awid),
    .m_axi_awaddr(m_axi_rpl_awaddr),
    .m_axi_awlen(m_axi_rpl_awlen),
    .m_axi_awsize(m_axi_rpl_awsize),
    .m_axi_awburst(m_axi_rpl_awburst),
    .m_axi_awlock(m_axi_rpl_awlock),
    .m_axi_awcache(m_axi_rpl_awcache),
    .m_axi_awprot(m_axi_rpl_awprot),
    .m_axi_awqos(m_axi_rpl_awqos),
    .m_axi_awvalid(m_axi_rpl_awvalid),
    .m_axi_awready(m_axi_rpl_awready),
    .m_axi_wdata(m_axi_rpl_wdata),
    .m_axi_wstrb(m_axi_rpl_wstrb),
    .m_axi_wlast(m_axi_rpl_wlast),
    .m_axi_wvalid(m_axi_rpl_wvalid),
    .m_axi_wready(m_axi_rpl_wready),
    .m_axi_bid(m_axi_rpl_bid),
    .m_axi_bresp(m_axi_rpl_bresp),
    .m_axi_bvalid(m_axi_rpl_bvalid),
    .m_axi_bready(m_axi_rpl_bready),
    .m_axi_arid(m_axi_rpl_arid),
    .m_axi_araddr(m_axi_rpl_araddr),
    .m_axi_arlen(m_axi_rpl_arlen),
    .m_axi_arsize(m_axi_rpl_arsize),
    .m_axi_arburst(m_axi_rpl_arburst),
    .m_axi_arlock(m_axi_rpl_arlock),
    .m_axi_arcache(m_axi_rpl_arcache),
    .m_axi_arprot(m_axi_rpl_arprot),
    .m_axi_arqos(m_axi_rpl_arqos),
    .m_axi_arvalid(m_axi_rpl_arvalid),
    .m_axi_arready(m_axi_rpl_arready),
    .m_axi_rid(m_axi_rpl_rid),
    .m_axi_rdata(m_axi_rpl_rdata),
    .m_axi_rresp(m_axi_rpl_rresp),
    .m_axi_rlast(m_axi_rpl_rlast),
    .m_axi_rvalid(m_axi_rpl_rvalid),
    .m_axi_rready(m_axi_rpl_rready)
);
// ENGINES_END

nrl_axis_skid #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
skid_l2_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(l2_tdata),
    .s_axis_tkeep(l2_tkeep),
    .s_axis_tvalid(l2_tvalid),
    .s_axis_tready(l2_tready),
    .s_axis_tlast(l2_tlast),
    .s_axis_tuser(l2_tuser),
    .m_axis_tdata(mg_l2_tdata),
    .m_axis_tkeep(mg_l2_tkeep),
    .m_axis_tvalid(mg_l2_tvalid),
    .m_axis_tready(mg_l2_tready),
    .m_axis_tlast(mg_l2_tlast),
    .m_axis_tuser(mg_l2_tuser)
);

nrl_axis_skid #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
skid_agg_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(agg_out_tdata),
    .s_axis_tkeep(agg_out_tkeep),
    .s_axis_tvalid(agg_out_tvalid),
    .s_axis_tready(agg_out_tready),
    .s_axis_tlast(agg_out_tlast),
    .s_axis_tuser(agg_out_tuser),
    .m_axis_tdata(mg_agg_tdata),
    .m_axis_tkeep(mg_agg_tkeep),
    .m_axis_tvalid(mg_agg_tvalid),
    .m_axis_tready(mg_agg_tready),
    .m_axis_tlast(mg_agg_tlast),
    .m_axis_tuser(mg_agg_tuser)
);

nrl_axis_skid #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
skid_rpl_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(rpl_out_tdata),
    .s_axis_tkeep(rpl_out_tkeep),
    .s_axis_tvalid(rpl_out_tvalid),
    .s_axis_tready(rpl_out_tready),
    .s_axis_tlast(rpl_out_tlast),
    .s_axis_tuser(rpl_out_tuser),
    .m_axis_tdata(mg_rpl_tdata),
    .m_axis_tkeep(mg_rpl_tkeep),
    .m_axis_tvalid(mg_rpl_tvalid),
    .m_axis_tready(mg_rpl_tready),
    .m_axis_tlast(mg_rpl_tlast),
    .m_axis_tuser(mg_rpl_tuser)
);

nrl_axis_merge #(
    .S_COUNT(3),
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
merge_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata({mg_rpl_tdata, mg_agg_tdata, mg_l2_tdata}),
    .s_axis_tkeep({mg_rpl_tkeep, mg_agg_tkeep, mg_l2_tkeep}),
    .s_axis_tvalid({mg_rpl_tvalid, mg_agg_tvalid, mg_l2_tvalid}),
    .s_axis_tready({mg_rpl_tready, mg_agg_tready, mg_l2_tready}),
    .s_axis_tlast({mg_rpl_tlast, mg_agg_tlast, mg_l2_tlast}),
    .s_axis_tuser({mg_rpl_tuser, mg_agg_tuser, mg_l2_tuser}),
    .m_axis_tdata(m_axis_tdata),
    .m_axis_tkeep(m_axis_tkeep),
    .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready),
    .m_axis_tlast(m_axis_tlast),
    .m_axis_tuser(m_axis_tuser)
);

// the job table (docs/protocol.md section 11; JOBS = 1: its fixed share); its rows,
// slot_free and table_carve go to the engines (declared before them)

nrl_axil_split #(
    .ADDR_WIDTH(AXIL_ADDR_WIDTH),
    .DATA_WIDTH(AXIL_DATA_WIDTH),
    .STRB_WIDTH(AXIL_STRB_WIDTH),
    .AGG_MAX_SLOTS(AGG_MAX_SLOTS),
    .RPL_CAPACITY(RPL_CAPACITY),
    .RPL_RECORD_BYTES(RPL_RECORD_BYTES),
    .JOBS(JOBS)
)
axil_split_inst (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(s_axil_awaddr),
    .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata),
    .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid),
    .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid),
    .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata),
    .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .m_axil_agg_awaddr(agg_axil_awaddr),
    .m_axil_agg_awprot(agg_axil_awprot),
    .m_axil_agg_awvalid(agg_axil_awvalid),
    .m_axil_agg_awready(agg_axil_awready),
    .m_axil_agg_wdata(agg_axil_wdata),
    .m_axil_agg_wstrb(agg_axil_wstrb),
    .m_axil_agg_wvalid(agg_axil_wvalid),
    .m_axil_agg_wready(agg_axil_wready),
    .m_axil_agg_bresp(agg_axil_bresp),
    .m_axil_agg_bvalid(agg_axil_bvalid),
    .m_axil_agg_bready(agg_axil_bready),
    .m_axil_agg_araddr(agg_axil_araddr),
    .m_axil_agg_arprot(agg_axil_arprot),
    .m_axil_agg_arvalid(agg_axil_arvalid),
    .m_axil_agg_arready(agg_axil_arready),
    .m_axil_agg_rdata(agg_axil_rdata),
    .m_axil_agg_rresp(agg_axil_rresp),
    .m_axil_agg_rvalid(agg_axil_rvalid),
    .m_axil_agg_rready(agg_axil_rready),
    .m_axil_rpl_awaddr(rpl_axil_awaddr),
    .m_axil_rpl_awprot(rpl_axil_awprot),
    .m_axil_rpl_awvalid(rpl_axil_awvalid),
    .m_axil_rpl_awready(rpl_axil_awready),
    .m_axil_rpl_wdata(rpl_axil_wdata),
    .m_axil_rpl_wstrb(rpl_axil_wstrb),
    .m_axil_rpl_wvalid(rpl_axil_wvalid),
    .m_axil_rpl_wready(rpl_axil_wready),
    .m_axil_rpl_bresp(rpl_axil_bresp),
    .m_axil_rpl_bvalid(rpl_axil_bvalid),
    .m_axil_rpl_bready(rpl_axil_bready),
    .m_axil_rpl_araddr(rpl_axil_araddr),
    .m_axil_rpl_arprot(rpl_axil_arprot),
    .m_axil_rpl_arvalid(rpl_axil_arvalid),
    .m_axil_rpl_arready(rpl_axil_arready),
    .m_axil_rpl_rdata(rpl_axil_rdata),
    .m_axil_rpl_rresp(rpl_axil_rresp),
    .m_axil_rpl_rvalid(rpl_axil_rvalid),
    .m_axil_rpl_rready(rpl_axil_rready),
    .m_axil_job(split_job),
    .job_id(job_id),
    .job_enable(job_enable),
    .job_slot_base(job_slot_base),
    .job_slot_count(job_slot_count),
    .job_rpl_base(job_rpl_base),
    .job_rpl_cap(job_rpl_cap),
    .job_rpl_record(job_rpl_record),
    .slot_free(slot_free),
    .table_carve(table_carve),
    .pass_inc(stat_pass),
    .udp_port(udp_port),
    .l2_age_frames(l2_age_frames),
    .l2_age_load(l2_age_load)
);

endmodule

`resetall
`default_nettype wire
