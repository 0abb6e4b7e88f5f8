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
 * Gradient aggregation engine register file (AXI4-Lite slave)
 *
 * Holds the identity, control, aggregation and member-table registers of
 * hw/regs.yaml and the counters the aggregation engine increments
 * (CNT_RX_GRADIENT, CNT_RX_RESULT, CNT_TX_RESULT/RESEND/UP and the drop
 * reasons BAD_LENGTH ... LATE, MISMATCH and AHEAD). Every other address of the map
 * reads 0 and ignores writes. Writes honour wstrb.
 *
 * An aggregation register write whose value (wstrb applied) is outside the
 * register's range is refused as the golden model refuses it: the register
 * keeps its value, no slot is invalidated and the write answers SLVERR.
 * The ranges: wider than the register; AGG_MEMBERS above 8 or below
 * AGG_THRESHOLD; AGG_THRESHOLD 0 or above AGG_MEMBERS; AGG_SLOTS 0 or above
 * MAX_SLOTS; AGG_ELEMS not a multiple of 16 in 16..MAX_ELEMS; AGG_EPOCH not a
 * multiple of 2^24. AGG_UPLINK_PORT and MEMBER_PORT[i] hold 0 or one port
 * bit, refused the same way.
 *
 * AGG_EPOCH is a 32-bit mailbox for the members (it reads back what was
 * written) that also bounds how far ahead a GRADIENT's round may be
 * (cfg_epoch: the ingress drops (seq - AGG_EPOCH) mod 2^32 in
 * [NRL_AGG_AHEAD_ROUNDS, 2^31) as AHEAD); a write clears no slot.
 *
 * A write to JOB_ID or to any register 0x040-0x06C pulses cfg_invalidate
 * (JOBS = 1: every slot copy's valid bit cleared). CTRL bit 31 clears all
 * counters and reads back 0. JOBS > 1: AGG_* and the member table per job
 * (the page: address bits above 11; a rule sees its page's values), every
 * job's in cfg_jobs, no cfg_invalidate (the job table frees the job's slots).
 *
 * The AXI4-Lite handshake is nrl_axil_regif (awready/arready registered,
 * one clock after a request is taken; the write presented two clocks after
 * it is taken, WRITE_REG = 2: its rules, range compares against
 * AGG_MAX_SLOTS / AGG_MAX_ELEMS and the members, are judged from flip-flops
 * in the first clock and ORed into the answer in the second, so a write
 * lands, and is answered, two clocks later than on the bus; the path from
 * the write data to bresp was 4.11 ns at the defaults); the identity, control and
 * member-table registers live in nrl_common_regs; this file owns the
 * aggregation registers, the counters and the read pipeline.
 *
 * Counters are split in two 16-bit halves with a registered carry so that
 * no path holds a 32-bit carry chain; the read path adds the pending carry
 * (reads take three clocks from the address handshake).
 */
module grad_agg_regs #
(
    // Slot memory depth, reported in AGG_MAX_SLOTS and clamping AGG_SLOTS
    parameter MAX_SLOTS = 64,
    // Largest P, reported in AGG_MAX_ELEMS and clamping AGG_ELEMS
    parameter MAX_ELEMS = 352,
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0,
    // Number of counter increment inputs (fixed by the engine)
    parameter CNT_COUNT = 19,
    // Jobs served (JOBS, docs/protocol.md section 11), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the AXI4-Lite address: the page (job) above bit 12 (computed)
    parameter AW = JOBS > 1 ? 12 + JW : 12
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * AXI4-Lite slave
     */
    input  wire [AW-1:0]           s_axil_awaddr,
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
    input  wire [AW-1:0]           s_axil_araddr,
    input  wire [2:0]              s_axil_arprot,
    input  wire                    s_axil_arvalid,
    output wire                    s_axil_arready,
    output wire [31:0]             s_axil_rdata,
    output wire [1:0]              s_axil_rresp,
    output wire                    s_axil_rvalid,
    input  wire                    s_axil_rready,

    /*
     * Configuration
     */
    output wire [1:0]              cfg_ctrl,
    output wire [7:0]              cfg_job_id,
    output wire [15:0]             cfg_udp_port,
    output wire [31:0]             cfg_switch_ip,
    output wire [47:0]             cfg_switch_mac,
    output wire [31:0]             cfg_mcast_ip,
    // every job's AGG_* registers and member table (grad_agg_cfg.vh, bits
    // 0 .. CFR_W-1 of job j's configuration word at [CFR_W*j +: CFR_W])
    output wire [JOBS*622-1:0]     cfg_jobs,
    output wire                    cfg_invalidate,

    /*
     * Counter increments (one bit per counter, see CNT_* below), each with
     * the job it counts in
     */
    input  wire [CNT_COUNT-1:0]    cnt_inc,
    input  wire [CNT_COUNT*JW-1:0] cnt_inc_job
);

// verilator lint_off UNUSEDPARAM
`include "nrl_regs.vh"
`include "grad_agg_cfg.vh"
// verilator lint_on UNUSEDPARAM

localparam [6:0] SLOTS_MAX = MAX_SLOTS;
localparam [31:0] MAX_SLOTS_W = MAX_SLOTS;
localparam [31:0] MAX_ELEMS_W = MAX_ELEMS;
localparam [8:0] ELEMS_MAX = MAX_ELEMS;
localparam [6:0] SLOTS_RST = RST_AGG_SLOTS > MAX_SLOTS ? MAX_SLOTS : RST_AGG_SLOTS[6:0];
localparam [8:0] ELEMS_RST = RST_AGG_ELEMS > MAX_ELEMS ? MAX_ELEMS : RST_AGG_ELEMS[8:0];

// bad parameter check
initial begin
    if (MAX_SLOTS < 1 || MAX_SLOTS > 64) begin
        $error("Error: MAX_SLOTS must be 1..64 (instance %m)");
        $finish;
    end
    if (MAX_ELEMS < 16 || MAX_ELEMS > 352 || MAX_ELEMS % 16 != 0) begin
        $error("Error: MAX_ELEMS must be a multiple of 16 in 16..352 (instance %m)");
        $finish;
    end
    if (CNT_COUNT != 19) begin
        $error("Error: CNT_COUNT must be 19 (instance %m)");
        $finish;
    end
    if (JOBS < 1 || JOBS > 8 || CFR_W != 622) begin
        $error("Error: JOBS must be 1..8 (instance %m)");
        $finish;
    end
end

genvar gi;

/*
 * Register storage: every job's copy (job j's at [w*j +: w]); the *_reg
 * wires below are the copies of the job a write addresses (wr_job), which
 * the rules and the update see; a read selects the job it addresses
 */
reg [JOBS*4-1:0]  members_q, threshold_q;
reg [JOBS*7-1:0]  slots_q;
reg [JOBS*9-1:0]  elems_q;
reg [JOBS-1:0]    dtype_q, mode_q, role_q;
reg [JOBS*32-1:0] staleness_q, parent_ip_q, epoch_q;
reg [JOBS*8-1:0]  uplink_q;
reg [JOBS*16-1:0] parent_udp_q;
reg [JOBS*3-1:0]  leaf_id_q;

reg [3:0]  members_next, threshold_next;
reg [6:0]  slots_next;
reg [8:0]  elems_next;
reg        dtype_next, mode_next, role_next;
reg [31:0] staleness_next, parent_ip_next, epoch_next;
reg [7:0]  uplink_next;
reg [15:0] parent_udp_next;
reg [2:0]  leaf_id_next;

reg invalidate_reg, invalidate_next;
reg clear_reg, clear_next;

/*
 * AXI4-Lite handshake: one accepted write per do_write (address and data
 * taken together); reads answer three clocks after the address handshake
 */
wire do_write;
wire [AW-1:2] wr_addr;
wire [31:0] wr_data;
wire [3:0] wr_strb;
wire wr_refuse;
wire [AW-1:2] rd_addr;
wire [2:0] rd_stage;  // the pipeline below runs every clock
reg [31:0] rd_data;

nrl_axil_regif #(
    .ADDR_WIDTH(AW),
    .READY_REG(1),
    .READ_STAGES(3),
    .WRITE_REG(2)
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
    .wr_en(do_write),
    .wr_addr(wr_addr),
    .wr_data(wr_data),
    .wr_strb(wr_strb),
    .wr_refuse(wr_refuse),
    .rd_addr(rd_addr),
    .rd_stage(rd_stage),
    .rd_data(rd_data)
);

// the jobs a write and a read address (the page)
wire [JW-1:0] wr_job;
wire [JW-1:0] rd_job;

generate

if (JOBS > 1) begin : g_page
    assign wr_job = wr_addr[AW-1:12];
    assign rd_job = rd_addr[AW-1:12];
end else begin : g_page0
    assign wr_job = 1'b0;
    assign rd_job = 1'b0;
end

endgenerate

wire [3:0]  members_reg = members_q[4*wr_job +: 4];
wire [3:0]  threshold_reg = threshold_q[4*wr_job +: 4];
wire [6:0]  slots_reg = slots_q[7*wr_job +: 7];
wire [8:0]  elems_reg = elems_q[9*wr_job +: 9];
wire        dtype_reg = dtype_q[wr_job];
wire        mode_reg = mode_q[wr_job];
wire [31:0] staleness_reg = staleness_q[32*wr_job +: 32];
wire        role_reg = role_q[wr_job];
wire [7:0]  uplink_reg = uplink_q[8*wr_job +: 8];
wire [31:0] parent_ip_reg = parent_ip_q[32*wr_job +: 32];
wire [15:0] parent_udp_reg = parent_udp_q[16*wr_job +: 16];
wire [2:0]  leaf_id_reg = leaf_id_q[3*wr_job +: 3];
wire [31:0] epoch_reg = epoch_q[32*wr_job +: 32];

/*
 * Identity, control and member-table registers
 */
wire [JOBS*8*8-1:0]  cfg_member_port;
wire [JOBS*8*32-1:0] cfg_member_ip;
wire [JOBS*8*16-1:0] cfg_member_udp;
wire [JOBS*8*3-1:0]  cfg_member_role;

wire common_clear;
wire common_job_id;
wire common_refuse;
wire common_port_ok;
wire [32*32-1:0] common_ctl_words;
wire [32*32-1:0] common_member_words;

nrl_common_regs #(
    .BUILD_HASH(BUILD_HASH),
    .JUDGE_REG(1),
    .JOBS(JOBS)
)
common_regs_inst (
    .clk(clk),
    .rst(rst),
    .wr_en(do_write),
    .wr_addr(wr_addr[11:2]),
    .wr_data(wr_data),
    .wr_strb(wr_strb),
    .wr_job(wr_job),
    .wr_clear(common_clear),
    .wr_job_id(common_job_id),
    .wr_refuse(common_refuse),
    .wr_port_ok(common_port_ok),
    .cfg_ctrl(cfg_ctrl),
    .cfg_job_id(cfg_job_id),
    .cfg_udp_port(cfg_udp_port),
    .cfg_switch_ip(cfg_switch_ip),
    .cfg_switch_mac(cfg_switch_mac),
    .cfg_mcast_ip(cfg_mcast_ip),
    .cfg_member_port(cfg_member_port),
    .cfg_member_ip(cfg_member_ip),
    .cfg_member_udp(cfg_member_udp),
    .cfg_member_role(cfg_member_role),
    .rd_job(rd_job),
    .ctl_words(common_ctl_words),
    .member_words(common_member_words)
);

// byte-enable merge of the write data into an old value
function [31:0] merge(input [31:0] old, input [31:0] data, input [3:0] strb);
    integer k;
    begin
        for (k = 0; k < 4; k = k + 1) begin
            merge[8*k +: 8] = strb[k] ? data[8*k +: 8] : old[8*k +: 8];
        end
    end
endfunction

wire [11:0] waddr = {wr_addr[11:2], 2'b00};

/*
 * Write rules, judged over two clocks: nrl_axil_regif (WRITE_REG = 2) holds
 * the write on wr_addr/wr_data/wr_strb in the clock before wr_en, when each
 * aggregation register's rule is judged on it as if it addressed that
 * register, and the address decoded, both registered; in the clock of wr_en
 * the refusal is the rule of the register addressed (two LUT levels from
 * flip-flops to bresp). Nothing is written in the judging clock, so the
 * registers a rule compares against (MEMBERS, THRESHOLD) hold the values
 * they have when the write lands.
 */
localparam J_MEMBERS = 0, J_THRESHOLD = 1, J_SLOTS = 2, J_ELEMS = 3, J_BIT = 4,
           J_PARENT_UDP = 5, J_LEAF_ID = 6, J_EPOCH = 7, J_UPLINK = 8, NJ = 9;

// each register's value after the write (wr_strb applied)
wire [31:0] wv_members = merge({28'd0, members_reg}, wr_data, wr_strb);
wire [31:0] wv_threshold = merge({28'd0, threshold_reg}, wr_data, wr_strb);
wire [31:0] wv_slots = merge({25'd0, slots_reg}, wr_data, wr_strb);
wire [31:0] wv_elems = merge({23'd0, elems_reg}, wr_data, wr_strb);
// DTYPE, MODE and ROLE: one bit, the same rule (bits 31:1 of a 1-bit register's value)
wire [31:1] wv_bit_hi = wr_data[31:1] & {{8{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}, {7{wr_strb[0]}}};
wire [31:0] wv_parent_udp = merge({16'd0, parent_udp_reg}, wr_data, wr_strb);
wire [31:0] wv_leaf_id = merge({29'd0, leaf_id_reg}, wr_data, wr_strb);
wire [31:0] wv_epoch = merge(epoch_reg, wr_data, wr_strb);

wire [NJ-1:0] judge_hit;
wire [NJ-1:0] judge_bad;

assign judge_hit[J_MEMBERS] = waddr == REG_AGG_MEMBERS;
assign judge_hit[J_THRESHOLD] = waddr == REG_AGG_THRESHOLD;
assign judge_hit[J_SLOTS] = waddr == REG_AGG_SLOTS;
assign judge_hit[J_ELEMS] = waddr == REG_AGG_ELEMS;
assign judge_hit[J_BIT] = waddr == REG_AGG_DTYPE || waddr == REG_AGG_MODE || waddr == REG_AGG_ROLE;
assign judge_hit[J_PARENT_UDP] = waddr == REG_AGG_PARENT_UDP;
assign judge_hit[J_LEAF_ID] = waddr == REG_AGG_LEAF_ID;
assign judge_hit[J_EPOCH] = waddr == REG_AGG_EPOCH;
assign judge_hit[J_UPLINK] = waddr == REG_AGG_UPLINK_PORT;

assign judge_bad[J_MEMBERS] = wv_members > 32'd8 || wv_members[3:0] < threshold_reg;
assign judge_bad[J_THRESHOLD] = wv_threshold[31:4] != 28'd0 || wv_threshold[3:0] == 4'd0 ||
                                wv_threshold[3:0] > members_reg;
assign judge_bad[J_SLOTS] = wv_slots[31:7] != 25'd0 || wv_slots[6:0] == 7'd0 || wv_slots[6:0] > SLOTS_MAX;
assign judge_bad[J_ELEMS] = wv_elems[31:14] != 18'd0 || wv_elems[3:0] != 4'd0 || wv_elems[13:4] == 10'd0 ||
                            wv_elems[13:0] > {5'd0, ELEMS_MAX};
assign judge_bad[J_BIT] = wv_bit_hi != 31'd0;
assign judge_bad[J_PARENT_UDP] = wv_parent_udp[31:16] != 16'd0;
assign judge_bad[J_LEAF_ID] = wv_leaf_id[31:3] != 29'd0;
// a mailbox and the far-ahead bound: a multiple of 2^24
assign judge_bad[J_EPOCH] = wv_epoch[23:0] != 24'd0;
// 0 or one-hot (nrl_common_regs judges it on the write: common_port_ok)
assign judge_bad[J_UPLINK] = 1'b0;

reg [NJ-1:0] hit_reg;
reg [NJ-1:0] bad_reg;

always @(posedge clk) begin
    hit_reg <= judge_hit;
    bad_reg <= judge_bad;
end

// a refused port register write answers SLVERR
wire uplink_refuse = hit_reg[J_UPLINK] && !common_port_ok;
// an out-of-range aggregation register write answers SLVERR
wire agg_refuse = |(hit_reg & bad_reg);

assign wr_refuse = common_refuse || (do_write && (uplink_refuse || agg_refuse));

always @* begin
    members_next = members_reg;
    threshold_next = threshold_reg;
    slots_next = slots_reg;
    elems_next = elems_reg;
    dtype_next = dtype_reg;
    mode_next = mode_reg;
    staleness_next = staleness_reg;
    role_next = role_reg;
    uplink_next = uplink_reg;
    parent_ip_next = parent_ip_reg;
    parent_udp_next = parent_udp_reg;
    leaf_id_next = leaf_id_reg;
    epoch_next = epoch_reg;
    invalidate_next = 1'b0;
    clear_next = 1'b0;

    // a refused write changes nothing (bad_reg: the rule of the register addressed)
    if (do_write) begin
        case (waddr)
            REG_AGG_MEMBERS: begin
                if (!bad_reg[J_MEMBERS]) begin
                    members_next = wv_members[3:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_THRESHOLD: begin
                if (!bad_reg[J_THRESHOLD]) begin
                    threshold_next = wv_threshold[3:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_SLOTS: begin
                if (!bad_reg[J_SLOTS]) begin
                    slots_next = wv_slots[6:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_ELEMS: begin
                if (!bad_reg[J_ELEMS]) begin
                    elems_next = {wv_elems[8:4], 4'd0};
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_DTYPE: begin
                if (!bad_reg[J_BIT]) begin
                    dtype_next = wr_strb[0] ? wr_data[0] : dtype_reg;
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_MODE: begin
                if (!bad_reg[J_BIT]) begin
                    mode_next = wr_strb[0] ? wr_data[0] : mode_reg;
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_STALENESS: begin
                staleness_next = merge(staleness_reg, wr_data, wr_strb);
                invalidate_next = 1'b1;
            end
            REG_AGG_ROLE: begin
                if (!bad_reg[J_BIT]) begin
                    role_next = wr_strb[0] ? wr_data[0] : role_reg;
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_UPLINK_PORT: begin
                // 0 or one-hot, else refused (and nothing is invalidated)
                if (common_port_ok) begin
                    if (wr_strb[0]) uplink_next = wr_data[7:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_PARENT_IP: begin
                parent_ip_next = merge(parent_ip_reg, wr_data, wr_strb);
                invalidate_next = 1'b1;
            end
            REG_AGG_PARENT_UDP: begin
                if (!bad_reg[J_PARENT_UDP]) begin
                    parent_udp_next = wv_parent_udp[15:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_LEAF_ID: begin
                if (!bad_reg[J_LEAF_ID]) begin
                    leaf_id_next = wv_leaf_id[2:0];
                    invalidate_next = 1'b1;
                end
            end
            REG_AGG_EPOCH: begin
                // a mailbox and the far-ahead bound: no slot is invalidated
                if (!bad_reg[J_EPOCH]) begin
                    epoch_next = wv_epoch;
                end
            end
            default: begin
                // control block and member table: nrl_common_regs
                invalidate_next = common_job_id;
                clear_next = common_clear;
            end
        endcase
    end
end

integer j;

always @(posedge clk) begin
    // the job written takes the new values (the others keep theirs)
    for (j = 0; j < JOBS; j = j + 1) begin
        if (wr_job == j[JW-1:0]) begin
            members_q[4*j +: 4] <= members_next;
            threshold_q[4*j +: 4] <= threshold_next;
            slots_q[7*j +: 7] <= slots_next;
            elems_q[9*j +: 9] <= elems_next;
            dtype_q[j] <= dtype_next;
            mode_q[j] <= mode_next;
            staleness_q[32*j +: 32] <= staleness_next;
            role_q[j] <= role_next;
            uplink_q[8*j +: 8] <= uplink_next;
            parent_ip_q[32*j +: 32] <= parent_ip_next;
            parent_udp_q[16*j +: 16] <= parent_udp_next;
            leaf_id_q[3*j +: 3] <= leaf_id_next;
            epoch_q[32*j +: 32] <= epoch_next;
        end
    end
    invalidate_reg <= invalidate_next;
    clear_reg <= clear_next;

    if (rst) begin
        members_q <= {JOBS{RST_AGG_MEMBERS[3:0]}};
        threshold_q <= {JOBS{RST_AGG_THRESHOLD[3:0]}};
        slots_q <= {JOBS{SLOTS_RST}};
        elems_q <= {JOBS{ELEMS_RST}};
        dtype_q <= {JOBS{RST_AGG_DTYPE[0]}};
        mode_q <= {JOBS{RST_AGG_MODE[0]}};
        staleness_q <= {JOBS{RST_AGG_STALENESS}};
        role_q <= {JOBS{RST_AGG_ROLE[0]}};
        uplink_q <= {JOBS{RST_AGG_UPLINK_PORT[7:0]}};
        parent_ip_q <= {JOBS{RST_AGG_PARENT_IP}};
        parent_udp_q <= {JOBS{RST_AGG_PARENT_UDP[15:0]}};
        leaf_id_q <= {JOBS{RST_AGG_LEAF_ID[2:0]}};
        epoch_q <= {JOBS{RST_AGG_EPOCH}};
        invalidate_reg <= 1'b0;
        clear_reg <= 1'b0;
    end
end

// every job's configuration word (grad_agg_cfg.vh: the fields from CF_MEMBERS
// at bit 0 up to CF_MROLE, in that order)
generate

for (gi = 0; gi < JOBS; gi = gi + 1) begin : g_cfg
    assign cfg_jobs[CFR_W*gi +: CFR_W] = {cfg_member_role[24*gi +: 24], cfg_member_udp[128*gi +: 128],
        cfg_member_ip[256*gi +: 256], cfg_member_port[64*gi +: 64], epoch_q[32*gi +: 32],
        parent_ip_q[32*gi +: 32], staleness_q[32*gi +: 32], parent_udp_q[16*gi +: 16], uplink_q[8*gi +: 8],
        leaf_id_q[3*gi +: 3], role_q[gi], mode_q[gi], dtype_q[gi], elems_q[9*gi +: 9], slots_q[7*gi +: 7],
        threshold_q[4*gi +: 4], members_q[4*gi +: 4]};
end

endgenerate

// with several jobs the switch's job table frees the written job's slots
// (nrl_axil_split slot_free): the engine's own invalidation is the one-job
// switch's
assign cfg_invalidate = JOBS == 1 && invalidate_reg;

/*
 * Counters (nrl_counter_bank): {hi, lo} with the carry out of lo registered
 * into hi. Counter i counts cnt_inc[i]; its word in the counter window, in
 * cnt_inc order from bit 0: RX_GRADIENT, RX_RESULT, TX_RESULT, TX_RESEND,
 * TX_UP, the seven shared drops (BAD_LENGTH .. BAD_COUNT), BAD_DTYPE,
 * BAD_SLOT, STALE, DUPLICATE, LATE, MISMATCH, AHEAD.
 */
localparam [5*CNT_COUNT-1:0] CNT_WORDS = {
    REG_CNT_DROP_AHEAD[6:2], REG_CNT_DROP_MISMATCH[6:2], REG_CNT_DROP_LATE[6:2], REG_CNT_DROP_DUPLICATE[6:2],
    REG_CNT_DROP_STALE[6:2], REG_CNT_DROP_BAD_SLOT[6:2], REG_CNT_DROP_BAD_DTYPE[6:2],
    REG_CNT_DROP_BAD_COUNT[6:2], REG_CNT_DROP_SPOOFED[6:2], REG_CNT_DROP_UNKNOWN_WORKER[6:2],
    REG_CNT_DROP_DISABLED[6:2], REG_CNT_DROP_BAD_JOB[6:2], REG_CNT_DROP_BAD_HEADER[6:2],
    REG_CNT_DROP_BAD_LENGTH[6:2], REG_CNT_TX_UP[6:2], REG_CNT_TX_RESEND[6:2],
    REG_CNT_TX_RESULT[6:2], REG_CNT_RX_RESULT[6:2], REG_CNT_RX_GRADIENT[6:2]};

wire [4:0] cnt_rd_word;
// verilator lint_off UNUSEDSIGNAL
wire cnt_rd_hit;  // the counter words of other engines read 0
// verilator lint_on UNUSEDSIGNAL
wire [31:0] cnt_rd_value;
wire cnt_rd_carry;

nrl_counter_bank #(
    .COUNT(CNT_COUNT),
    .WORDS(CNT_WORDS),
    .REGISTER_INC(0),
    .JOBS(JOBS)
)
counter_bank_inst (
    .clk(clk),
    .rst(rst),
    .inc(cnt_inc),
    .inc_job(cnt_inc_job),
    .clear(clear_reg),
    .rd_word(cnt_rd_word),
    .rd_job(rd_job),
    .rd_hit(cnt_rd_hit),
    .rd_value(cnt_rd_value),
    .rd_carry(cnt_rd_carry)
);

/*
 * Read pipeline behind nrl_axil_regif (rd_addr holds the read's word
 * address): three 32-word selects (identity/control/aggregation, member
 * table, counters) and the region, then the region select with the pending
 * counter carry added (nrl_axil_regif samples it three clocks after the
 * read is taken, when rd_addr has been stable for two clocks)
 */
assign cnt_rd_word = rd_addr[6:2];

// 0x000-0x07C: identity, control, aggregation (word index = address[6:2])
wire [31:0] cfg_word[0:31];
// 0x100-0x17C: member table
wire [31:0] member_word[0:31];
generate

for (gi = 0; gi < 32; gi = gi + 1) begin : g_rd_word
    localparam [4:0] WI = gi;

    // constant conditions: each word elaborates to its one register
    assign cfg_word[gi] =
        WI == REG_AGG_MEMBERS[6:2]     ? {28'd0, members_q[4*rd_job +: 4]} :
        WI == REG_AGG_THRESHOLD[6:2]   ? {28'd0, threshold_q[4*rd_job +: 4]} :
        WI == REG_AGG_SLOTS[6:2]       ? {25'd0, slots_q[7*rd_job +: 7]} :
        WI == REG_AGG_ELEMS[6:2]       ? {23'd0, elems_q[9*rd_job +: 9]} :
        WI == REG_AGG_DTYPE[6:2]       ? {31'd0, dtype_q[rd_job]} :
        WI == REG_AGG_MODE[6:2]        ? {31'd0, mode_q[rd_job]} :
        WI == REG_AGG_STALENESS[6:2]   ? staleness_q[32*rd_job +: 32] :
        WI == REG_AGG_ROLE[6:2]        ? {31'd0, role_q[rd_job]} :
        WI == REG_AGG_UPLINK_PORT[6:2] ? {24'd0, uplink_q[8*rd_job +: 8]} :
        WI == REG_AGG_PARENT_IP[6:2]   ? parent_ip_q[32*rd_job +: 32] :
        WI == REG_AGG_PARENT_UDP[6:2]  ? {16'd0, parent_udp_q[16*rd_job +: 16]} :
        WI == REG_AGG_LEAF_ID[6:2]     ? {29'd0, leaf_id_q[3*rd_job +: 3]} :
        WI == REG_AGG_MAX_SLOTS[6:2]   ? MAX_SLOTS_W :
        WI == REG_AGG_MAX_ELEMS[6:2]   ? MAX_ELEMS_W :
        WI == REG_AGG_EPOCH[6:2]       ? epoch_q[32*rd_job +: 32] :
        common_ctl_words[32*gi +: 32];

    assign member_word[gi] = common_member_words[32*gi +: 32];
end

endgenerate

localparam [1:0] RG_CFG = 2'd0, RG_MEMBER = 2'd1, RG_CNT = 2'd2, RG_NONE = 2'd3;

// stage 1: the three word selects and the region
reg [31:0] rd_cfg_reg;
reg [31:0] rd_member_reg;
reg [31:0] rd_cnt_reg;
reg        rd_cy_reg;
reg [1:0]  rd_region_reg;

always @(posedge clk) begin
    rd_cfg_reg <= cfg_word[rd_addr[6:2]];
    rd_member_reg <= member_word[rd_addr[6:2]];
    rd_cnt_reg <= cnt_rd_value;
    rd_cy_reg <= cnt_rd_carry;
    if (rd_addr[7]) begin
        rd_region_reg <= RG_NONE;
    end else begin
        case (rd_addr[11:8])
            4'h0: rd_region_reg <= RG_CFG;
            4'h1: rd_region_reg <= RG_MEMBER;
            4'h2: rd_region_reg <= RG_CNT;
            default: rd_region_reg <= RG_NONE;
        endcase
    end
end

// stage 2: the read word
always @* begin
    case (rd_region_reg)
        RG_CFG: rd_data = rd_cfg_reg;
        RG_MEMBER: rd_data = rd_member_reg;
        RG_CNT: rd_data = {rd_cnt_reg[31:16] + {15'd0, rd_cy_reg}, rd_cnt_reg[15:0]};
        default: rd_data = 32'd0;
    endcase
end

// verilator lint_off UNUSEDSIGNAL
wire unused_rd = &{1'b0, rd_stage};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
