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
 * AXI4-Lite register file of the replay engine (hw/regs.yaml).
 *
 * Holds the identity block, the control block (CTRL, JOB_ID, UDP_PORT,
 * SWITCH_IP, SWITCH_MAC_HI/LO, MCAST_IP), the replay block (RPL_*), the
 * member table (MEMBER_PORT/IP/UDP/ROLE, 8 entries) and the counters the
 * replay engine increments (CNT_RX_PUSH/SAMPLE/UPDATE, CNT_TX_PUSH_ACK,
 * CNT_TX_SAMPLE_RESP, the NOT_YET answers and the drop reasons a replay
 * request can hit). Every other address reads 0 and ignores writes. CTRL bit 31 clears every counter
 * and reads 0; a write to RPL_SEED pulses seed_wr; writing 1 to RPL_RESET
 * pulses rpl_reset; a write to RPL_SPI pulses spi_wr (the executor clears
 * the rate limiter's accumulator, read back as RPL_RATE_DIFF_LO/HI).
 *
 * The AXI4-Lite handshake is nrl_axil_regif (ready in the clock a request
 * is taken); the identity, control and member-table registers live in
 * nrl_common_regs; this file owns the replay registers, the counters and
 * the read pipeline. A write nrl_common_regs refuses (a MEMBER_PORT value
 * neither 0 nor one-hot, a value wider than its register) and an RPL_RESET
 * value above 1 answer SLVERR and change nothing.
 *
 * Counters are 32-bit, split into two 16-bit halves with a registered carry
 * so no carry chain is longer than 16 bits; a read adds the pending carry
 * in a pipeline stage of its own, so every read returns the exact count.
 *
 * Jobs (docs/protocol.md section 11, JOBS > 1): RPL_SEED, RPL_MIN_SIZE,
 * RPL_SPI, RPL_SPI_ERROR, the member table and the counters per job (the
 * page: address bits above 11); seed_wr, rpl_reset and spi_wr name their
 * job on pulse_job; the status words read the page's job's inputs (job j's
 * at [w*j +: w]); RPL_AXI_ERR is the switch's.
 */
module replay_regs #
(
    // Replay capacity C (records), reported in RPL_CAPACITY
    parameter CAPACITY = 16384,
    // Record size R in bytes, reported in RPL_RECORD_BYTES
    parameter RECORD_BYTES = 128,
    // Value reported in BUILD_HASH
    parameter BUILD_HASH = 32'd0,
    // Number of counters (fixed by the engine, see CNT_* below)
    parameter NCNT = 16,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the AXI4-Lite address: the page (job) above bit 12 (computed)
    parameter AW = JOBS > 1 ? 12 + JW : 12
)
(
    input  wire             clk,
    input  wire             rst,

    /*
     * AXI4-Lite slave
     */
    input  wire [AW-1:0]    s_axil_awaddr,
    input  wire [2:0]       s_axil_awprot,
    input  wire             s_axil_awvalid,
    output wire             s_axil_awready,
    input  wire [31:0]      s_axil_wdata,
    input  wire [3:0]       s_axil_wstrb,
    input  wire             s_axil_wvalid,
    output wire             s_axil_wready,
    output wire [1:0]       s_axil_bresp,
    output wire             s_axil_bvalid,
    input  wire             s_axil_bready,
    input  wire [AW-1:0]    s_axil_araddr,
    input  wire [2:0]       s_axil_arprot,
    input  wire             s_axil_arvalid,
    output wire             s_axil_arready,
    output wire [31:0]      s_axil_rdata,
    output wire [1:0]       s_axil_rresp,
    output wire             s_axil_rvalid,
    input  wire             s_axil_rready,

    /*
     * Configuration outputs
     */
    output wire             rpl_enable,
    output wire [7:0]       job_id,
    output wire [15:0]      udp_port,
    output wire [31:0]      switch_ip,
    output wire [47:0]      switch_mac,
    output wire [JOBS*8*8-1:0]  member_port,
    output wire [JOBS*8*32-1:0] member_ip,
    output wire [JOBS*8*16-1:0] member_udp,
    output wire [JOBS*8*3-1:0]  member_role,
    output wire [JOBS*32-1:0]   seed,
    output wire             seed_wr,
    output wire             rpl_reset,
    output wire [JOBS*32-1:0]   min_size,
    output wire [JOBS*32-1:0]   spi,
    output wire [JOBS*32-1:0]   spi_error,
    output wire             spi_wr,
    output wire [JW-1:0]    pulse_job,

    /*
     * Status inputs (every job's)
     */
    input  wire [JOBS*64-1:0]   rate_diff,
    input  wire [JOBS*32-1:0]   rpl_size,
    input  wire [JOBS*32-1:0]   rpl_wptr,
    input  wire [JOBS*64-1:0]   rpl_total,
    input  wire [31:0]      rpl_axi_err,
    input  wire [NCNT-1:0]  cnt_inc,
    input  wire [NCNT*JW-1:0]   cnt_inc_job
);

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"
// verilator lint_on UNUSEDPARAM

// counter-window word of each counter, in the order of the engine's cnt_inc vector
localparam [5*16-1:0] CNT_WORDS = {
    REG_CNT_TX_SAMPLE_NOT_YET[6:2], REG_CNT_TX_PUSH_NOT_YET[6:2], REG_CNT_DROP_BAD_INDEX[6:2], REG_CNT_DROP_EMPTY[6:2], REG_CNT_DROP_BAD_COUNT[6:2],
    REG_CNT_DROP_SPOOFED[6:2], REG_CNT_DROP_UNKNOWN_WORKER[6:2], REG_CNT_DROP_DISABLED[6:2],
    REG_CNT_DROP_BAD_JOB[6:2], REG_CNT_DROP_BAD_HEADER[6:2], REG_CNT_DROP_BAD_LENGTH[6:2],
    REG_CNT_TX_SAMPLE_RESP[6:2], REG_CNT_TX_PUSH_ACK[6:2], REG_CNT_RX_UPDATE[6:2],
    REG_CNT_RX_SAMPLE[6:2], REG_CNT_RX_PUSH[6:2]};

initial begin
    if (NCNT != 16) begin
        $error("Error: NCNT must be 16, the replay engine's counter set (instance %m)");
        $finish;
    end
    if (JOBS < 1 || JOBS > 8) begin
        $error("Error: JOBS must be 1..8 (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// storage

// every job's (job j's at [32*j +: 32]); the *_reg wires: the written job's
reg [JOBS*32-1:0] seed_q, min_size_q, spi_q, spi_error_q;
reg        seed_wr_reg;
reg        rpl_reset_reg;
reg        spi_wr_reg;
reg [JW-1:0] pulse_job_reg;

assign seed = seed_q;
assign seed_wr = seed_wr_reg;
assign rpl_reset = rpl_reset_reg;
assign min_size = min_size_q;
assign spi = spi_q;
assign spi_error = spi_error_q;
assign spi_wr = spi_wr_reg;
assign pulse_job = pulse_job_reg;

// ---------------------------------------------------------------------------
// AXI4-Lite handshake: address and data accepted together, one write at a
// time (wr_fire); a read's word comes three clocks after it is taken

wire wr_fire;
wire [AW-1:2] wr_word;
wire [31:0] wr_data;
wire [3:0] wr_strb;
wire wr_refuse;
wire [AW-1:2] rd_word;
wire [2:0] rd_stage;
wire [31:0] rd_data;

nrl_axil_regif #(
    .ADDR_WIDTH(AW),
    .READY_REG(0),
    .READ_STAGES(3)
)
axil_regif_inst (
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
    .wr_en(wr_fire),
    .wr_addr(wr_word),
    .wr_data(wr_data),
    .wr_strb(wr_strb),
    .wr_refuse(wr_refuse),
    .rd_addr(rd_word),
    .rd_stage(rd_stage),
    .rd_data(rd_data)
);

wire [11:0] wr_addr = {wr_word[11:2], 2'b00};

// the jobs a write and a read address (the page)
wire [JW-1:0] wr_job;
wire [JW-1:0] rd_job;

generate

if (JOBS > 1) begin : g_page
    assign wr_job = wr_word[AW-1:12];
    assign rd_job = rd_word[AW-1:12];
end else begin : g_page0
    assign wr_job = 1'b0;
    assign rd_job = 1'b0;
end

endgenerate

wire [31:0] seed_reg = seed_q[32*wr_job +: 32];
wire [31:0] min_size_reg = min_size_q[32*wr_job +: 32];
wire [31:0] spi_reg = spi_q[32*wr_job +: 32];
wire [31:0] spi_error_reg = spi_error_q[32*wr_job +: 32];
wire [31:0] wr_mask = {{8{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}, {8{wr_strb[0]}}};

// merge the strobed bytes of a write into an old 32-bit value
function [31:0] merge_bytes(input [31:0] old, input [31:0] data, input [31:0] mask);
    merge_bytes = (old & ~mask) | (data & mask);
endfunction

// merged write values; only each register's width is kept
// verilator lint_off UNUSEDSIGNAL
wire [31:0] rst_w = merge_bytes(32'd0, wr_data, wr_mask);
// verilator lint_on UNUSEDSIGNAL

// identity, control and member-table registers
wire common_refuse;
// RPL_RESET is one bit: a wider value is refused (SLVERR) and resets nothing
wire reset_refuse = wr_addr == REG_RPL_RESET && rst_w[31:1] != 31'd0;
assign wr_refuse = common_refuse || reset_refuse;
wire wr_clear;
// verilator lint_off UNUSEDSIGNAL
wire [1:0] ctrl;
wire wr_job_id;
wire wr_port_ok;  // the replay engine has no port register of its own
wire [31:0] mcast_ip;
// verilator lint_on UNUSEDSIGNAL
wire [32*32-1:0] ctl_words;
wire [32*32-1:0] member_words;

assign rpl_enable = ctrl[1];

nrl_common_regs #(
    .BUILD_HASH(BUILD_HASH),
    .JOBS(JOBS)
)
common_regs_inst (
    .clk(clk),
    .rst(rst),
    .wr_en(wr_fire),
    .wr_addr(wr_word[11:2]),
    .wr_data(wr_data),
    .wr_strb(wr_strb),
    .wr_job(wr_job),
    .wr_clear(wr_clear),
    .wr_job_id(wr_job_id),
    .wr_refuse(common_refuse),
    .wr_port_ok(wr_port_ok),
    .cfg_ctrl(ctrl),
    .cfg_job_id(job_id),
    .cfg_udp_port(udp_port),
    .cfg_switch_ip(switch_ip),
    .cfg_switch_mac(switch_mac),
    .cfg_mcast_ip(mcast_ip),
    .cfg_member_port(member_port),
    .cfg_member_ip(member_ip),
    .cfg_member_udp(member_udp),
    .cfg_member_role(member_role),
    .rd_job(rd_job),
    .ctl_words(ctl_words),
    .member_words(member_words)
);

// counters; pulses registered once (no engine logic in front of the adders)
wire [4:0] cnt_rd_word;
wire cnt_rd_hit;
wire [31:0] cnt_rd_value;
wire cnt_rd_carry;

nrl_counter_bank #(
    .COUNT(NCNT),
    .WORDS(CNT_WORDS),
    .REGISTER_INC(1),
    .JOBS(JOBS)
)
counter_bank_inst (
    .clk(clk),
    .rst(rst),
    .inc(cnt_inc),
    .inc_job(cnt_inc_job),
    .clear(wr_fire && wr_clear),
    .rd_word(cnt_rd_word),
    .rd_job(rd_job),
    .rd_hit(cnt_rd_hit),
    .rd_value(cnt_rd_value),
    .rd_carry(cnt_rd_carry)
);

integer j;

always @(posedge clk) begin
    seed_wr_reg <= 1'b0;
    rpl_reset_reg <= 1'b0;
    spi_wr_reg <= 1'b0;
    if (wr_fire) begin
        pulse_job_reg <= wr_job;
    end

    for (j = 0; j < JOBS; j = j + 1) begin
        if (wr_fire && wr_job == j[JW-1:0]) begin
            case (wr_addr)
                REG_RPL_SEED: seed_q[32*j +: 32] <= merge_bytes(seed_reg, wr_data, wr_mask);
                REG_RPL_MIN_SIZE: min_size_q[32*j +: 32] <= merge_bytes(min_size_reg, wr_data, wr_mask);
                REG_RPL_SPI: spi_q[32*j +: 32] <= merge_bytes(spi_reg, wr_data, wr_mask);
                REG_RPL_SPI_ERROR: spi_error_q[32*j +: 32] <= merge_bytes(spi_error_reg, wr_data, wr_mask);
                default: begin
                    // control block and member table: nrl_common_regs
                end
            endcase
        end
    end
    if (wr_fire) begin
        case (wr_addr)
            REG_RPL_SEED: seed_wr_reg <= 1'b1;
            REG_RPL_RESET: if (!reset_refuse) rpl_reset_reg <= rst_w[0];
            REG_RPL_SPI: spi_wr_reg <= 1'b1;
            default: begin
                // no pulse
            end
        endcase
    end

    if (rst) begin
        seed_q <= {JOBS{RST_RPL_SEED}};
        seed_wr_reg <= 1'b0;
        rpl_reset_reg <= 1'b0;
        min_size_q <= {JOBS{RST_RPL_MIN_SIZE}};
        spi_q <= {JOBS{RST_RPL_SPI}};
        spi_error_q <= {JOBS{RST_RPL_SPI_ERROR}};
        spi_wr_reg <= 1'b0;
        pulse_job_reg <= {JW{1'b0}};
    end
end

// ---------------------------------------------------------------------------
// read pipeline behind nrl_axil_regif: stage 1 (rd_stage[0]) selects within
// each group (control and replay, member table, counters); stage 2
// (rd_stage[1]) picks the group; stage 3 adds the counter carry (rd_data,
// sampled with rd_stage[2])

wire [11:0] rd_addr = {rd_word[11:2], 2'b00};  // holds still until the read has answered
reg [1:0]  rd_grp_reg;
reg [31:0] rd_ctl_reg, rd_mem_reg;
reg [31:0] rd_raw_reg;
reg        rd_c_reg;

reg [31:0] rd_ctl;
reg [31:0] rd_mem;
reg [1:0]  rd_grp;    // 0 none, 1 control and replay, 2 member table, 3 counters

always @* begin
    rd_ctl = 32'd0;
    case (rd_addr)
        REG_RPL_CAPACITY: rd_ctl = CAPACITY;
        REG_RPL_RECORD_BYTES: rd_ctl = RECORD_BYTES;
        REG_RPL_SEED: rd_ctl = seed_q[32*rd_job +: 32];
        REG_RPL_SIZE: rd_ctl = rpl_size[32*rd_job +: 32];
        REG_RPL_WPTR: rd_ctl = rpl_wptr[32*rd_job +: 32];
        REG_RPL_TOTAL_LO: rd_ctl = rpl_total[64*rd_job +: 32];
        REG_RPL_TOTAL_HI: rd_ctl = rpl_total[64*rd_job + 32 +: 32];
        REG_RPL_MIN_SIZE: rd_ctl = min_size_q[32*rd_job +: 32];
        REG_RPL_SPI: rd_ctl = spi_q[32*rd_job +: 32];
        REG_RPL_SPI_ERROR: rd_ctl = spi_error_q[32*rd_job +: 32];
        REG_RPL_RATE_DIFF_LO: rd_ctl = rate_diff[64*rd_job +: 32];
        REG_RPL_RATE_DIFF_HI: rd_ctl = rate_diff[64*rd_job + 32 +: 32];
        REG_RPL_AXI_ERR: rd_ctl = rpl_axi_err;
        // identity and control block: word address[6:2] of 0x000-0x07C
        default: rd_ctl = rd_addr[11:7] != 5'd0 ? 32'd0 : ctl_words[32*rd_addr[6:2] +: 32];
    endcase

    rd_mem = member_words[32*rd_addr[6:2] +: 32];

    if (rd_addr[11:8] == 4'h0) begin
        rd_grp = 2'd1;
    end else if (rd_addr[11:7] == 5'b00010) begin
        rd_grp = 2'd2;
    end else if (rd_addr[11:7] == REG_CNT_WINDOW[11:7] && cnt_rd_hit) begin
        rd_grp = 2'd3;
    end else begin
        rd_grp = 2'd0;
    end
end

assign cnt_rd_word = rd_addr[6:2];

always @(posedge clk) begin
    if (rd_stage[0]) begin
        rd_grp_reg <= rd_grp;
        rd_ctl_reg <= rd_ctl;
        rd_mem_reg <= rd_mem;
    end
    if (rd_stage[1]) begin
        case (rd_grp_reg)
            2'd1: rd_raw_reg <= rd_ctl_reg;
            2'd2: rd_raw_reg <= rd_mem_reg;
            2'd3: rd_raw_reg <= cnt_rd_value;
            default: rd_raw_reg <= 32'd0;
        endcase
        rd_c_reg <= rd_grp_reg == 2'd3 && cnt_rd_carry;
    end
end

assign rd_data = {rd_raw_reg[31:16] + {15'd0, rd_c_reg}, rd_raw_reg[15:0]};

// verilator lint_off UNUSEDSIGNAL
wire unused_rd_stage = rd_stage[2];
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
