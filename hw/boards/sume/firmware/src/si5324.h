/* SPDX-License-Identifier: MIT
 *
 * si5324.h - program the SUME board's Si5324 jitter attenuator so that it
 * drives the 156.25 MHz 10G transceiver reference clock (xphy_refclk).
 */
#ifndef NRL_SI5324_H
#define NRL_SI5324_H

#include <stdint.h>

/* One I2C write transaction of the set-up sequence. */
struct si5324_step {
    uint8_t addr7;      /* 7-bit I2C address */
    uint8_t len;        /* bytes in `bytes` */
    uint8_t bytes[6];   /* for the Si5324: first register, then its data (auto-increment) */
};

/* The sequence, in order (docs/board_uart.md, "Si5324 set-up"). */
extern const struct si5324_step SI5324_STEPS[];
extern const unsigned SI5324_STEP_COUNT;

/* Release the PCA9548 I2C switch from reset, then play SI5324_STEPS.
 * Returns 0 on success, else 1 + the index of the first step not acknowledged
 * (the identity reply reports it as the clock status). */
uint32_t si5324_configure(void);

#endif /* NRL_SI5324_H */
