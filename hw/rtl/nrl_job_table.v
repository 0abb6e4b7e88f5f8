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
 * The job table of the netfpga-rl switch (docs/protocol.md section 11)
 *
 * Holds, per job j < JOBS, the job's share of the switch (JOB_ID, JOB_SLOT_BASE,
 * JOB_SLOT_COUNT, JOB_RPL_BASE, JOB_RPL_CAP, JOB_RPL_RECORD), its JOB_LEASE and
 * JOB_OWNER, and the global JOB_ENABLE; judges every write to them by the
 * section's rules and drives the table to the engines.
 *
 * A write (wr_start, one clock; wr_job / wr_addr / wr_data / wr_strb held until
 * busy falls) is judged over five clocks:
 *   1  the value as it lands (the byte strobes applied to the old value) and
 *      the register decoded;
 *   2  the job's row with the value in it (the candidate) and the rules of the
 *      value alone: widths, JOB_RPL_RECORD's range, JOB_OWNER's claim,
 *      JOB_ENABLE_SET's "none of the mask enabled already", the JOB_ENABLE
 *      the write makes;
 *   3  the candidate's ends (JOB_SLOT_BASE + JOB_SLOT_COUNT, JOB_RPL_BASE +
 *      JOB_RPL_CAP) and JOB_RPL_CAP - 1;
 *   4  the share rules (the memories' sizes, JOB_RPL_CAP a power of two and
 *      JOB_RPL_BASE a multiple of it) and the collisions: the candidate against
 *      every other enabled job (id, slot range, table), and for a JOB_ENABLE
 *      (or _SET / _CLR) each newly enabled job against the others of the new
 *      mask, from pair_reg, the collision matrix of the stored rows (kept
 *      every clock);
 *   5  refused (wr_err, nothing changed) or taken: the row written, and the
 *      side effects queued.
 * Side effects (section 11): table_carve pulses for a job whose table is
 * emptied (a JOB_RPL_* write, a JOB_ENABLE bit changed); slot_free pulses the
 * mask of memory slots whose copies are freed (a JOB_ENABLE bit changed: that
 * job's range; a JOB_ID / JOB_SLOT_* write to an enabled job: its range before
 * and after; free_start: an aggregation register of an enabled job written,
 * its range), one range per clock from a queue. busy stays high until the
 * last mask has been driven, so the write's response follows its effects.
 *
 * JOBS = 1: the share is fixed (fixed_share: in hw/regs.yaml, generated into
 * FIXED_SHARE_WORDS): every write to it is refused; JOB_LEASE is kept; JOB_ID
 * is the engines' register, of which the table keeps a shadow (id_load).
 *
 * rd_job / rd_addr -> rd_data: the register's value, combinationally from
 * flip-flops (JOBS, JOB_ENABLE; JOB_ENABLE_SET / _CLR read 0); in the clock
 * of wr_start the register written (the one read port serves both).
 */
module nrl_job_table #
(
    // Jobs served, 1 to 8
    parameter JOBS = 1,
    // Slot memory depth (AGG_MAX_SLOTS), 1 to 64
    parameter AGG_MAX_SLOTS = 64,
    // Record memory in records (RPL_CAPACITY), a power of two
    parameter RPL_CAPACITY = 16384,
    // Largest record in bytes (RPL_RECORD_BYTES)
    parameter RPL_RECORD_BYTES = 128,
    // Width of a job index
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire                       clk,
    input  wire                       rst,

    input  wire                       wr_start,
    input  wire [JW-1:0]              wr_job,
    input  wire [11:2]                wr_addr,
    input  wire [31:0]                wr_data,
    input  wire [3:0]                 wr_strb,
    input  wire                       free_start,
    input  wire [JW-1:0]              free_job,
    // JOBS = 1: the engines took a JOB_ID write (wr_data / wr_strb): keep its shadow
    input  wire                       id_load,
    output wire                       busy,
    output wire                       wr_err,

    input  wire [JW-1:0]              rd_job,
    input  wire [11:2]                rd_addr,
    output reg  [31:0]                rd_data,

    output wire [JOBS*8-1:0]          job_id,
    output wire [JOBS-1:0]            job_enable,
    output wire [JOBS*7-1:0]          job_slot_base,
    output wire [JOBS*7-1:0]          job_slot_count,
    output wire [JOBS*32-1:0]         job_rpl_base,
    output wire [JOBS*32-1:0]         job_rpl_cap,
    output wire [JOBS*14-1:0]         job_rpl_record,
    output wire [AGG_MAX_SLOTS-1:0]   slot_free,
    output wire [JOBS-1:0]            table_carve
);

/* verilator lint_off UNUSEDPARAM */
`include "nrl_regs.vh"
/* verilator lint_on UNUSEDPARAM */

initial begin
    if (JOBS < 1 || JOBS > 8) begin
        $error("Error: JOBS must be 1 to 8 (instance %m)");
        $finish;
    end
    if (AGG_MAX_SLOTS < 1 || AGG_MAX_SLOTS > 64) begin
        $error("Error: AGG_MAX_SLOTS must be 1 to 64 (instance %m)");
        $finish;
    end
end

localparam [31:0] CAP32 = RPL_CAPACITY;
localparam [32:0] CAP = {1'b0, CAP32};
localparam [31:0] SLOTS32 = AGG_MAX_SLOTS;
localparam [7:0] MAX_SLOTS = SLOTS32[7:0];
localparam [31:0] REC_MAX = RPL_RECORD_BYTES;
localparam [JOBS-1:0] JOB_ONE = 1;
localparam [31:0] JOBS32 = JOBS;
localparam [JW:0] JOBS_N = JOBS32[JW:0];

// the rows
reg [7:0]  id_reg [0:JOBS-1];
reg [6:0]  sbase_reg [0:JOBS-1];
reg [6:0]  scount_reg [0:JOBS-1];
reg [7:0]  send_reg [0:JOBS-1];
reg [31:0] rbase_reg [0:JOBS-1];
reg [31:0] rcap_reg [0:JOBS-1];
reg [32:0] rend_reg [0:JOBS-1];
reg [13:0] rrec_reg [0:JOBS-1];
reg [31:0] lease_reg [0:JOBS-1];
reg [31:0] owner_reg [0:JOBS-1];
reg [JOBS-1:0] enable_reg;

genvar g;
generate
for (g = 0; g < JOBS; g = g + 1) begin : g_out
    assign job_id[g*8 +: 8] = id_reg[g];
    assign job_slot_base[g*7 +: 7] = sbase_reg[g];
    assign job_slot_count[g*7 +: 7] = scount_reg[g];
    assign job_rpl_base[g*32 +: 32] = rbase_reg[g];
    assign job_rpl_cap[g*32 +: 32] = rcap_reg[g];
    assign job_rpl_record[g*14 +: 14] = rrec_reg[g];
end
endgenerate
assign job_enable = enable_reg;

// a job index within the table (an index >= JOBS reads job 0: the split refuses those pages)
function [JW-1:0] jsel(input [JW-1:0] j);
    begin
        jsel = ({1'b0, j} < JOBS_N) ? j : {JW{1'b0}};
    end
endfunction

// a register's value in a job's row: for the bus (rd_data), and in the clock of
// wr_start for the write (the value its strobes merge into: rd_data then reads the
// register written; the split reads nothing while it writes). Written out, not a
// function: a simulator's @* need not see the rows a function reads.
wire [JW-1:0] wj = jsel(wr_job);
wire [JW-1:0] rj = wr_start ? wj : jsel(rd_job);
wire [11:2] ra = wr_start ? wr_addr : rd_addr;
always @* begin
    case ({ra, 2'b00})
        REG_JOBS: rd_data = JOBS;
        REG_JOB_ENABLE: rd_data = {{32-JOBS{1'b0}}, enable_reg};
        REG_JOB_ID: rd_data = {24'd0, id_reg[rj]};
        REG_JOB_SLOT_BASE: rd_data = {25'd0, sbase_reg[rj]};
        REG_JOB_SLOT_COUNT: rd_data = {25'd0, scount_reg[rj]};
        REG_JOB_RPL_BASE: rd_data = rbase_reg[rj];
        REG_JOB_RPL_CAP: rd_data = rcap_reg[rj];
        REG_JOB_RPL_RECORD: rd_data = {18'd0, rrec_reg[rj]};
        REG_JOB_LEASE: rd_data = lease_reg[rj];
        REG_JOB_OWNER: rd_data = owner_reg[rj];
        default: rd_data = 32'd0;  // JOB_ENABLE_SET / _CLR read 0
    endcase
end

/*
 * the collision matrix of the stored rows: pair_reg[k*JOBS+m] for k < m (the
 * relation is symmetric; the other bits are 0)
 */
reg [JOBS*JOBS-1:0] pair_reg;
integer pk, pm;
always @(posedge clk) begin
    for (pk = 0; pk < JOBS; pk = pk + 1) begin
        for (pm = 0; pm < JOBS; pm = pm + 1) begin
            pair_reg[pk*JOBS+pm] <= pk < pm && (id_reg[pk] == id_reg[pm] ||
                (scount_reg[pk] != 7'd0 && scount_reg[pm] != 7'd0 &&
                 {1'b0, sbase_reg[pk]} < send_reg[pm] && {1'b0, sbase_reg[pm]} < send_reg[pk]) ||
                (rcap_reg[pk] != 32'd0 && rcap_reg[pm] != 32'd0 &&
                 {1'b0, rbase_reg[pk]} < rend_reg[pm] && {1'b0, rbase_reg[pm]} < rend_reg[pk]));
        end
    end
end

/*
 * the write, judged over five clocks (ph_reg[i]: stage i+1 is this clock's)
 */
reg [4:0] ph_reg;
reg [JW-1:0] wj_reg;
reg [31:0] nv_reg;
// the register written: ID, SLOT_BASE, SLOT_COUNT, RPL_BASE, RPL_CAP, RPL_RECORD,
// LEASE, OWNER, ENABLE, ENABLE_SET, ENABLE_CLR
reg k_id, k_sb, k_sc, k_rb, k_rc, k_rr, k_ls, k_ow, k_en, k_set, k_clr;
reg fixed_reg;
reg bad1_reg, bad2_reg, conf_reg, en_conf_reg, err_reg;
reg [7:0]  c_id_reg;
reg [6:0]  c_sb_reg, c_sc_reg;
reg [31:0] c_rb_reg, c_rc_reg, c_rc_m1_reg;
reg [7:0]  c_se_reg;
reg [32:0] c_re_reg;
reg [JOBS-1:0] eff_en_reg, newly_reg;

wire [31:0] wmask = {{8{wr_strb[3]}}, {8{wr_strb[2]}}, {8{wr_strb[1]}}, {8{wr_strb[0]}}};
wire [11:0] wa = {wr_addr, 2'b00};

// the JOB_ENABLE rule's width: bits 0 .. JOBS - 1 (bits_of JOBS within width 8)
wire en_wide = (nv_reg >> JOBS) != 32'd0;

// the free queue and the slot mask generator
reg [JOBS-1:0] fq_reg;
reg old_valid_reg;
reg [6:0] old_base_reg;
reg [7:0] old_end_reg;
reg src_valid_reg;
reg [6:0] src_base_reg;
reg [7:0] src_end_reg;
reg [AGG_MAX_SLOTS-1:0] slot_free_reg;
reg [JOBS-1:0] carve_reg;

assign busy = ph_reg != 5'd0 || fq_reg != {JOBS{1'b0}} || old_valid_reg || src_valid_reg;
assign wr_err = err_reg;
assign slot_free = slot_free_reg;
assign table_carve = carve_reg;

// the lowest job of a mask
function [JW-1:0] lowest(input [JOBS-1:0] m);
    integer i;
    begin
        lowest = {JW{1'b0}};
        for (i = JOBS - 1; i >= 0; i = i - 1) begin
            if (m[i]) begin
                lowest = i[JW-1:0];
            end
        end
    end
endfunction

wire [JW-1:0] fq_low = lowest(fq_reg);
wire taken = ph_reg[3] && !(fixed_reg || bad1_reg || bad2_reg || conf_reg || en_conf_reg);

// the candidate against every other enabled job; the newly enabled jobs against the new mask
integer k, s;
reg any_conf;
reg any_en_conf;
always @* begin
    any_conf = 1'b0;
    for (k = 0; k < JOBS; k = k + 1) begin
        if (k[JW-1:0] != wj_reg && enable_reg[k] && (id_reg[k] == c_id_reg ||
                (c_sc_reg != 7'd0 && scount_reg[k] != 7'd0 &&
                 {1'b0, c_sb_reg} < send_reg[k] && {1'b0, sbase_reg[k]} < c_se_reg) ||
                (c_rc_reg != 32'd0 && rcap_reg[k] != 32'd0 &&
                 {1'b0, c_rb_reg} < rend_reg[k] && {1'b0, rbase_reg[k]} < c_re_reg))) begin
            any_conf = 1'b1;
        end
    end
    any_en_conf = 1'b0;
    for (k = 0; k < JOBS; k = k + 1) begin
        for (s = 0; s < JOBS; s = s + 1) begin
            if (newly_reg[k] && eff_en_reg[s] && (pair_reg[k*JOBS+s] || pair_reg[s*JOBS+k])) begin
                any_en_conf = 1'b1;
            end
        end
    end
end

// the free queue's next value: a range taken off, the ranges a write or free_start adds
reg [JOBS-1:0] fq_next;
always @* begin
    fq_next = fq_reg;
    if (!old_valid_reg && fq_reg != {JOBS{1'b0}}) begin
        fq_next = fq_next & ~(JOB_ONE << fq_low);
    end
    if (taken && (k_en || k_set || k_clr)) begin
        fq_next = fq_next | (eff_en_reg ^ enable_reg);
    end
    if (taken && (k_id || k_sb || k_sc) && enable_reg[wj_reg]) begin
        fq_next = fq_next | (JOB_ONE << wj_reg);
    end
    if (free_start && enable_reg[jsel(free_job)]) begin
        fq_next = fq_next | (JOB_ONE << jsel(free_job));
    end
end

integer q;
always @(posedge clk) begin
    ph_reg <= {ph_reg[3:0], wr_start};
    carve_reg <= {JOBS{1'b0}};

    // stage 1: the value as it lands, the register
    if (wr_start) begin
        wj_reg <= wj;
        nv_reg <= (rd_data & ~wmask) | (wr_data & wmask);
        k_id <= wa == REG_JOB_ID;
        k_sb <= wa == REG_JOB_SLOT_BASE;
        k_sc <= wa == REG_JOB_SLOT_COUNT;
        k_rb <= wa == REG_JOB_RPL_BASE;
        k_rc <= wa == REG_JOB_RPL_CAP;
        k_rr <= wa == REG_JOB_RPL_RECORD;
        k_ls <= wa == REG_JOB_LEASE;
        k_ow <= wa == REG_JOB_OWNER;
        k_en <= wa == REG_JOB_ENABLE;
        k_set <= wa == REG_JOB_ENABLE_SET;
        k_clr <= wa == REG_JOB_ENABLE_CLR;
        fixed_reg <= JOBS == 1 && wr_addr[11:8] == 4'h0 && FIXED_SHARE_WORDS[wr_addr[7:2]];
    end

    // stage 2: the candidate row, the rules of the value alone
    c_id_reg <= k_id ? nv_reg[7:0] : id_reg[wj_reg];
    c_sb_reg <= k_sb ? nv_reg[6:0] : sbase_reg[wj_reg];
    c_sc_reg <= k_sc ? nv_reg[6:0] : scount_reg[wj_reg];
    c_rb_reg <= k_rb ? nv_reg : rbase_reg[wj_reg];
    c_rc_reg <= k_rc ? nv_reg : rcap_reg[wj_reg];
    eff_en_reg <= k_en ? nv_reg[JOBS-1:0] : k_set ? enable_reg | nv_reg[JOBS-1:0] :
        k_clr ? enable_reg & ~nv_reg[JOBS-1:0] : enable_reg;
    bad1_reg <= (k_id && nv_reg[31:8] != 24'd0) ||
        ((k_sb || k_sc) && nv_reg[31:7] != 25'd0) ||
        (k_rr && (nv_reg[31:14] != 18'd0 || nv_reg[5:0] != 6'd0 || nv_reg < 32'd64 || nv_reg > REC_MAX)) ||
        ((k_en || k_set || k_clr) && en_wide) ||
        (k_ow && nv_reg != 32'd0 && owner_reg[wj_reg] != 32'd0 && owner_reg[wj_reg] != nv_reg) ||
        (k_set && (enable_reg & nv_reg[JOBS-1:0]) != {JOBS{1'b0}});

    // stage 3: the candidate's ends
    c_se_reg <= {1'b0, c_sb_reg} + {1'b0, c_sc_reg};
    c_re_reg <= {1'b0, c_rb_reg} + {1'b0, c_rc_reg};
    c_rc_m1_reg <= c_rc_reg - 32'd1;
    newly_reg <= eff_en_reg & ~enable_reg;

    // stage 4: the share rules and the collisions
    bad2_reg <= ((k_sb || k_sc) && c_se_reg > MAX_SLOTS) ||
        ((k_rb || k_rc) && ((c_rc_reg & c_rc_m1_reg) != 32'd0 || {1'b0, c_rc_reg} > CAP ||
            (c_rc_reg != 32'd0 && (c_rb_reg & c_rc_m1_reg) != 32'd0) || c_re_reg > CAP));
    conf_reg <= any_conf && enable_reg[wj_reg] && (k_id || k_sb || k_sc || k_rb || k_rc);
    en_conf_reg <= any_en_conf && (k_en || k_set);

    // stage 5: refused, or taken with its effects
    if (ph_reg[3]) begin
        err_reg <= !taken;
        if (taken) begin
            // JOBS = 1 takes only JOB_LEASE here (a fixed share, the engines' JOB_ID):
            // the rows stay constants
            if (JOBS > 1 && k_id) id_reg[wj_reg] <= nv_reg[7:0];
            if (JOBS > 1 && (k_sb || k_sc)) begin
                sbase_reg[wj_reg] <= c_sb_reg;
                scount_reg[wj_reg] <= c_sc_reg;
                send_reg[wj_reg] <= c_se_reg;
            end
            if (JOBS > 1 && (k_rb || k_rc)) begin
                rbase_reg[wj_reg] <= c_rb_reg;
                rcap_reg[wj_reg] <= c_rc_reg;
                rend_reg[wj_reg] <= c_re_reg;
            end
            if (JOBS > 1 && k_rr) rrec_reg[wj_reg] <= nv_reg[13:0];
            if (k_ls) lease_reg[wj_reg] <= nv_reg;
            if (JOBS > 1 && k_ow) owner_reg[wj_reg] <= nv_reg;
            if (JOBS > 1 && (k_en || k_set || k_clr)) begin
                enable_reg <= eff_en_reg;
                carve_reg <= eff_en_reg ^ enable_reg;
            end
            if (JOBS > 1 && (k_rb || k_rc || k_rr)) begin
                carve_reg <= JOB_ONE << wj_reg;
            end
        end
    end

    // the free queue: ranges to free, one per clock, the mask the clock after
    src_valid_reg <= 1'b0;
    if (old_valid_reg) begin
        old_valid_reg <= 1'b0;
        src_valid_reg <= 1'b1;
        src_base_reg <= old_base_reg;
        src_end_reg <= old_end_reg;
    end else if (fq_reg != {JOBS{1'b0}}) begin
        src_valid_reg <= 1'b1;
        src_base_reg <= sbase_reg[fq_low];
        src_end_reg <= send_reg[fq_low];
    end
    for (q = 0; q < AGG_MAX_SLOTS; q = q + 1) begin
        slot_free_reg[q] <= src_valid_reg && q[7:0] >= {1'b0, src_base_reg} && q[7:0] < src_end_reg;
    end
    fq_reg <= fq_next;
    if (taken && (k_id || k_sb || k_sc) && enable_reg[wj_reg]) begin
        // the range before the write (the queue frees the one after)
        old_valid_reg <= 1'b1;
        old_base_reg <= sbase_reg[wj_reg];
        old_end_reg <= send_reg[wj_reg];
    end

    if (JOBS == 1 && id_load) begin
        id_reg[0] <= (id_reg[0] & ~wmask[7:0]) | (wr_data[7:0] & wmask[7:0]);
    end

    if (rst) begin
        ph_reg <= 5'd0;
        err_reg <= 1'b0;
        enable_reg <= RST_JOB_ENABLE[JOBS-1:0];
        fq_reg <= {JOBS{1'b0}};
        old_valid_reg <= 1'b0;
        src_valid_reg <= 1'b0;
        slot_free_reg <= {AGG_MAX_SLOTS{1'b0}};
        carve_reg <= {JOBS{1'b0}};
        for (k = 0; k < JOBS; k = k + 1) begin
            id_reg[k] <= RST_JOB_ID[7:0];
            sbase_reg[k] <= RST_JOB_SLOT_BASE[6:0];
            scount_reg[k] <= MAX_SLOTS[6:0];
            send_reg[k] <= MAX_SLOTS;
            rbase_reg[k] <= RST_JOB_RPL_BASE;
            rcap_reg[k] <= CAP[31:0];
            rend_reg[k] <= CAP;
            rrec_reg[k] <= REC_MAX[13:0];
            lease_reg[k] <= RST_JOB_LEASE;
            owner_reg[k] <= RST_JOB_OWNER;
        end
    end
end

endmodule

`resetall
`default_nettype wire
