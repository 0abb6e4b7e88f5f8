// SPDX-License-Identifier: MIT
// Copyright (c) 2025 netfpga-rl contributors

// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Testbench top of nrl_counter_bank (sim/nrl_counter_bank): the bank behind
 * the smallest AXI4-Lite register file that reads it the way the engines'
 * register files do. A read of the counter window (REG_CNT_WINDOW) returns
 * the counter at that word with the pending carry added in a stage of its
 * own, any other read returns 0; a write to CTRL with bit 31 set clears
 * the bank. One transaction at a time. The address is 16 bits: bits 15:12
 * are the job (page) whose bank a read reads; inc_job tags each event.
 */
module tb_nrl_counter_bank #
(
    parameter COUNT = 14,
    parameter [5*COUNT-1:0] WORDS = {5*COUNT{1'b0}},
    parameter REGISTER_INC = 0,
    parameter HALF_WIDTH = 16,
    parameter JOBS = 1,
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire              clk,
    input  wire              rst,
    input  wire [COUNT-1:0]  inc,
    input  wire [COUNT*JW-1:0] inc_job,

    // verilator lint_off UNUSEDSIGNAL
    input  wire [15:0]       s_axil_awaddr,
    input  wire [2:0]        s_axil_awprot,
    // verilator lint_on UNUSEDSIGNAL
    input  wire              s_axil_awvalid,
    output wire              s_axil_awready,
    // verilator lint_off UNUSEDSIGNAL
    input  wire [31:0]       s_axil_wdata,
    // verilator lint_on UNUSEDSIGNAL
    input  wire [3:0]        s_axil_wstrb,
    input  wire              s_axil_wvalid,
    output wire              s_axil_wready,
    output wire [1:0]        s_axil_bresp,
    output wire              s_axil_bvalid,
    input  wire              s_axil_bready,
    // verilator lint_off UNUSEDSIGNAL
    input  wire [15:0]       s_axil_araddr,
    input  wire [2:0]        s_axil_arprot,
    // verilator lint_on UNUSEDSIGNAL
    input  wire              s_axil_arvalid,
    output wire              s_axil_arready,
    output wire [31:0]       s_axil_rdata,
    output wire [1:0]        s_axil_rresp,
    output wire              s_axil_rvalid,
    input  wire              s_axil_rready
);

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"
// verilator lint_on UNUSEDPARAM

reg bvalid_reg;
reg clear_reg;
wire wr_fire = s_axil_awvalid && s_axil_wvalid && !bvalid_reg;

assign s_axil_awready = wr_fire;
assign s_axil_wready = wr_fire;
assign s_axil_bresp = 2'b00;
assign s_axil_bvalid = bvalid_reg;

always @(posedge clk) begin
    clear_reg <= wr_fire && {s_axil_awaddr[11:2], 2'b00} == REG_CTRL &&
                 s_axil_wstrb[3] && s_axil_wdata[31];
    if (s_axil_bready) begin
        bvalid_reg <= 1'b0;
    end
    if (wr_fire) begin
        bvalid_reg <= 1'b1;
    end
    if (rst) begin
        bvalid_reg <= 1'b0;
        clear_reg <= 1'b0;
    end
end

reg [15:2] rd_addr_reg;
reg rd_s1_reg, rd_s2_reg;
reg [31:0] rd_raw_reg;
reg rd_carry_reg;
reg rvalid_reg;
reg [31:0] rdata_reg;
wire rd_hit;
wire [31:0] rd_value;
wire rd_carry;
wire rd_fire = s_axil_arvalid && !rd_s1_reg && !rd_s2_reg && !rvalid_reg;

assign s_axil_arready = rd_fire;
assign s_axil_rdata = rdata_reg;
assign s_axil_rresp = 2'b00;
assign s_axil_rvalid = rvalid_reg;

nrl_counter_bank #(
    .COUNT(COUNT),
    .WORDS(WORDS),
    .REGISTER_INC(REGISTER_INC),
    .HALF_WIDTH(HALF_WIDTH),
    .JOBS(JOBS),
    .JW(JW)
)
dut_inst (
    .clk(clk),
    .rst(rst),
    .inc(inc),
    .inc_job(inc_job),
    .clear(clear_reg),
    .rd_word(rd_addr_reg[6:2]),
    .rd_job(rd_addr_reg[12 +: JW]),
    .rd_hit(rd_hit),
    .rd_value(rd_value),
    .rd_carry(rd_carry)
);

wire in_window = rd_addr_reg[11:7] == REG_CNT_WINDOW[11:7] && rd_hit;

always @(posedge clk) begin
    if (rd_fire) begin
        rd_addr_reg <= s_axil_araddr[15:2];
    end
    rd_s1_reg <= rd_fire;
    rd_s2_reg <= rd_s1_reg;
    if (rd_s1_reg) begin
        rd_raw_reg <= in_window ? rd_value : 32'd0;
        rd_carry_reg <= in_window && rd_carry;
    end
    if (rd_s2_reg) begin
        rdata_reg <= rd_raw_reg + ({31'd0, rd_carry_reg} << HALF_WIDTH);
        rvalid_reg <= 1'b1;
    end else if (s_axil_rready) begin
        rvalid_reg <= 1'b0;
    end
    if (rst) begin
        rd_s1_reg <= 1'b0;
        rd_s2_reg <= 1'b0;
        rvalid_reg <= 1'b0;
    end
end

endmodule

`resetall
`default_nettype wire
