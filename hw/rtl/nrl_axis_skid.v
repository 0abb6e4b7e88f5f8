// SPDX-License-Identifier: MIT
// Copyright (c) 2025 netfpga-rl contributors

// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * AXI4-Stream skid buffer (register slice)
 *
 * Registers every output signal and s_axis_tready, at full throughput (one
 * beat per clock), so no combinational path crosses it in either direction.
 * A second register (the skid) holds the beat accepted in the clock that
 * m_axis_tready fell. The switch top puts one in front of each input of the
 * output merge, whose round-robin grant would otherwise reach the engines'
 * FIFO pointers through tready in the same clock.
 */
module nrl_axis_skid #
(
    // Width of AXI stream data in bits
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits
    parameter USER_WIDTH = 128
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * AXI input
     */
    input  wire [DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire                   s_axis_tvalid,
    output wire                   s_axis_tready,
    input  wire                   s_axis_tlast,
    input  wire [USER_WIDTH-1:0]  s_axis_tuser,

    /*
     * AXI output
     */
    output wire [DATA_WIDTH-1:0]  m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_tkeep,
    output wire                   m_axis_tvalid,
    input  wire                   m_axis_tready,
    output wire                   m_axis_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_tuser
);

localparam WIDTH = DATA_WIDTH + KEEP_WIDTH + 1 + USER_WIDTH;

initial begin
    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end
end

reg s_ready_reg;
reg out_valid_reg, out_valid_next;
reg skid_valid_reg, skid_valid_next;
reg [WIDTH-1:0] out_reg;
reg [WIDTH-1:0] skid_reg;

reg load_out_from_in;
reg load_skid_from_in;
reg load_out_from_skid;

wire [WIDTH-1:0] in_beat = {s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser};

// ready next clock if the output moves now, or if the skid stays empty
// (it is empty and the output register is empty or gets no new beat)
wire s_ready_next = m_axis_tready || (!skid_valid_reg && (!out_valid_reg || !s_axis_tvalid));

assign s_axis_tready = s_ready_reg;
assign {m_axis_tdata, m_axis_tkeep, m_axis_tlast, m_axis_tuser} = out_reg;
assign m_axis_tvalid = out_valid_reg;

always @* begin
    out_valid_next = out_valid_reg;
    skid_valid_next = skid_valid_reg;
    load_out_from_in = 1'b0;
    load_skid_from_in = 1'b0;
    load_out_from_skid = 1'b0;

    if (s_ready_reg) begin
        if (m_axis_tready || !out_valid_reg) begin
            // the output register is free this clock: the input goes there
            out_valid_next = s_axis_tvalid;
            load_out_from_in = 1'b1;
        end else begin
            // the output is stalled: park the input beat in the skid
            skid_valid_next = s_axis_tvalid;
            load_skid_from_in = 1'b1;
        end
    end else if (m_axis_tready) begin
        // input held off: drain the skid into the output
        out_valid_next = skid_valid_reg;
        skid_valid_next = 1'b0;
        load_out_from_skid = 1'b1;
    end
end

always @(posedge clk) begin
    s_ready_reg <= s_ready_next;
    out_valid_reg <= out_valid_next;
    skid_valid_reg <= skid_valid_next;

    if (load_out_from_in) begin
        out_reg <= in_beat;
    end else if (load_out_from_skid) begin
        out_reg <= skid_reg;
    end
    if (load_skid_from_in) begin
        skid_reg <= in_beat;
    end

    if (rst) begin
        s_ready_reg <= 1'b0;
        out_valid_reg <= 1'b0;
        skid_valid_reg <= 1'b0;
    end
end

endmodule

`resetall
`default_nettype wire
