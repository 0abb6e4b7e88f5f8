/* SPDX-License-Identifier: MIT
 *
 * si5324.c - the Si5324 set-up sequence of the SUME reference designs.
 *
 * What is written, and why, is taken from reading the NetFPGA SUME reference
 * firmware (NetFPGA-SUME-live, projects/reference_switch/sw/embedded/src/
 * iic_si5324.c, config_SI5324(), and iic_config.h for the bus layout); the
 * code here is this project's own. The Si5324 sits behind a PCA9548 I2C
 * switch (address 0x74) on its channel 4 (control byte 0x10), at address
 * 0x68. The chip runs free from its 114.285 MHz crystal and is set to
 *
 *   fout = fxtal * N2_HS * N2_LS / (N31 * N1_HS * NC1_LS)
 *        = 114.285 MHz * 10 * 150000 / (30476 * 9 * 4) = 156.25 MHz
 *
 * (DCO 5.625 GHz, inside the 4.85-5.67 GHz band), then an internal
 * calibration (ICAL) is started. Register fields hold "divider - 1" for the
 * low-speed dividers and "divider - 4" in bits 7:5 for the high-speed ones.
 * Register numbers and meanings: Silicon Labs Si5324 datasheet / reference
 * manual (Si53xx Family Reference Manual). Not verified on a board here.
 */
#include "si5324.h"

#include "hal.h"

#define PCA9548_ADDR   0x74u  /* the SUME board's I2C switch */
#define PCA9548_CH_SI  0x10u  /* channel 4: Si5324 (and the DDR3 SPDs) */
#define SI5324_ADDR    0x68u
#define SI5324_REG_LOL 130u   /* LOL_INT (bit 0): the DSPLL is not locked */
#define SI5324_LOL_INT 0x01u

const struct si5324_step SI5324_STEPS[] = {
    /* route the I2C bus to the Si5324 */
    {PCA9548_ADDR, 1, {PCA9548_CH_SI}},
    /* regs 0-4: free run, clock always on; CKIN2 second priority; BWSEL 1;
       CKIN1 selected, outputs squelched during ICAL; automatic revertive,
       HIST_DEL 0x12 */
    {SI5324_ADDR, 6, {0, 0x54, 0xE4, 0x12, 0x15, 0x92}},
    /* regs 10-11: CKOUT1 on, CKOUT2 off; both clock inputs powered */
    {SI5324_ADDR, 3, {10, 0x08, 0x40}},
    /* reg 25: N1_HS = 9 (0xA0 = (9 - 4) << 5) */
    {SI5324_ADDR, 2, {25, 0xA0}},
    /* regs 31-33: NC1_LS = 4 (stored 3) */
    {SI5324_ADDR, 4, {31, 0x00, 0x00, 0x03}},
    /* regs 40-42: N2_HS = 10 ((10 - 4) << 5), N2_LS = 150000 (stored 0x249EF) */
    {SI5324_ADDR, 4, {40, 0xC2, 0x49, 0xEF}},
    /* regs 43-45: N31 = 30476 (stored 0x770B) */
    {SI5324_ADDR, 4, {43, 0x00, 0x77, 0x0B}},
    /* regs 46-48: N32 = 30476 (stored 0x770B) */
    {SI5324_ADDR, 4, {46, 0x00, 0x77, 0x0B}},
    /* reg 136: ICAL = 1, start the internal calibration with these settings */
    {SI5324_ADDR, 2, {136, 0x40}},
};

const unsigned SI5324_STEP_COUNT = sizeof SI5324_STEPS / sizeof SI5324_STEPS[0];

uint32_t si5324_configure(void)
{
    unsigned i;

    /* reset pulse on the GPO lines, as the reference firmware's IicInitPost()
       does, held for at least 1 us, then time for the parts to come out of
       reset before the first transaction */
    hal_i2c_gpo(0xFFu);
    hal_delay_us(SI5324_RESET_US);
    hal_i2c_gpo(0x00u);
    hal_delay_us(SI5324_SETTLE_US);
    for (i = 0; i < SI5324_STEP_COUNT; i++) {
        const struct si5324_step *s = &SI5324_STEPS[i];
        if (hal_i2c_write(s->addr7, s->bytes, s->len) != 0)
            return 1u + i;
    }
    return 0;
}

uint32_t si5324_wait_lock(void)
{
    const uint8_t reg = SI5324_REG_LOL;
    uint8_t v = 0;
    unsigned n;

    for (n = 0; n < SI5324_LOCK_POLLS; n++) {
        hal_delay_us(SI5324_POLL_US);
        if (hal_i2c_read(SI5324_ADDR, &reg, 1u, &v, 1u) != 0)
            return SI5324_LOL_UNREAD;
        if ((v & SI5324_LOL_INT) == 0u)
            return SI5324_LOCKED;
    }
    return SI5324_NO_LOCK;
}
