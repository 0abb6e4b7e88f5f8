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
 * AXI4-Lite slave handshake of a register file
 *
 * Owns the five channels of the register files' AXI4-Lite slave
 * (grad_agg_regs, replay_regs); the including file holds the registers and
 * the read-word selection.
 *
 * Writes: the address and data are taken together, one write at a time: in
 * a clock where AW and W are both valid and no write response is pending,
 * wr_en is high for that clock with the write's word address, data and byte
 * strobes; the register file updates its registers at the end of that clock
 * and answers wr_refuse in it (combinational), which the B response turns
 * into SLVERR (a refused write must leave the register unchanged). bvalid
 * rises in the next clock and holds until bready.
 *
 * Reads: one read at a time. In a clock where AR is valid and no read is in
 * flight the read is taken; from the next clock rd_addr holds its word
 * address until the next read is taken. rd_stage[k] is high in the
 * (k+1)-th clock after the read was taken (the register file's read
 * pipeline may use the bits as enables); in the clock of
 * rd_stage[READ_STAGES-1] rd_data is sampled, and rvalid rises in the next
 * clock, READ_STAGES + 1 clocks after the read was taken, and holds until
 * rready. The next read is taken at the earliest in the clock after the R
 * handshake. rresp is always OKAY.
 *
 * READY_REG = 0 raises awready/wready (arready) in the clock the write (read)
 * is taken; READY_REG = 1 registers them, so they rise one clock later (the
 * write's B response then comes in the clock of its W handshake, and a read
 * answers READ_STAGES clocks after its AR handshake).
 *
 * WRITE_REG = 1 or 2 puts register stages between the bus and the register
 * file: the write taken is presented (wr_en with its address, data and
 * strobes, all from flip-flops) WRITE_REG clocks later, when the register
 * file judges it (wr_refuse) and updates its registers, and bvalid rises in
 * the clock after that; no write is taken while one waits in the stages. A
 * register file whose write rules are deep (wide range compares on the write
 * data) then starts them at a flip-flop, not at the bus. With WRITE_REG = 2
 * wr_addr, wr_data and wr_strb already hold the write in the clock before
 * wr_en (and nothing is written in that clock), so the register file may
 * judge the write over two clocks: its compares registered in that clock,
 * their OR into wr_refuse in the clock of wr_en. WRITE_REG clocks more per
 * write.
 */
module nrl_axil_regif #
(
    // Width of the byte address
    parameter ADDR_WIDTH = 12,
    // awready/wready/arready: 0 in the clock a request is taken, 1 one clock later
    parameter READY_REG = 0,
    // Clocks from a read being taken to rd_data being sampled (>= 1)
    parameter READ_STAGES = 3,
    // Clocks from a write being taken to wr_en (0, 1 or 2; registered when >= 1)
    parameter WRITE_REG = 0
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * AXI4-Lite slave
     */
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

    /*
     * Accepted write
     */
    output wire                    wr_en,
    output wire [ADDR_WIDTH-1:2]   wr_addr,
    output wire [31:0]             wr_data,
    output wire [3:0]              wr_strb,
    input  wire                    wr_refuse,

    /*
     * Read
     */
    output wire [ADDR_WIDTH-1:2]   rd_addr,
    output wire [READ_STAGES-1:0]  rd_stage,
    input  wire [31:0]             rd_data
);

// bad parameter check
initial begin
    if (ADDR_WIDTH < 3) begin
        $error("Error: ADDR_WIDTH must be at least 3 (instance %m)");
        $finish;
    end
    if (READY_REG != 0 && READY_REG != 1) begin
        $error("Error: READY_REG must be 0 or 1 (instance %m)");
        $finish;
    end
    if (READ_STAGES < 1) begin
        $error("Error: READ_STAGES must be at least 1 (instance %m)");
        $finish;
    end
    if (WRITE_REG < 0 || WRITE_REG > 2) begin
        $error("Error: WRITE_REG must be 0, 1 or 2 (instance %m)");
        $finish;
    end
end

/*
 * Write channel
 */
reg bvalid_reg, bvalid_next;
reg [1:0] bresp_reg, bresp_next;

// the write stages (WRITE_REG >= 1): the write taken, presented WRITE_REG
// clocks later; wr_pend_reg[k] is set k + 1 clocks after the take
localparam PEND_W = WRITE_REG > 0 ? WRITE_REG : 1;
reg [PEND_W-1:0] wr_pend_reg;
integer pk;
reg [ADDR_WIDTH-1:2] wr_addr_reg;
reg [31:0] wr_data_reg;
reg [3:0] wr_strb_reg;

// a pending response also covers the clock of a registered awready (and a
// write waiting in the stages, the clocks after it was taken)
wire wr_take = s_axil_awvalid && s_axil_wvalid && !bvalid_reg && !(|wr_pend_reg);
// the write the register file judges and applies in this clock
wire wr_do = WRITE_REG != 0 ? wr_pend_reg[PEND_W-1] : wr_take;

assign wr_en = wr_do;
assign wr_addr = WRITE_REG != 0 ? wr_addr_reg : s_axil_awaddr[ADDR_WIDTH-1:2];
assign wr_data = WRITE_REG != 0 ? wr_data_reg : s_axil_wdata;
assign wr_strb = WRITE_REG != 0 ? wr_strb_reg : s_axil_wstrb;

assign s_axil_bresp = bresp_reg;
assign s_axil_bvalid = bvalid_reg;

always @* begin
    bvalid_next = bvalid_reg && !s_axil_bready;
    bresp_next = bresp_reg;

    if (wr_do) begin
        bvalid_next = 1'b1;
        bresp_next = {wr_refuse, 1'b0};  // SLVERR or OKAY
    end
end

/*
 * Read channel
 */
reg [READ_STAGES-1:0] rd_stage_reg, rd_stage_next;
reg [ADDR_WIDTH-1:2] rd_addr_reg;
reg rvalid_reg, rvalid_next;
reg [31:0] rdata_reg;

// in flight from the clock after the read is taken until the R handshake
// (this also covers the clock of a registered arready)
wire rd_take = s_axil_arvalid && !(|rd_stage_reg) && !rvalid_reg;

assign rd_addr = rd_addr_reg;
assign rd_stage = rd_stage_reg;

assign s_axil_rdata = rdata_reg;
assign s_axil_rresp = 2'b00;
assign s_axil_rvalid = rvalid_reg;

always @* begin
    rd_stage_next = rd_stage_reg << 1;
    rd_stage_next[0] = rd_take;
    rvalid_next = rvalid_reg && !s_axil_rready;

    if (rd_stage_reg[READ_STAGES-1]) begin
        rvalid_next = 1'b1;
    end
end

always @(posedge clk) begin
    bvalid_reg <= bvalid_next;
    bresp_reg <= bresp_next;
    wr_pend_reg[0] <= WRITE_REG != 0 && wr_take;
    for (pk = 1; pk < PEND_W; pk = pk + 1) begin
        wr_pend_reg[pk] <= wr_pend_reg[pk-1];
    end

    if (wr_take) begin
        wr_addr_reg <= s_axil_awaddr[ADDR_WIDTH-1:2];
        wr_data_reg <= s_axil_wdata;
        wr_strb_reg <= s_axil_wstrb;
    end
    rd_stage_reg <= rd_stage_next;
    rvalid_reg <= rvalid_next;

    if (rd_take) begin
        rd_addr_reg <= s_axil_araddr[ADDR_WIDTH-1:2];
    end
    if (rd_stage_reg[READ_STAGES-1]) begin
        rdata_reg <= rd_data;
    end

    if (rst) begin
        bvalid_reg <= 1'b0;
        bresp_reg <= 2'b00;
        wr_pend_reg <= {PEND_W{1'b0}};
        rd_stage_reg <= {READ_STAGES{1'b0}};
        rvalid_reg <= 1'b0;
    end
end

/*
 * Ready signals
 */
generate

if (READY_REG) begin : g_ready_reg

    reg awready_reg;
    reg arready_reg;

    always @(posedge clk) begin
        awready_reg <= wr_take;
        arready_reg <= rd_take;

        if (rst) begin
            awready_reg <= 1'b0;
            arready_reg <= 1'b0;
        end
    end

    assign s_axil_awready = awready_reg;
    assign s_axil_wready = awready_reg;
    assign s_axil_arready = arready_reg;

end else begin : g_ready_comb

    assign s_axil_awready = wr_take;
    assign s_axil_wready = wr_take;
    assign s_axil_arready = rd_take;

end

endgenerate

// unused AXI4-Lite inputs
// verilator lint_off UNUSEDSIGNAL
wire unused_axil = &{1'b0, s_axil_awprot, s_axil_arprot, s_axil_awaddr[1:0], s_axil_araddr[1:0]};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
