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

/*
 * Replay engine configuration: its register file (replay_regs) and every
 * job's word (replay_job.vh) for the lookup, the executor and the draws.
 *
 * With JOBS > 1 a job's word is its member table (its page of
 * replay_regs) and its row of the switch's job table (job_*: JOB_ID,
 * JOB_RPL_RECORD / 64, log2 JOB_RPL_CAP, JOB_RPL_BASE, no table when
 * JOB_RPL_CAP = 0). With JOBS = 1 the job is the engine's own JOB_ID
 * register with every record of RECORD_BYTES (the job_* inputs unused).
 * The register pulses (RPL_SEED, RPL_SPI, RPL_RESET written) become masks
 * of jobs; a job's table is emptied by its RPL_RESET or table_carve.
 * The status inputs are every job's, the counter events tagged with their
 * job (cnt_inc_job).
 */
module replay_config #
(
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64, 64 .. 8192)
    parameter RECORD_BYTES = 128,
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0,
    // Counters
    parameter NCNT = 16,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the AXI4-Lite address (computed; do not override)
    parameter AW = JOBS > 1 ? 12 + JW : 12,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Width of sums (computed; do not override)
    parameter SUM_W = 32 + INDEX_W
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * AXI4-Lite slave (registers)
     */
    input  wire [AW-1:0]          s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [31:0]            s_axil_wdata,
    input  wire [3:0]             s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output wire [1:0]             s_axil_bresp,
    output wire                   s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [AW-1:0]          s_axil_araddr,
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [31:0]            s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready,

    /*
     * The switch's job table (JOBS > 1)
     */
    input  wire [JOBS*8-1:0]      job_id,
    input  wire [JOBS-1:0]        job_enable,
    input  wire [JOBS*32-1:0]     job_rpl_base,
    input  wire [JOBS*32-1:0]     job_rpl_cap,
    input  wire [JOBS*14-1:0]     job_rpl_record,
    input  wire [JOBS-1:0]        table_carve,

    /*
     * Configuration out
     */
    output wire                   rpl_enable,
    output wire [15:0]            udp_port,
    output wire [31:0]            switch_ip,
    output wire [47:0]            switch_mac,
    output wire [JOBS*511-1:0]    jobs_word,
    output wire [JOBS-1:0]        jobs_enable,
    output wire [JOBS*INDEX_W-1:0] jobs_base,
    output wire [JOBS*5-1:0]      jobs_lcap,
    output wire [JOBS-1:0]        jobs_notab,
    output wire [JOBS*32-1:0]     seed,
    output wire [JOBS-1:0]        seed_wr,
    output wire [JOBS*32-1:0]     min_size,
    output wire [JOBS*32-1:0]     spi,
    output wire [JOBS*32-1:0]     spi_error,
    output wire [JOBS-1:0]        spi_wr,
    output wire [JOBS-1:0]        tbl_reset,  // per job: RPL_RESET written or carved

    /*
     * Status in, every job's; counter events and their jobs
     */
    input  wire [JOBS*64-1:0]     rate_diff,
    input  wire [JOBS*(INDEX_W+1)-1:0] size,
    input  wire [JOBS*INDEX_W-1:0] wptr,
    input  wire [JOBS*SUM_W-1:0]  total,
    input  wire [31:0]            axi_err,
    input  wire [NCNT-1:0]        cnt_inc,
    input  wire [NCNT*JW-1:0]     cnt_inc_job
);

// verilator lint_off UNUSEDPARAM
`include "replay_job.vh"
// verilator lint_on UNUSEDPARAM

localparam [31:0] RB64_32 = RECORD_BYTES / 64;
localparam [7:0] RB64 = RB64_32[7:0];
localparam [4:0] LCAP = INDEX_W[4:0];

// log2 of a power of two (JOB_RPL_CAP, 0 or a power of two up to RPL_CAPACITY: the job
// table refuses any other value; 0 for 0): each bit of the result is an OR of the input
// bits whose index has it set, no priority chain
function [4:0] log2p(input [31:0] c);
    integer b, k;
    begin
        log2p = 5'd0;
        for (k = 0; k < 5; k = k + 1) begin
            for (b = 0; b < 32; b = b + 1) begin
                if (((b >> k) & 1) != 0) begin
                    log2p[k] = log2p[k] | c[b];
                end
            end
        end
    end
endfunction

wire [7:0] cfg_job_id;
wire [JOBS*8*8-1:0] member_port;
wire [JOBS*8*32-1:0] member_ip;
wire [JOBS*8*16-1:0] member_udp;
wire [JOBS*8*3-1:0] member_role;
wire seed_wr_1, rpl_reset_1, spi_wr_1;
wire [JW-1:0] pulse_job;
wire [JOBS-1:0] pulse_hot = {{JOBS-1{1'b0}}, 1'b1} << pulse_job;
wire [JOBS*32-1:0] size32, wptr32;
wire [JOBS*64-1:0] total64;

assign seed_wr = seed_wr_1 ? pulse_hot : {JOBS{1'b0}};
assign spi_wr = spi_wr_1 ? pulse_hot : {JOBS{1'b0}};
assign tbl_reset = (rpl_reset_1 ? pulse_hot : {JOBS{1'b0}}) | table_carve;

genvar gj;
generate
for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_job
    wire [RJ_W-1:0] w;
    assign w[RJ_PORT +: 64] = member_port[64*gj +: 64];
    assign w[RJ_IP +: 256] = member_ip[256*gj +: 256];
    assign w[RJ_UDP +: 128] = member_udp[128*gj +: 128];
    assign w[RJ_ROLE +: 24] = member_role[24*gj +: 24];
    if (JOBS > 1) begin : g_row
        // the row's values, registered (a row changes only with a register write, whose
        // effects reach the engine a clock or more later: table_carve is taken from a
        // registered pending mask; the write's response follows)
        reg [7:0] id_reg, rb_reg;
        reg [4:0] lcap_reg;
        reg [INDEX_W-1:0] base_reg;
        reg notab_reg;
        always @(posedge clk) begin
            id_reg <= job_id[8*gj +: 8];
            rb_reg <= job_rpl_record[14*gj + 6 +: 8];
            lcap_reg <= log2p(job_rpl_cap[32*gj +: 32]);
            base_reg <= job_rpl_base[32*gj +: INDEX_W];
            notab_reg <= job_rpl_cap[32*gj +: 32] == 32'd0;
        end
        assign w[RJ_ID +: 8] = id_reg;
        assign w[RJ_RB +: 8] = rb_reg;
        assign w[RJ_LCAP +: 5] = lcap_reg;
        assign w[RJ_BASE +: 17] = {{17-INDEX_W{1'b0}}, base_reg};
        assign w[RJ_NOTAB] = notab_reg;
        assign jobs_enable[gj] = job_enable[gj];
    end else begin : g_fixed
        assign w[RJ_ID +: 8] = cfg_job_id;
        assign w[RJ_RB +: 8] = RB64;
        assign w[RJ_LCAP +: 5] = LCAP;
        assign w[RJ_BASE +: 17] = 17'd0;
        assign w[RJ_NOTAB] = 1'b0;
        assign jobs_enable[gj] = 1'b1;
    end
    assign jobs_word[RJ_W*gj +: RJ_W] = w;
    assign jobs_base[INDEX_W*gj +: INDEX_W] = w[RJ_BASE +: INDEX_W];
    assign jobs_lcap[5*gj +: 5] = w[RJ_LCAP +: 5];
    assign jobs_notab[gj] = w[RJ_NOTAB];
    assign size32[32*gj +: 32] = {{31-INDEX_W{1'b0}}, size[(INDEX_W+1)*gj +: INDEX_W+1]};
    assign wptr32[32*gj +: 32] = {{32-INDEX_W{1'b0}}, wptr[INDEX_W*gj +: INDEX_W]};
    assign total64[64*gj +: 64] = {{64-SUM_W{1'b0}}, total[SUM_W*gj +: SUM_W]};
end
endgenerate

replay_regs #(
    .CAPACITY(CAPACITY),
    .RECORD_BYTES(RECORD_BYTES),
    .BUILD_HASH(BUILD_HASH),
    .NCNT(NCNT),
    .JOBS(JOBS)
)
regs_inst (
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
    .rpl_enable(rpl_enable),
    .job_id(cfg_job_id),
    .udp_port(udp_port),
    .switch_ip(switch_ip),
    .switch_mac(switch_mac),
    .member_port(member_port),
    .member_ip(member_ip),
    .member_udp(member_udp),
    .member_role(member_role),
    .seed(seed),
    .seed_wr(seed_wr_1),
    .rpl_reset(rpl_reset_1),
    .min_size(min_size),
    .spi(spi),
    .spi_error(spi_error),
    .spi_wr(spi_wr_1),
    .pulse_job(pulse_job),
    .rate_diff(rate_diff),
    .rpl_size(size32),
    .rpl_wptr(wptr32),
    .rpl_total(total64),
    .rpl_axi_err(axi_err),
    .cnt_inc(cnt_inc),
    .cnt_inc_job(cnt_inc_job)
);

// verilator lint_off UNUSEDSIGNAL
wire unused_ok = &{1'b0, cfg_job_id, job_id, job_enable, job_rpl_base, job_rpl_cap, job_rpl_record};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
