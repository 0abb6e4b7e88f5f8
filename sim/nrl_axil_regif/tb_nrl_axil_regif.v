// SPDX-License-Identifier: MIT
// Copyright (c) 2025 netfpga-rl contributors

// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Testbench top of nrl_axil_regif (sim/nrl_axil_regif): the handshake in
 * front of a small register file. Words 0 .. NREG-1 are 32-bit registers
 * (reset 0) written with the byte strobes; a write to an odd one of them
 * whose value (strobes applied) has bit 31 set is refused: the register
 * keeps its value and the write answers SLVERR. Writes to other words are
 * ignored. A register word reads its register, any other word w reads
 * 32'hA5A5_0000 | w. rd_data is that word in the clock of
 * rd_stage[READ_STAGES-1] and its complement in every other clock, so a
 * sample in the wrong clock reads wrong. The accepted-write and read-stage
 * signals are brought out (mon_*) for the testbench's cycle model.
 */
module tb_nrl_axil_regif #
(
    parameter ADDR_WIDTH = 12,
    parameter READY_REG = 0,
    parameter READ_STAGES = 3,
    parameter WRITE_REG = 0,
    parameter NREG = 8
)
(
    input  wire                    clk,
    input  wire                    rst,

    input  wire [ADDR_WIDTH-1:0]   s_axil_awaddr,
    input  wire [2:0]              s_axil_awprot,
    input  wire                    s_axil_awvalid,
    output wire                    s_axil_awready,
    input  wire [31:0]             s_axil_wdata,
    input  wire [3:0]              s_axil_wstrb,
    input  wire                    s_axil_wvalid,
    output wire                    s_axil_wready,
    output wire [1:0]              s_axil_bresp,
    output wire                    s_axil_bvalid,
    input  wire                    s_axil_bready,
    input  wire [ADDR_WIDTH-1:0]   s_axil_araddr,
    input  wire [2:0]              s_axil_arprot,
    input  wire                    s_axil_arvalid,
    output wire                    s_axil_arready,
    output wire [31:0]             s_axil_rdata,
    output wire [1:0]              s_axil_rresp,
    output wire                    s_axil_rvalid,
    input  wire                    s_axil_rready,

    output wire                    mon_wr_en,
    output wire [ADDR_WIDTH-1:2]   mon_wr_addr,
    output wire [31:0]             mon_wr_data,
    output wire [3:0]              mon_wr_strb,
    output wire                    mon_wr_refuse,
    output wire [ADDR_WIDTH-1:2]   mon_rd_addr,
    output wire [READ_STAGES-1:0]  mon_rd_stage
);

integer i;

wire wr_en;
wire [ADDR_WIDTH-1:2] wr_addr;
wire [31:0] wr_data;
wire [3:0] wr_strb;
wire [ADDR_WIDTH-1:2] rd_addr;
wire [READ_STAGES-1:0] rd_stage;

reg [31:0] regs[0:NREG-1];

wire wr_reg = wr_addr < NREG;
wire [31:0] wr_mask = {{8{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}, {8{wr_strb[0]}}};
wire [31:0] wr_value = (regs[wr_addr] & ~wr_mask) | (wr_data & wr_mask);
wire wr_refuse = wr_reg && wr_addr[2] && wr_value[31];

wire [31:0] rd_word = rd_addr < NREG ? regs[rd_addr] : 32'hA5A50000 | rd_addr;
wire [31:0] rd_data = rd_stage[READ_STAGES-1] ? rd_word : ~rd_word;

nrl_axil_regif #(
    .ADDR_WIDTH(ADDR_WIDTH),
    .READY_REG(READY_REG),
    .READ_STAGES(READ_STAGES),
    .WRITE_REG(WRITE_REG)
)
dut_inst (
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
    .wr_en(wr_en),
    .wr_addr(wr_addr),
    .wr_data(wr_data),
    .wr_strb(wr_strb),
    .wr_refuse(wr_refuse),
    .rd_addr(rd_addr),
    .rd_stage(rd_stage),
    .rd_data(rd_data)
);

always @(posedge clk) begin
    if (wr_en && wr_reg && !wr_refuse) begin
        regs[wr_addr] <= wr_value;
    end
    if (rst) begin
        for (i = 0; i < NREG; i = i + 1) begin
            regs[i] <= 32'd0;
        end
    end
end

assign mon_wr_en = wr_en;
assign mon_wr_addr = wr_addr;
assign mon_wr_data = wr_data;
assign mon_wr_strb = wr_strb;
assign mon_wr_refuse = wr_refuse;
assign mon_rd_addr = rd_addr;
assign mon_rd_stage = rd_stage;

endmodule

`resetall
`default_nettype wire
