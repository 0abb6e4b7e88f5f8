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
 * Register block shared by the engine register files (hw/regs.yaml)
 *
 * Holds the identity block (MAGIC, VERSION, BUILD_HASH), the control block
 * (CTRL, JOB_ID, UDP_PORT, SWITCH_IP, SWITCH_MAC_HI/LO, MCAST_IP) and the
 * member table (MEMBER_PORT/IP/UDP/ROLE, 8 entries). The including register
 * file owns the AXI4-Lite handshake (nrl_axil_regif): it presents one
 * accepted write per wr_en pulse (address, data, byte strobes) and selects
 * the read words.
 * Writes honour wr_strb. A write whose value (wr_strb applied) does not fit
 * the register (JOB_ID 8 bits, UDP_PORT, SWITCH_MAC_HI and MEMBER_UDP 16,
 * MEMBER_ROLE 3; CTRL bits 30:2 set) is refused like a bad port value below:
 * the register keeps its value, CTRL bit 31 clears nothing, JOB_ID
 * invalidates nothing, and wr_refuse asks for SLVERR.
 *
 * wr_clear flags a write setting CTRL bit 31 (clear all counters; the bit
 * reads back 0), wr_job_id a write to JOB_ID; both are combinational, in
 * the cycle of wr_en.
 *
 * These rules depend on the write alone (address, data, strobes). With
 * JUDGE_REG = 1 they are judged in the clock before wr_en, from the write
 * nrl_axil_regif (WRITE_REG = 2) holds on wr_addr/wr_data/wr_strb then, and
 * registered: wr_refuse and wr_port_ok in the clock of wr_en come from
 * flip-flops.
 *
 * MEMBER_PORT[i] holds 0 or one port bit: a write whose value (wr_strb
 * applied) is anything else is refused, the entry keeps its value, and
 * wr_refuse (combinational, in the cycle of wr_en) asks the including
 * register file to answer SLVERR. wr_port_ok tells whether the write's
 * value is legal for such a register (the including file's own port
 * registers use it); it depends on wr_data and wr_strb only: the strobed
 * bytes 1..3 must be 0 and a strobed byte 0 must have at most one bit set
 * (an unstrobed byte 0 keeps the old value, which is legal).
 *
 * ctl_words holds the 32 words of 0x000-0x07C (0 where this block has no
 * register), member_words the 32 words of 0x100-0x17C; each word is a
 * constant selection of the storage, so a read mux indexed by address[6:2]
 * costs the same as before.
 *
 * Jobs (docs/protocol.md section 11): with JOBS > 1 every job has its own
 * member table (a write lands in job wr_job's, member_words are job
 * rd_job's, cfg_member_* hold every job's, job j's entry i at index 8j + i);
 * the identity and control registers are the switch's (JOB_ID is then the
 * switch's job table's, nrl_axil_split: this block's copy is unused).
 */
module nrl_common_regs #
(
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0,
    // 1: judge a write in the clock before wr_en (nrl_axil_regif WRITE_REG = 2)
    parameter JUDGE_REG = 0,
    // Jobs served (JOBS), 1 to 8: member tables
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Accepted write
     */
    input  wire                    wr_en,
    input  wire [11:2]             wr_addr,
    input  wire [31:0]             wr_data,
    input  wire [3:0]              wr_strb,
    input  wire [JW-1:0]           wr_job,
    output wire                    wr_clear,
    output wire                    wr_job_id,
    output wire                    wr_refuse,
    output wire                    wr_port_ok,

    /*
     * Configuration
     */
    output wire [1:0]              cfg_ctrl,
    output wire [7:0]              cfg_job_id,
    output wire [15:0]             cfg_udp_port,
    output wire [31:0]             cfg_switch_ip,
    output wire [47:0]             cfg_switch_mac,
    output wire [31:0]             cfg_mcast_ip,
    output wire [JOBS*8*8-1:0]     cfg_member_port,
    output wire [JOBS*8*32-1:0]    cfg_member_ip,
    output wire [JOBS*8*16-1:0]    cfg_member_udp,
    output wire [JOBS*8*3-1:0]     cfg_member_role,

    /*
     * Read words (the member table of job rd_job)
     */
    input  wire [JW-1:0]           rd_job,
    output wire [32*32-1:0]        ctl_words,
    output wire [32*32-1:0]        member_words
);

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"
// verilator lint_on UNUSEDPARAM

integer i;
genvar gi;

/*
 * Register storage
 */
reg [1:0]  ctrl_reg, ctrl_next;
reg [7:0]  job_id_reg, job_id_next;
reg [15:0] udp_port_reg, udp_port_next;
reg [31:0] switch_ip_reg, switch_ip_next;
reg [15:0] mac_hi_reg, mac_hi_next;
reg [31:0] mac_lo_reg, mac_lo_next;
reg [31:0] mcast_ip_reg, mcast_ip_next;
// member entry i of job j at 8j + i
reg [7:0]  mport_reg[0:8*JOBS-1], mport_next[0:8*JOBS-1];
reg [31:0] mip_reg[0:8*JOBS-1], mip_next[0:8*JOBS-1];
reg [15:0] mudp_reg[0:8*JOBS-1], mudp_next[0:8*JOBS-1];
reg [2:0]  mrole_reg[0:8*JOBS-1], mrole_next[0:8*JOBS-1];

reg clear_c;
reg job_id_c;

assign wr_clear = clear_c;
assign wr_job_id = job_id_c;

// byte-enable merge of the write data into an old value
function [31:0] merge(input [31:0] old, input [31:0] data, input [3:0] strb);
    integer k;
    begin
        for (k = 0; k < 4; k = k + 1) begin
            merge[8*k +: 8] = strb[k] ? data[8*k +: 8] : old[8*k +: 8];
        end
    end
endfunction

wire [11:0] waddr = {wr_addr, 2'b00};
// the member entry written: {job, index} (a job index >= JOBS: none; the
// switch's splitter sends no such page)
localparam IW = JOBS > 1 ? JW + 3 : 3;
wire [IW-1:0] widx;
wire wmember = waddr[11:8] == 4'h1 && waddr[7] == 1'b0;  // 0x100 .. 0x17F

// at most one bit set (no carry chain)
function at_most_one(input [7:0] v);
    integer a, b;
    begin
        at_most_one = 1'b1;
        for (a = 0; a < 8; a = a + 1) begin
            for (b = a + 1; b < 8; b = b + 1) begin
                if (v[a] && v[b]) begin
                    at_most_one = 1'b0;
                end
            end
        end
    end
endfunction

// the write leaves a port register 0 or one-hot
wire [23:0] wr_hi = wr_data[31:8] & {{8{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}};
wire port_ok = wr_hi == 24'd0 && (!wr_strb[0] || at_most_one(wr_data[7:0]));

// the write's value (wr_strb applied) wider than its register, per register
// kind: the old value's bits above the register are 0, so each rule depends
// on the write alone
localparam B_PORT = 0, B_CTRL = 1, B_BYTE = 2, B_HALF = 3, B_ROLE = 4, NB = 5;

wire [NB-1:0] rule_bad;

assign rule_bad[B_PORT] = !port_ok;
assign rule_bad[B_CTRL] = (wr_data[30:8] & {{7{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}}) != 23'd0 ||
                          (wr_strb[0] && wr_data[7:2] != 6'd0);
assign rule_bad[B_BYTE] = wr_hi != 24'd0;  // JOB_ID
assign rule_bad[B_HALF] = wr_hi[23:8] != 16'd0;  // UDP_PORT, SWITCH_MAC_HI, MEMBER_UDP
assign rule_bad[B_ROLE] = wr_hi != 24'd0 || (wr_strb[0] && wr_data[7:3] != 5'd0);

// the rule of the register the write addresses
reg rule_sel;

always @* begin
    case (waddr)
        REG_CTRL: rule_sel = rule_bad[B_CTRL];
        REG_JOB_ID: rule_sel = rule_bad[B_BYTE];
        REG_UDP_PORT, REG_SWITCH_MAC_HI: rule_sel = rule_bad[B_HALF];
        default: begin
            rule_sel = 1'b0;
            if (wmember) begin
                case (waddr[3:0])
                    4'h0: rule_sel = rule_bad[B_PORT];
                    4'h8: rule_sel = rule_bad[B_HALF];
                    4'hC: rule_sel = rule_bad[B_ROLE];
                    default: rule_sel = 1'b0;
                endcase
            end
        end
    endcase
end

// JUDGE_REG = 1: judged in the clock before wr_en, applied in its clock
reg refuse_j_reg;
reg [NB-1:0] bad_j_reg;

always @(posedge clk) begin
    refuse_j_reg <= rule_sel;
    bad_j_reg <= rule_bad;
end

// each register's rule, as the update below uses it
wire [NB-1:0] bad = JUDGE_REG != 0 ? bad_j_reg : rule_bad;

assign wr_port_ok = !bad[B_PORT];
assign wr_refuse = wr_en && (JUDGE_REG != 0 ? refuse_j_reg : rule_sel);

reg [31:0] wv;

always @* begin
    ctrl_next = ctrl_reg;
    job_id_next = job_id_reg;
    udp_port_next = udp_port_reg;
    switch_ip_next = switch_ip_reg;
    mac_hi_next = mac_hi_reg;
    mac_lo_next = mac_lo_reg;
    mcast_ip_next = mcast_ip_reg;
    for (i = 0; i < 8*JOBS; i = i + 1) begin
        mport_next[i] = mport_reg[i];
        mip_next[i] = mip_reg[i];
        mudp_next[i] = mudp_reg[i];
        mrole_next[i] = mrole_reg[i];
    end
    clear_c = 1'b0;
    job_id_c = 1'b0;
    wv = 32'd0;

    // a refused write changes nothing
    if (wr_en) begin
        case (waddr)
            REG_CTRL: begin
                if (!bad[B_CTRL]) begin
                    wv = merge({30'd0, ctrl_reg}, wr_data, wr_strb);
                    ctrl_next = wv[1:0];
                    clear_c = wv[31];
                end
            end
            REG_JOB_ID: begin
                if (!bad[B_BYTE]) begin
                    wv = merge({24'd0, job_id_reg}, wr_data, wr_strb);
                    job_id_next = wv[7:0];
                    job_id_c = 1'b1;
                end
            end
            REG_UDP_PORT: begin
                if (!bad[B_HALF]) begin
                    wv = merge({16'd0, udp_port_reg}, wr_data, wr_strb);
                    udp_port_next = wv[15:0];
                end
            end
            REG_SWITCH_IP: switch_ip_next = merge(switch_ip_reg, wr_data, wr_strb);
            REG_SWITCH_MAC_HI: begin
                if (!bad[B_HALF]) begin
                    wv = merge({16'd0, mac_hi_reg}, wr_data, wr_strb);
                    mac_hi_next = wv[15:0];
                end
            end
            REG_SWITCH_MAC_LO: mac_lo_next = merge(mac_lo_reg, wr_data, wr_strb);
            REG_MCAST_IP: mcast_ip_next = merge(mcast_ip_reg, wr_data, wr_strb);
            default: begin
                if (wmember) begin
                    case (waddr[3:0])
                        4'h0: if (!bad[B_PORT] && wr_strb[0]) mport_next[widx] = wr_data[7:0];
                        4'h4: mip_next[widx] = merge(mip_reg[widx], wr_data, wr_strb);
                        4'h8: begin
                            if (!bad[B_HALF]) begin
                                wv = merge({16'd0, mudp_reg[widx]}, wr_data, wr_strb);
                                mudp_next[widx] = wv[15:0];
                            end
                        end
                        default: begin
                            if (!bad[B_ROLE]) begin
                                wv = merge({29'd0, mrole_reg[widx]}, wr_data, wr_strb);
                                mrole_next[widx] = wv[2:0];
                            end
                        end
                    endcase
                end
            end
        endcase
    end
end

always @(posedge clk) begin
    ctrl_reg <= ctrl_next;
    job_id_reg <= job_id_next;
    udp_port_reg <= udp_port_next;
    switch_ip_reg <= switch_ip_next;
    mac_hi_reg <= mac_hi_next;
    mac_lo_reg <= mac_lo_next;
    mcast_ip_reg <= mcast_ip_next;
    for (i = 0; i < 8*JOBS; i = i + 1) begin
        mport_reg[i] <= mport_next[i];
        mip_reg[i] <= mip_next[i];
        mudp_reg[i] <= mudp_next[i];
        mrole_reg[i] <= mrole_next[i];
    end

    if (rst) begin
        ctrl_reg <= RST_CTRL[1:0];
        job_id_reg <= RST_JOB_ID[7:0];
        udp_port_reg <= RST_UDP_PORT[15:0];
        switch_ip_reg <= RST_SWITCH_IP;
        mac_hi_reg <= RST_SWITCH_MAC_HI[15:0];
        mac_lo_reg <= RST_SWITCH_MAC_LO;
        mcast_ip_reg <= RST_MCAST_IP;
        for (i = 0; i < 8*JOBS; i = i + 1) begin
            mport_reg[i] <= 8'd0;
            mip_reg[i] <= 32'd0;
            mudp_reg[i] <= 16'd0;
            mrole_reg[i] <= 3'd0;
        end
    end
end

assign cfg_ctrl = ctrl_reg;
assign cfg_job_id = job_id_reg;
assign cfg_udp_port = udp_port_reg;
assign cfg_switch_ip = switch_ip_reg;
assign cfg_switch_mac = {mac_hi_reg, mac_lo_reg};
assign cfg_mcast_ip = mcast_ip_reg;

/*
 * Outputs and read words
 */
generate

if (JOBS > 1) begin : g_widx_jobs
    assign widx = {wr_job, waddr[6:4]};
end else begin : g_widx_one
    assign widx = waddr[6:4];
end

for (gi = 0; gi < 8*JOBS; gi = gi + 1) begin : g_member
    assign cfg_member_port[8*gi +: 8] = mport_reg[gi];
    assign cfg_member_ip[32*gi +: 32] = mip_reg[gi];
    assign cfg_member_udp[16*gi +: 16] = mudp_reg[gi];
    assign cfg_member_role[3*gi +: 3] = mrole_reg[gi];
end

for (gi = 0; gi < 32; gi = gi + 1) begin : g_rd_word
    localparam [4:0] WI = gi;

    // constant conditions: each word elaborates to its one register
    assign ctl_words[32*gi +: 32] =
        WI == REG_MAGIC[6:2]           ? RST_MAGIC :
        WI == REG_VERSION[6:2]         ? RST_VERSION :
        WI == REG_BUILD_HASH[6:2]      ? BUILD_HASH :
        WI == REG_CTRL[6:2]            ? {30'd0, ctrl_reg} :
        WI == REG_JOB_ID[6:2]          ? {24'd0, job_id_reg} :
        WI == REG_UDP_PORT[6:2]        ? {16'd0, udp_port_reg} :
        WI == REG_SWITCH_IP[6:2]       ? switch_ip_reg :
        WI == REG_SWITCH_MAC_HI[6:2]   ? {16'd0, mac_hi_reg} :
        WI == REG_SWITCH_MAC_LO[6:2]   ? mac_lo_reg :
        WI == REG_MCAST_IP[6:2]        ? mcast_ip_reg :
        32'd0;

    // entry gi/4 of job rd_job
    localparam [31:0] ENT = gi / 4;
    wire [IW-1:0] ridx;

    if (JOBS > 1) begin : g_jobs
        assign ridx = {rd_job, ENT[2:0]};
    end else begin : g_one
        assign ridx = ENT[2:0];
    end

    case (gi % 4)
        0: begin : g_port
            assign member_words[32*gi +: 32] = {24'd0, mport_reg[ridx]};
        end
        1: begin : g_ip
            assign member_words[32*gi +: 32] = mip_reg[ridx];
        end
        2: begin : g_udp
            assign member_words[32*gi +: 32] = {16'd0, mudp_reg[ridx]};
        end
        default: begin : g_role
            assign member_words[32*gi +: 32] = {29'd0, mrole_reg[ridx]};
        end
    endcase
end

endgenerate

// verilator lint_off UNUSEDSIGNAL
wire unused_wv = &{1'b0, wv[30:16], wr_job, rd_job};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
