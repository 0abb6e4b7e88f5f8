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
 * AXI4-Lite register splitter of the netfpga-rl switch
 *
 * One AXI4-Lite slave (the switch's register space, hw/regs.yaml) in front
 * of the two engines' register blocks, which overlap: both implement the
 * identity, control and member blocks.
 *
 * Job pages (docs/protocol.md section 11): job j's registers are at
 * j * 0x1000 + offset, bits ADDR_WIDTH-1:12 of the address being the page.
 * A page j >= JOBS, and in a page other than 0 a word that is no job register
 * (JOB_SCOPE_WORDS, generated from hw/regs.yaml's scope: job), is no
 * register: a read answers 0 with SLVERR, a write SLVERR, and neither reaches
 * an engine or changes anything here. A job register of page j reaches the
 * engines with m_axil_job = j (its offset on m_axil_*_awaddr / araddr).
 * Decode of a page (byte address, bits 11:0):
 *
 *   writes
 *     JOBS, JOB_ENABLE(_SET/_CLR), JOB_SLOT_*, JOB_RPL_*,
 *     JOB_LEASE, JOB_OWNER; JOB_ID when JOBS > 1          this module
 *     0x000-0x03F identity/control, 0x100-0x1FF members   both engines
 *     0x080-0x0FF RPL_*                                   replay engine
 *     everything else (0x040-0x07F AGG_* with the AGG_EPOCH
 *     mailbox at 0x078, counters, ...)                    aggregation engine
 *   reads
 *     JOBS, JOB_ENABLE(_SET/_CLR), JOB_SLOT_*, JOB_RPL_*,
 *     JOB_LEASE, JOB_OWNER; JOB_ID when JOBS > 1          this module
 *     0x080-0x0FF RPL_*                                   replay engine
 *     counters (0x200-0x27F): by the owner hw/regs.yaml
 *     gives each (engine:, generated into nrl_regs.vh as
 *     the CNT_AGG, CNT_RPL, CNT_SWITCH masks)
 *       rpl                                               replay engine
 *       switch (CNT_PASS)                                 this module
 *       both (the checks both engines make)               sum of both engines
 *       agg, and unused counter addresses                 aggregation engine
 *     everything else (identity, control, AGG_* and
 *     AGG_EPOCH, members)                                 aggregation engine
 *
 * A write that goes to both engines completes when both have answered; the
 * response is the OR of theirs (OKAY unless one failed: a MEMBER_PORT value
 * that is neither 0 nor one-hot is refused by both register files, SLVERR).
 * A summed read returns the 32-bit wrapping sum and the OR of the
 * responses.
 *
 * This module also owns the registers of the switch top: CNT_PASS (a
 * pulse on pass_inc counts one L2 frame; CTRL bit 31 clears it) and
 * L2_AGE_FRAMES (l2_age_frames, with a l2_age_load pulse the clock after a
 * write; a write to it is answered here, OKAY, and goes to no engine), and
 * keeps a shadow of UDP_PORT (udp_port) for the classifier, taken from the
 * writes it forwards. One transaction at a time; reads and writes
 * alternate when both wait.
 *
 * It also holds the job table (nrl_job_table: hw/regs.yaml group job, JOBS,
 * JOB_ENABLE and its set / clear pair, and with JOBS > 1 every job's JOB_ID),
 * judges the writes to it by docs/protocol.md section 11 (a refused one is
 * SLVERR and changes nothing; the response follows the judgement, about seven
 * clocks) and drives it to the engines (job_*), with the effects of the
 * section: table_carve (a job's table emptied) and slot_free (the memory
 * slots whose copies are freed; also after the aggregation engine takes a
 * write to a register 0x040-0x06C of an enabled job, or with JOBS = 1 to
 * JOB_ID). With JOBS = 1 the share is fixed (its writes are refused) and
 * JOB_ID goes to the engines. A write to JOBS (read-only) is ignored and
 * answered OKAY, as the engines answer one to their read-only registers.
 */
module nrl_axil_split #
(
    // Width of the AXI4-Lite address in bits: 12 (page 0 only) .. 32; bits
    // ADDR_WIDTH-1:12 are the job page (docs/protocol.md section 11)
    parameter ADDR_WIDTH = 12,
    // Width of the AXI4-Lite data in bits
    parameter DATA_WIDTH = 32,
    // Width of the AXI4-Lite wstrb in bits
    parameter STRB_WIDTH = DATA_WIDTH/8,
    // Slot memory depth (AGG_MAX_SLOTS): JOB_SLOT_COUNT of the one job
    parameter AGG_MAX_SLOTS = 64,
    // Replay capacity in records (RPL_CAPACITY): JOB_RPL_CAP of the one job
    parameter RPL_CAPACITY = 16384,
    // Replay record bytes (RPL_RECORD_BYTES): JOB_RPL_RECORD's reset and limit
    parameter RPL_RECORD_BYTES = 128,
    // Jobs served (JOBS, docs/protocol.md section 11), 1 to 8
    parameter JOBS = 1,
    // Width of a job index
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * AXI4-Lite slave (from the host)
     */
    input  wire [ADDR_WIDTH-1:0]  s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
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
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [DATA_WIDTH-1:0]  s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready,

    /*
     * AXI4-Lite master to the aggregation engine
     */
    output wire [11:0]            m_axil_agg_awaddr,
    output wire [2:0]             m_axil_agg_awprot,
    output wire                   m_axil_agg_awvalid,
    input  wire                   m_axil_agg_awready,
    output wire [DATA_WIDTH-1:0]  m_axil_agg_wdata,
    output wire [STRB_WIDTH-1:0]  m_axil_agg_wstrb,
    output wire                   m_axil_agg_wvalid,
    input  wire                   m_axil_agg_wready,
    input  wire [1:0]             m_axil_agg_bresp,
    input  wire                   m_axil_agg_bvalid,
    output wire                   m_axil_agg_bready,
    output wire [11:0]            m_axil_agg_araddr,
    output wire [2:0]             m_axil_agg_arprot,
    output wire                   m_axil_agg_arvalid,
    input  wire                   m_axil_agg_arready,
    input  wire [DATA_WIDTH-1:0]  m_axil_agg_rdata,
    input  wire [1:0]             m_axil_agg_rresp,
    input  wire                   m_axil_agg_rvalid,
    output wire                   m_axil_agg_rready,

    /*
     * AXI4-Lite master to the replay engine
     */
    output wire [11:0]            m_axil_rpl_awaddr,
    output wire [2:0]             m_axil_rpl_awprot,
    output wire                   m_axil_rpl_awvalid,
    input  wire                   m_axil_rpl_awready,
    output wire [DATA_WIDTH-1:0]  m_axil_rpl_wdata,
    output wire [STRB_WIDTH-1:0]  m_axil_rpl_wstrb,
    output wire                   m_axil_rpl_wvalid,
    input  wire                   m_axil_rpl_wready,
    input  wire [1:0]             m_axil_rpl_bresp,
    input  wire                   m_axil_rpl_bvalid,
    output wire                   m_axil_rpl_bready,
    output wire [11:0]            m_axil_rpl_araddr,
    output wire [2:0]             m_axil_rpl_arprot,
    output wire                   m_axil_rpl_arvalid,
    input  wire                   m_axil_rpl_arready,
    input  wire [DATA_WIDTH-1:0]  m_axil_rpl_rdata,
    input  wire [1:0]             m_axil_rpl_rresp,
    input  wire                   m_axil_rpl_rvalid,
    output wire                   m_axil_rpl_rready,
    // the page (job) of the engine registers addressed, on both masters
    output wire [JW-1:0]          m_axil_job,

    /*
     * The job table (nrl_job_table)
     */
    output wire [JOBS*8-1:0]      job_id,
    output wire [JOBS-1:0]        job_enable,
    output wire [JOBS*7-1:0]      job_slot_base,
    output wire [JOBS*7-1:0]      job_slot_count,
    output wire [JOBS*32-1:0]     job_rpl_base,
    output wire [JOBS*32-1:0]     job_rpl_cap,
    output wire [JOBS*14-1:0]     job_rpl_record,
    output wire [AGG_MAX_SLOTS-1:0] slot_free,
    output wire [JOBS-1:0]        table_carve,

    /*
     * Switch top registers
     */
    input  wire                   pass_inc,
    output wire [15:0]            udp_port,
    output wire [31:0]            l2_age_frames,
    output wire                   l2_age_load
);

/* verilator lint_off UNUSEDPARAM */
`include "nrl_regs.vh"
/* verilator lint_on UNUSEDPARAM */

// bus width assertions
initial begin
    if (ADDR_WIDTH < 12 || ADDR_WIDTH > 32) begin
        $error("Error: ADDR_WIDTH must be 12 (the register map's page) to 32 (instance %m)");
        $finish;
    end

    if (DATA_WIDTH != 32) begin
        $error("Error: DATA_WIDTH must be 32 (instance %m)");
        $finish;
    end

    if (STRB_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI4-Lite interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end
end

localparam [2:0]
    STATE_IDLE = 3'd0,
    STATE_WRITE = 3'd1,
    STATE_WRITE_RESP = 3'd2,
    STATE_READ = 3'd3,
    STATE_READ_SUM = 3'd4,
    STATE_READ_SUM_HI = 3'd6,
    STATE_READ_RESP = 3'd5;

// the job table registers this module answers (JOBS, JOB_ENABLE and its set / clear pair,
// JOB_SLOT_BASE .. JOB_OWNER, and JOB_ID when JOBS > 1)
function job_reg(input [11:2] a);
    begin
        job_reg = a == REG_JOBS[11:2] || a == REG_JOB_ENABLE[11:2] ||
            a == REG_JOB_ENABLE_SET[11:2] || a == REG_JOB_ENABLE_CLR[11:2] ||
            (a >= REG_JOB_SLOT_BASE[11:2] && a <= REG_JOB_OWNER[11:2]) ||
            (JOBS > 1 && a == REG_JOB_ID[11:2]);
    end
endfunction

// a word every job's page has (scope: job in hw/regs.yaml)
function job_scope(input [11:2] a);
    begin
        job_scope = a[11:10] == 2'b00 && JOB_SCOPE_WORDS[a[9:2]];
    end
endfunction

// the engine registers whose write frees the job's slot copies (0x040-0x06C; JOB_ID when
// the engines hold it, JOBS = 1)
function agg_config(input [11:2] a);
    begin
        agg_config = (a >= REG_AGG_MEMBERS[11:2] && a <= REG_AGG_LEAF_ID[11:2]) ||
            (JOBS == 1 && a == REG_JOB_ID[11:2]);
    end
endfunction

// write routing: bit 0 aggregation engine, bit 1 replay engine; 2'b00 this module
function [1:0] wr_route(input [11:0] a);
    begin
        if (a[11:2] == REG_L2_AGE_FRAMES[11:2] || job_reg(a[11:2])) begin
            wr_route = 2'b00;
        end else if (a < 12'h040 || (a >= 12'h100 && a < 12'h200)) begin
            wr_route = 2'b11;
        end else if (a >= 12'h080 && a < 12'h100) begin
            wr_route = 2'b10;
        end else begin
            wr_route = 2'b01;
        end
    end
endfunction

// read routing: bit 0 aggregation engine, bit 1 replay engine (both: sum),
// 2'b00 this module (CNT_PASS, L2_AGE_FRAMES). A counter goes where its owner in
// hw/regs.yaml says (the generated CNT_AGG/CNT_RPL/CNT_SWITCH masks); a
// counter-window address no counter uses goes to the aggregation engine.
localparam CNT_WORD_W = $clog2(REG_CNT_WINDOW_WORDS);

function [1:0] rd_route(input [11:0] a);
    reg [CNT_WORD_W-1:0] word;
    begin
        word = a[2 +: CNT_WORD_W];
        if (a[11:2] == REG_L2_AGE_FRAMES[11:2] || job_reg(a[11:2])) begin
            rd_route = 2'b00;
        end else if (a[11:CNT_WORD_W+2] == REG_CNT_WINDOW[11:CNT_WORD_W+2]) begin
            if (CNT_SWITCH[word]) begin
                rd_route = 2'b00;
            end else if (CNT_RPL[word]) begin
                rd_route = {1'b1, CNT_AGG[word]};
            end else begin
                rd_route = 2'b01;
            end
        end else if (a >= 12'h080 && a < 12'h100) begin
            rd_route = 2'b10;
        end else begin
            rd_route = 2'b01;
        end
    end
endfunction

reg [2:0] state_reg, state_next;
reg read_first_reg, read_first_next;

reg [11:0] addr_reg, addr_next;
reg [2:0] prot_reg, prot_next;
reg [DATA_WIDTH-1:0] wdata_reg, wdata_next;
reg [STRB_WIDTH-1:0] wstrb_reg, wstrb_next;
// per engine handshake state: bit 0 agg, bit 1 rpl
reg [1:0] awvalid_reg, awvalid_next;
reg [1:0] wvalid_reg, wvalid_next;
reg [1:0] arvalid_reg, arvalid_next;
reg [1:0] wait_reg, wait_next;

reg [1:0] resp_reg, resp_next;
reg [DATA_WIDTH-1:0] rdata_reg, rdata_next;
// each engine's read data, zero when the engine takes no part
reg [DATA_WIDTH-1:0] agg_rdata_reg, agg_rdata_next;
reg [DATA_WIDTH-1:0] rpl_rdata_reg, rpl_rdata_next;
// the shared-counter sum is split into two 16-bit halves over two clocks so
// that no carry chain is longer than 4 CARRY4 (logic depth <= 8)
reg sum_carry_reg, sum_carry_next;

reg s_axil_bvalid_reg, s_axil_bvalid_next;
reg s_axil_rvalid_reg, s_axil_rvalid_next;

// CNT_PASS as two 16-bit halves with a registered carry (the high half
// catches up one clock after the low half wraps; a read adds the pending
// carry back through the READ_SUM path, so it always sees a consistent value)
reg pass_inc_reg;
reg [15:0] cnt_lo_reg, cnt_lo_next;
reg cnt_carry_reg, cnt_carry_next;
reg [15:0] cnt_hi_reg, cnt_hi_next;
reg [15:0] udp_port_reg, udp_port_next;
reg [31:0] l2_age_reg, l2_age_next;
reg l2_age_load_reg, l2_age_load_next;
reg [JW-1:0] page_reg, page_next;
reg tbl_wr_reg, tbl_wr_next;
reg tbl_start_reg, tbl_start_next;
wire tbl_busy;
wire tbl_err;
wire [31:0] tbl_rdata;
wire agg_free;

wire wr_req = s_axil_awvalid && s_axil_wvalid;
wire rd_req = s_axil_arvalid;
wire do_write = state_reg == STATE_IDLE && wr_req && (!rd_req || !read_first_reg);
wire do_read = state_reg == STATE_IDLE && rd_req && (!wr_req || read_first_reg);

assign s_axil_awready = do_write;
assign s_axil_wready = do_write;
assign s_axil_bresp = resp_reg;
assign s_axil_bvalid = s_axil_bvalid_reg;
assign s_axil_arready = do_read;
assign s_axil_rdata = rdata_reg;
assign s_axil_rresp = resp_reg;
assign s_axil_rvalid = s_axil_rvalid_reg;

assign m_axil_agg_awaddr = addr_reg;
assign m_axil_agg_awprot = prot_reg;
assign m_axil_agg_awvalid = awvalid_reg[0];
assign m_axil_agg_wdata = wdata_reg;
assign m_axil_agg_wstrb = wstrb_reg;
assign m_axil_agg_wvalid = wvalid_reg[0];
assign m_axil_agg_bready = wait_reg[0] && state_reg == STATE_WRITE;
assign m_axil_agg_araddr = addr_reg;
assign m_axil_agg_arprot = prot_reg;
assign m_axil_agg_arvalid = arvalid_reg[0];
assign m_axil_agg_rready = wait_reg[0] && state_reg == STATE_READ;

assign m_axil_rpl_awaddr = addr_reg;
assign m_axil_rpl_awprot = prot_reg;
assign m_axil_rpl_awvalid = awvalid_reg[1];
assign m_axil_rpl_wdata = wdata_reg;
assign m_axil_rpl_wstrb = wstrb_reg;
assign m_axil_rpl_wvalid = wvalid_reg[1];
assign m_axil_rpl_bready = wait_reg[1] && state_reg == STATE_WRITE;
assign m_axil_rpl_araddr = addr_reg;
assign m_axil_rpl_arprot = prot_reg;
assign m_axil_rpl_arvalid = arvalid_reg[1];
assign m_axil_rpl_rready = wait_reg[1] && state_reg == STATE_READ;

assign udp_port = udp_port_reg;
assign l2_age_frames = l2_age_reg;
assign l2_age_load = l2_age_load_reg;

wire [1:0] awready_in = {m_axil_rpl_awready, m_axil_agg_awready};
wire [1:0] wready_in = {m_axil_rpl_wready, m_axil_agg_wready};
wire [1:0] arready_in = {m_axil_rpl_arready, m_axil_agg_arready};
wire [1:0] b_fire = {m_axil_rpl_bvalid && m_axil_rpl_bready, m_axil_agg_bvalid && m_axil_agg_bready};
wire [1:0] r_fire = {m_axil_rpl_rvalid && m_axil_rpl_rready, m_axil_agg_rvalid && m_axil_agg_rready};

// the write as it will land (byte strobes applied) on a snooped register
wire [15:0] s_wmask = {{8{s_axil_wstrb[1]}}, {8{s_axil_wstrb[0]}}};
wire [31:0] s_wmask32 = {{8{s_axil_wstrb[3]}}, {8{s_axil_wstrb[2]}}, s_wmask};
wire [11:0] s_waddr = {s_axil_awaddr[11:2], 2'b00};
wire [11:0] s_raddr = {s_axil_araddr[11:2], 2'b00};

// the pages: s_wpage0 page 0; s_wbad / s_rbad no register (a page >= JOBS, or a
// word of page j > 0 that is no job register)
localparam [31:0] JOBS32 = JOBS;
wire s_wpage0;
wire s_wbad;
wire s_rbad;
wire [JW-1:0] s_wjob;
wire [JW-1:0] s_rjob;

generate
if (ADDR_WIDTH > 12) begin : g_page
    wire [ADDR_WIDTH-13:0] wpg = s_axil_awaddr[ADDR_WIDTH-1:12];
    wire [ADDR_WIDTH-13:0] rpg = s_axil_araddr[ADDR_WIDTH-1:12];
    assign s_wpage0 = wpg == {ADDR_WIDTH-12{1'b0}};
    wire rpage0 = rpg == {ADDR_WIDTH-12{1'b0}};
    assign s_wbad = {{44-ADDR_WIDTH{1'b0}}, wpg} >= JOBS32 || (!s_wpage0 && !job_scope(s_axil_awaddr[11:2]));
    assign s_rbad = {{44-ADDR_WIDTH{1'b0}}, rpg} >= JOBS32 || (!rpage0 && !job_scope(s_axil_araddr[11:2]));
    if (ADDR_WIDTH - 12 >= JW) begin : g_wide
        assign s_wjob = wpg[JW-1:0];
        assign s_rjob = rpg[JW-1:0];
    end else begin : g_narrow
        assign s_wjob = {{JW-(ADDR_WIDTH-12){1'b0}}, wpg};
        assign s_rjob = {{JW-(ADDR_WIDTH-12){1'b0}}, rpg};
    end
end else begin : g_page0
    assign s_wpage0 = 1'b1;
    assign s_wbad = 1'b0;
    assign s_rbad = 1'b0;
    assign s_wjob = {JW{1'b0}};
    assign s_rjob = {JW{1'b0}};
end
endgenerate

wire [1:0] s_wr_route = s_wbad ? 2'b00 : wr_route(s_axil_awaddr[11:0]);
wire [1:0] s_rd_route = s_rbad ? 2'b00 : rd_route(s_axil_araddr[11:0]);

assign m_axil_job = page_reg;

// an aggregation register of a job taken by the engine: its slot copies are freed
assign agg_free = state_reg == STATE_WRITE && b_fire[0] && m_axil_agg_bresp == 2'b00 &&
    agg_config(addr_reg[11:2]);

nrl_job_table #(
    .JOBS(JOBS),
    .AGG_MAX_SLOTS(AGG_MAX_SLOTS),
    .RPL_CAPACITY(RPL_CAPACITY),
    .RPL_RECORD_BYTES(RPL_RECORD_BYTES),
    .JW(JW)
)
job_table_inst (
    .clk(clk),
    .rst(rst),
    .wr_start(tbl_start_reg),
    .wr_job(page_reg),
    .wr_addr(addr_reg[11:2]),
    .wr_data(wdata_reg),
    .wr_strb(wstrb_reg),
    .free_start(agg_free),
    .free_job(page_reg),
    .id_load(agg_free && JOBS == 1 && addr_reg[11:2] == REG_JOB_ID[11:2]),
    .busy(tbl_busy),
    .wr_err(tbl_err),
    .rd_job(s_rjob),
    .rd_addr(s_axil_araddr[11:2]),
    .rd_data(tbl_rdata),
    .job_id(job_id),
    .job_enable(job_enable),
    .job_slot_base(job_slot_base),
    .job_slot_count(job_slot_count),
    .job_rpl_base(job_rpl_base),
    .job_rpl_cap(job_rpl_cap),
    .job_rpl_record(job_rpl_record),
    .slot_free(slot_free),
    .table_carve(table_carve)
);

always @* begin
    state_next = state_reg;
    read_first_next = read_first_reg;
    addr_next = addr_reg;
    prot_next = prot_reg;
    wdata_next = wdata_reg;
    wstrb_next = wstrb_reg;
    awvalid_next = awvalid_reg & ~awready_in;
    wvalid_next = wvalid_reg & ~wready_in;
    arvalid_next = arvalid_reg & ~arready_in;
    wait_next = wait_reg;
    resp_next = resp_reg;
    rdata_next = rdata_reg;
    agg_rdata_next = agg_rdata_reg;
    rpl_rdata_next = rpl_rdata_reg;
    sum_carry_next = sum_carry_reg;
    s_axil_bvalid_next = s_axil_bvalid_reg && !s_axil_bready;
    s_axil_rvalid_next = s_axil_rvalid_reg && !s_axil_rready;
    {cnt_carry_next, cnt_lo_next} = {1'b0, cnt_lo_reg} + {16'd0, pass_inc_reg};
    cnt_hi_next = cnt_hi_reg + {15'd0, cnt_carry_reg};
    udp_port_next = udp_port_reg;
    l2_age_next = l2_age_reg;
    l2_age_load_next = 1'b0;
    page_next = page_reg;
    tbl_wr_next = tbl_wr_reg;
    tbl_start_next = 1'b0;

    case (state_reg)
        STATE_IDLE: begin
            resp_next = 2'b00;
            if (do_write) begin
                read_first_next = 1'b1;
                addr_next = s_axil_awaddr[11:0];
                page_next = s_wjob;
                prot_next = s_axil_awprot;
                wdata_next = s_axil_wdata;
                wstrb_next = s_axil_wstrb;
                awvalid_next = s_wr_route;
                wvalid_next = s_wr_route;
                wait_next = s_wr_route;
                state_next = STATE_WRITE;
                // no register; the job table judges its own (a refusal is ORed in at the end)
                tbl_wr_next = !s_wbad && job_reg(s_axil_awaddr[11:2]);
                tbl_start_next = tbl_wr_next;
                if (s_wbad) begin
                    resp_next = 2'b10;
                end
                // registers of the switch top, taken from the forwarded write
                // (unless the engines refuse the value: bits beyond the register's width)
                if (s_wpage0 && s_waddr == REG_UDP_PORT &&
                        (s_axil_wdata & s_wmask32 & 32'hFFFF0000) == 32'd0) begin
                    udp_port_next = (udp_port_reg & ~s_wmask) | (s_axil_wdata[15:0] & s_wmask);
                end
                if (s_wpage0 && s_waddr == REG_L2_AGE_FRAMES) begin
                    l2_age_next = (l2_age_reg & ~s_wmask32) | (s_axil_wdata & s_wmask32);
                    l2_age_load_next = 1'b1;
                end
                if (s_wpage0 && s_waddr == REG_CTRL && s_axil_wstrb[3] && s_axil_wdata[31] &&
                        (s_axil_wdata & s_wmask32 & 32'h7FFFFFFC) == 32'd0) begin
                    cnt_lo_next = 16'd0;
                    cnt_carry_next = 1'b0;
                    cnt_hi_next = 16'd0;
                end
            end else if (do_read) begin
                read_first_next = 1'b0;
                addr_next = s_axil_araddr[11:0];
                page_next = s_rjob;
                prot_next = s_axil_arprot;
                arvalid_next = s_rd_route;
                wait_next = s_rd_route;
                agg_rdata_next = {DATA_WIDTH{1'b0}};
                rpl_rdata_next = {DATA_WIDTH{1'b0}};
                if (s_rbad) begin
                    // no register: 0, SLVERR
                    resp_next = 2'b10;
                    state_next = STATE_READ_SUM;
                end else if (s_rd_route == 2'b00 && job_reg(s_raddr[11:2])) begin
                    agg_rdata_next = tbl_rdata;
                    state_next = STATE_READ_SUM;
                end else if (s_rd_route == 2'b00 && s_raddr == REG_L2_AGE_FRAMES) begin
                    agg_rdata_next = l2_age_reg;
                    state_next = STATE_READ_SUM;
                end else if (s_rd_route == 2'b00) begin
                    // CNT_PASS: snapshot both halves and the pending carry
                    agg_rdata_next = {cnt_hi_reg, cnt_lo_reg};
                    rpl_rdata_next = {15'd0, cnt_carry_reg, 16'd0};
                    state_next = STATE_READ_SUM;
                end else begin
                    state_next = STATE_READ;
                end
            end
        end
        STATE_WRITE: begin
            wait_next = wait_reg & ~b_fire;
            if (b_fire[0]) begin
                resp_next = resp_next | m_axil_agg_bresp;
            end
            if (b_fire[1]) begin
                resp_next = resp_next | m_axil_rpl_bresp;
            end
            // done when the engines have answered and the job table has judged and
            // driven its effects (agg_free: a free it starts this clock)
            if ((wait_reg & ~b_fire) == 2'b00 && !tbl_start_reg && !tbl_busy && !agg_free) begin
                if (tbl_wr_reg && tbl_err) begin
                    resp_next = 2'b10;
                end
                s_axil_bvalid_next = 1'b1;
                state_next = STATE_WRITE_RESP;
            end
        end
        STATE_WRITE_RESP: begin
            if (s_axil_bready) begin
                state_next = STATE_IDLE;
            end
        end
        STATE_READ: begin
            wait_next = wait_reg & ~r_fire;
            if (r_fire[0]) begin
                resp_next = resp_next | m_axil_agg_rresp;
                agg_rdata_next = m_axil_agg_rdata;
            end
            if (r_fire[1]) begin
                resp_next = resp_next | m_axil_rpl_rresp;
                rpl_rdata_next = m_axil_rpl_rdata;
            end
            if ((wait_reg & ~r_fire) == 2'b00) begin
                state_next = STATE_READ_SUM;
            end
        end
        STATE_READ_SUM: begin
            // one engine's value, or the sum of both for a shared counter:
            // low half first, its carry registered
            {sum_carry_next, rdata_next[15:0]} = {1'b0, agg_rdata_reg[15:0]} + {1'b0, rpl_rdata_reg[15:0]};
            state_next = STATE_READ_SUM_HI;
        end
        STATE_READ_SUM_HI: begin
            rdata_next[31:16] = agg_rdata_reg[31:16] + rpl_rdata_reg[31:16] + {15'd0, sum_carry_reg};
            s_axil_rvalid_next = 1'b1;
            state_next = STATE_READ_RESP;
        end
        STATE_READ_RESP: begin
            if (s_axil_rready) begin
                state_next = STATE_IDLE;
            end
        end
        default: begin
            state_next = STATE_IDLE;
        end
    endcase
end

always @(posedge clk) begin
    state_reg <= state_next;
    read_first_reg <= read_first_next;
    addr_reg <= addr_next;
    prot_reg <= prot_next;
    wdata_reg <= wdata_next;
    wstrb_reg <= wstrb_next;
    awvalid_reg <= awvalid_next;
    wvalid_reg <= wvalid_next;
    arvalid_reg <= arvalid_next;
    wait_reg <= wait_next;
    resp_reg <= resp_next;
    rdata_reg <= rdata_next;
    agg_rdata_reg <= agg_rdata_next;
    rpl_rdata_reg <= rpl_rdata_next;
    sum_carry_reg <= sum_carry_next;
    s_axil_bvalid_reg <= s_axil_bvalid_next;
    s_axil_rvalid_reg <= s_axil_rvalid_next;
    pass_inc_reg <= pass_inc;
    cnt_lo_reg <= cnt_lo_next;
    cnt_carry_reg <= cnt_carry_next;
    cnt_hi_reg <= cnt_hi_next;
    udp_port_reg <= udp_port_next;
    l2_age_reg <= l2_age_next;
    l2_age_load_reg <= l2_age_load_next;
    page_reg <= page_next;
    tbl_wr_reg <= tbl_wr_next;
    tbl_start_reg <= tbl_start_next;

    if (rst) begin
        state_reg <= STATE_IDLE;
        read_first_reg <= 1'b0;
        awvalid_reg <= 2'b00;
        wvalid_reg <= 2'b00;
        arvalid_reg <= 2'b00;
        wait_reg <= 2'b00;
        s_axil_bvalid_reg <= 1'b0;
        s_axil_rvalid_reg <= 1'b0;
        pass_inc_reg <= 1'b0;
        cnt_lo_reg <= 16'd0;
        cnt_carry_reg <= 1'b0;
        cnt_hi_reg <= 16'd0;
        udp_port_reg <= RST_UDP_PORT[15:0];
        l2_age_reg <= RST_L2_AGE_FRAMES;
        l2_age_load_reg <= 1'b0;
        page_reg <= {JW{1'b0}};
        tbl_wr_reg <= 1'b0;
        tbl_start_reg <= 1'b0;
    end
end

endmodule

`resetall
`default_nettype wire
