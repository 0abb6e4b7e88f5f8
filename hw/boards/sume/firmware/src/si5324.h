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

/* Reset pulse and waits (microseconds): the reset held SI5324_RESET_US (>= 1 us),
 * then SI5324_SETTLE_US before the first I2C access; after the last step the
 * LOL flag is polled every SI5324_POLL_US for at most SI5324_LOCK_POLLS times. */
#define SI5324_RESET_US   10u
#define SI5324_SETTLE_US  20000u
#define SI5324_POLL_US    10000u
#define SI5324_LOCK_POLLS 300u

/* Loss-of-lock status (the identity reply's LOL field). */
#define SI5324_LOCKED     0u  /* LOL_INT clear: the 156.25 MHz clock is locked */
#define SI5324_NO_LOCK    1u  /* LOL_INT still set after the polls */
#define SI5324_LOL_UNREAD 2u  /* not read: a set-up step or the read was not acknowledged */

/* Pulse the PCA9548 I2C switch's reset, wait, play SI5324_STEPS. Returns 0 on
 * success, else 1 + the index of the first step not acknowledged (the
 * identity reply's clock status). */
uint32_t si5324_configure(void);

/* After a successful si5324_configure(): poll the Si5324's LOL_INT (register
 * 130, bit 0) until it clears or SI5324_LOCK_POLLS polls have passed. Returns
 * SI5324_LOCKED, SI5324_NO_LOCK or SI5324_LOL_UNREAD. */
uint32_t si5324_wait_lock(void);

#endif /* NRL_SI5324_H */
