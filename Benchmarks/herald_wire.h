/* herald_wire.h - the parts of Protocols/wire.md that the C measuring tools share (peer_herald.c,
 * relay_limit.c): frame types, the header, and little-endian fields read and written byte by byte. */
#ifndef HERALD_WIRE_H
#define HERALD_WIRE_H
#include <stdint.h>

enum { HELLO = 0x01, POST = 0x02, SUBSCRIBE = 0x03, WELCOME = 0x81, NOTIFY = 0x82, ACK = 0x83, DROPPED = 0x84,
       ERROR = 0x85 };
#define HEADER 6        /* length(4) type(1) flags(1); length counts type, flags and body */
#define NOTIFY_FIXED 32 /* sequence(8) time(8) pid(4) uid(4) gid(4) subscription(4), then name str8 */

static inline void put_u16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static inline void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#endif
